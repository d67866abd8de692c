/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-teardown.c: step 10 of the design: leave nothing behind, on every exit path. One list, in dependency
 * order, every step idempotent: the normal path runs the processes' part from job_collect() (the payload
 * and the sidecars must be stopped before what they leave is read) and the rest after signing; `pond-run
 * --cleanup` (the unit's ExecStopPost, after a supervisor that may have died anywhere, even by SIGKILL)
 * runs the same list with every sidecar and every provider assumed. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "job.h"

#define RUNTIME_DELETE_USEC (30ULL * 1000 * 1000)

/* The scope first: whatever the runtime left running (runsc's gofer) dies with it, and delete then only
 * removes state instead of waiting for a sandbox to answer. */
static int stop_scope(Job *j) {
        /* No bus: nothing was started by this supervisor (or --cleanup could not connect, and said so). */
        return j->bus ? scope_stop(j->bus, j->paths.scope) : 0;
}

/* As the subreaper pond-run inherited the runtime's helpers (runsc's gofer): their zombies would look alive
 * to the runtime's delete, which then waits for them to stop. */
static int reap_orphans(Job *j) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        return 0;
}

/* Unmounts (lazily, deepest first) whatever is mounted at or below dir: what a runtime killed half-way
 * left there (runc's runc.XXXXXX bind mount of its cloned binary). */
