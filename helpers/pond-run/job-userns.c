/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-userns.c: the job's own host uid range (providers that run the payload on the host kernel: runc).
 * Leased once the run directory exists (and the sidecars are starting), before the job's network
 * namespace, workspace and root; the job's user namespace is created owned by the range's first uid and
 * pinned in the run directory; the network namespace is made inside it, the checkout, the root and the
 * home are shown through it. Given back last in the teardown, and only once
 * /proc shows no process of the range. docs/threat-model.md, "One host uid range per job". */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "basic/dirs.h"
#include "basic/log.h"
#include "job.h"
#include "oci/oci.h"

static int lease_dir(char **ret) {
        return asprintf(ret, "%s/" UID_LEASE_DIR, pond_dir(POND_DIR_RUN)) < 0 ? -ENOMEM : 0;
}

bool job_userns_wanted(const Job *j) {
        /* Profile none is the explicit local opt-out: it shares the host's network, and with it the host's
         * sysfs, which a mount in a namespace of its own could not show. */
        return j->input.provider && j->input.provider->host_uid_range && j->input.resolved &&
               j->input.resolved->confined;
}

uid_t job_host_uid(const Job *j) {
        return j->userns.on ? j->userns.range.base + JOB_UID : JOB_UID;
}

gid_t job_host_gid(const Job *j) {
        return j->userns.on ? (gid_t) j->userns.range.base + JOB_GID : JOB_GID;
}

/* The runtime's steps run as root in the job's namespace (the range's first uid on the host): they must
 * be able to look up the bundle's mount sources, so the directories above them can be searched by anyone
 * (not read: the job ids below are not listed) and the job's directory by the range's group. tmpfiles
 * makes the two above 0711 at boot; set here again since mkdir_p() may have made them 0700 first. */
static int open_path_to_run_dir(const Job *j) {
        const char *dirs[] = { j->paths.rundir, NULL };
        _cleanup_free_ char *jobs = NULL;

        if (asprintf(&jobs, "%s/jobs", j->paths.rundir) < 0)
                return -ENOMEM;
        dirs[1] = jobs;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (chmod(dirs[i], 0711) < 0)
                        return -errno;
        if (chown(j->paths.run, 0, (gid_t) j->userns.range.base) < 0 || chmod(j->paths.run, 0710) < 0)
                return -errno;
        return 0;
}

int job_userns(Job *j) {
        _cleanup_free_ char *dir = NULL;
        JobUserns *u = &j->userns;
        int r;

        if (!job_userns_wanted(j))
                return 0;
        r = lease_dir(&dir);
        if (r < 0)
                return r;
        r = uid_lease_acquire(dir, j->paths.id, &u->range);
        if (r == -EBUSY)
                return job_fail(j, log_error_errno(r, "Cannot lease a host uid range: all %u are in use.",
                                                   UID_POOL_SLOTS),
                                "no host uid range is free (all %u are in use)", UID_POOL_SLOTS);
        if (r < 0)
                return job_fail(j, log_error_errno(r, "Cannot lease a host uid range: %m"),
                                "cannot lease a host uid range");
        u->leased = true;
        if (asprintf(&u->pin, "%s/userns", j->paths.run) < 0)
                return -ENOMEM;
        r = userns_create(u->pin, u->range.base, UID_RANGE_SIZE);
        if (r < 0)
                return job_fail(j, log_error_errno(r, "Cannot create the job's user namespace: %m"),
                                "cannot create the job's user namespace");
        u->fd = open(u->pin, O_RDONLY | O_CLOEXEC);
        if (u->fd < 0)
                return log_error_errno(errno, "Cannot open %s: %m", u->pin);
        r = open_path_to_run_dir(j);
        if (r < 0)
                return log_error_errno(r, "Cannot open the job's directory to its uid range: %m");
        u->on = true;
        log_info("Job %s runs as host uids %u-%u (user namespace pinned at %s).", j->paths.id,
                 (unsigned) u->range.base, (unsigned) (u->range.base + UID_RANGE_SIZE - 1), u->pin);
        return 0;
}

/* Teardown: the pin is in the run directory, which goes next. */
int job_userns_remove(Job *j) {
        _cleanup_free_ char *pin = NULL;

        if (asprintf(&pin, "%s/userns", j->paths.run) < 0)
                return -ENOMEM;
        j->userns.fd = safe_close(j->userns.fd);
        return userns_remove(pin);
}

/* Teardown, last: named by the job id alone, so the cleanup after a SIGKILL finds it too. */
int job_userns_release(Job *j) {
        _cleanup_free_ char *dir = NULL;
        int r = lease_dir(&dir);

        if (r >= 0)
                r = uid_lease_release(dir, j->paths.id);
        if (r >= 0)
                j->userns.leased = false;
        return r;
}

void job_userns_done(JobUserns *u) {
        free(u->pin);
        safe_close(u->fd);
        *u = (JobUserns) JOB_USERNS_NULL;
}