static int unmount_below(const char *dir) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_strv_free_ char **points = NULL;
        _cleanup_free_ char *line = NULL;
        size_t n = 0, len = strlen(dir);
        int r = 0;

        if (!f)
                return -errno;
        while (getline(&line, &n, f) > 0) {
                char mp[4096];

                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT ...: pond's paths have no characters mountinfo escapes. */
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || strncmp(mp, dir, len) != 0 ||
                    (mp[len] != 0 && mp[len] != '/'))
                        continue;
                if (strv_push(&points, strdup(mp)) < 0)
                        return -ENOMEM;
        }
        for (size_t i = strv_length(points); i > 0; i--)
                if (umount2(points[i - 1], MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                        r = log_debug_errno(errno, "Cannot unmount %s: %m", points[i - 1]);
        return r;
}

/* `runc delete --force` can exit 0 and leave its state directory (EBUSY on a bind mount of its own): the
 * state is checked to be gone, and what is left is unmounted and removed. */
static int remove_state_dir(const RuntimeJob *rj) {
        _cleanup_free_ char *dir = NULL;
        int r;

        if (asprintf(&dir, "%s/%s", rj->state_root, rj->container_id) < 0)
                return -ENOMEM;
        if (access(dir, F_OK) < 0)
                return 0;
        log_warning("The runtime left %s behind: unmounting and removing it.", dir);
        r = unmount_below(dir);
        if (r < 0)
                return r;
        return rm_rf_at(AT_FDCWD, dir);
}

static int delete_container(const RuntimeProvider *p, const JobPaths *paths) {
        _cleanup_strv_free_ char **argv = NULL;
        RuntimeJob rj = { .state_root = paths->runtime_root, .container_id = paths->container };
        int r;

        /* No state: nothing to delete, and no runtime to start for it. */
        if (p->has_state(&rj)) {
                r = p->delete_argv(&rj, &argv);
                if (r < 0)
                        return r;
                r = runtime_exec(argv, RUNTIME_DELETE_USEC);
                if (r != 0)
                        return r < 0 ? r : -EIO;
                /* Its exit status is not enough: a state directory the runtime keeps must be gone. */
                if (p->has_state == runtime_state_dir_exists) {
                        r = remove_state_dir(&rj);
                        if (r < 0)
                                return r;
                }
        }
        if (p->forget)
                p->forget(&rj);
        return 0;
}

/* The job's provider; or, when the supervisor died before it knew (or after it forgot) it, every one. */
static int delete_containers(Job *j) {
        int r, ret = 0;

        if (j->input.provider)
                return delete_container(j->input.provider, &j->paths);
        RUNTIME_PROVIDER_FOREACH(p) {
                r = delete_container(p, &j->paths);
                if (r < 0) {
                        log_warning_errno(r, "%s delete of %s failed: %m", p->name, j->paths.container);
                        ret = ret ?: r;
                }
        }
        return ret;
}

static int remove_cgroups(Job *j) {
        return cgroup_remove_leftovers(j->paths.scope_cgroup);
}

static int remove_network(Job *j) {
        job_network_stop(&j->network); /* a set-up still running (a failure before the create) ends first */
        return job_net_teardown(j->paths.id, j->paths.rundir);
}

static int remove_staging(Job *j) {
        return stage_teardown(j->paths.run);
}

static int remove_image(Job *j) {
        return image_cleanup(j->paths.run);
}

/* A bundle job's extracted checkout: only the job's own, staged copy ever read it. */
static int remove_checkout(Job *j) {
        return rm_rf_at(AT_FDCWD, j->paths.checkout);
}

static int remove_run_dir(Job *j) {
        _cleanup_free_ char *parent = NULL;
        _cleanup_close_ int pfd = -EBADF;
        const char *base = strrchr(j->paths.run, '/');

        /* The console's relay socket lives beside the run directory (paths.h); normally gone already. */
        if (unlink(j->paths.console) < 0 && errno != ENOENT)
                return -errno;
        parent = strndup(j->paths.run, (size_t) (base - j->paths.run));
        if (!parent)
                return -ENOMEM;
        pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return errno == ENOENT ? 0 : -errno;
        return rm_rf_at(pfd, base + 1);
}

typedef struct TeardownStep {
        const char *what;
        int (*run)(Job *j);
        bool files;     /* removes files: a failure leaves this and the rest for the next attempt */
        bool counts;    /* a failure makes the teardown fail (else it is only logged) */
} TeardownStep;

enum { TEARDOWN_PROCESSES = 4 }; /* the steps before this one stop what runs */

static const TeardownStep steps[] = {
        { "stop the payload's scope",            stop_scope,        false, true  },
        { "reap the runtime's helpers",          reap_orphans,      false, false },
        /* the payload is gone: the sidecars wind down and write their totals, which the result reports */
        { "begin stopping the sidecars",         job_sidecars_stop_begin, false, false },
        { "stop the sidecars",                   job_sidecars_stop, false, false },
        /* From here on after signing: nothing runs any more, and what is left is state. The runtime's delete
         * (runc 5-10 ms, runsc 15-25) is no longer between the payload's end and its result. */
        { "delete the container",                delete_containers, false, false },
        { "remove the payload's cgroups",        remove_cgroups,    false, false },
        { "release the job's CPUs",              job_resview_release, false, false },
        { "remove the job's network",            remove_network,    true,  true  },
        { "unmount the job's staging",           remove_staging,    true,  true  },
        { "unmount the job's home",              job_home_teardown, true,  true  },
        { "remove the job's root filesystem",    remove_image,      true,  true  },
        { "remove the extracted checkout",       remove_checkout,   true,  true  },
        { "remove the job's user namespace",     job_userns_remove, true,  true  },
        { "remove the job's runtime directory",  remove_run_dir,    true,  true  },
        /* last, and only when all of the above is gone: no process, mount or file of the job's uid range
         * may remain when the range goes to another job (uid_lease_release() checks /proc itself) */
        { "release the job's host uid range",    job_userns_release, true, true  },
        /* the job's claim on the worker's ceiling, once nothing of it is left */
        { "release the job's admission lease",   job_admission_release, false, true },
};

static int run_steps(Job *j, unsigned end) {
        int r, ret = 0;

        for (; j->teardown_next < end; j->teardown_next++) {
                const TeardownStep *s = &steps[j->teardown_next];

                r = s->run(j);
                if (r >= 0)
                        continue;
                log_warning_errno(r, "Could not %s of %s: %m", s->what, j->paths.id);
                if (s->counts)
                        ret = ret ?: r;
                if (s->files)
                        break;  /* in dependency order: nothing below may go while this is still there */
        }
        return ret;
}

int job_teardown_processes(Job *j) {
        return run_steps(j, TEARDOWN_PROCESSES);
}

int job_teardown(Job *j) {
        int r = run_steps(j, TEARDOWN_PROCESSES);
        int k = run_steps(j, ELEMENTSOF(steps));
        return r < 0 ? r : k;
}
