/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-create.c: step 5 of the design: from a written bundle to a created container, whose init waits for
 * job_start(). The runtime's create step is exec'd by a child that systemd has already moved into
 * pond-ID.scope, so the container's cgroup nests below the scope, while this supervisor stays in the job's
 * service: an OOM or fork bomb in the payload cannot reach the process that must clean up and sign. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "job.h"
#include "oci/oci.h"

/* The job's output: its log in the spool, fed from two pipes the runtime's create step inherits. */
static int open_output(Job *j) {
        _cleanup_close_ int log_dfd = -EBADF;
        JobRuntime *rt = &j->runtime;
        int r;

        if (mkdir(j->paths.log, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create %s: %m", j->paths.log);
        log_dfd = open(j->paths.log, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* 0755 whatever the umask: the spool entry above it is what keeps others out. */
        if (log_dfd < 0 || fchmod(log_dfd, 0755) < 0)
                return -errno;
        r = output_log_open(log_dfd, j->paths.id, j->input.spec->limits.output_bytes, true, &rt->log);
        if (r < 0)
                return log_error_errno(r, "Cannot open the job's log: %m");
        rt->log_open = true;
        if (pipe2(rt->out_pipe, O_CLOEXEC) < 0 || pipe2(rt->err_pipe, O_CLOEXEC) < 0)
                return -errno;
        return 0;
}

static int runtime_argv(Job *j, char ***ret_create) {
        _cleanup_free_ char *pid_file = NULL, *log_file = NULL, *panic_log = NULL;
        RuntimeJob rj = { .state_root = j->paths.runtime_root, .bundle = j->paths.bundle,
                          .container_id = j->paths.container, .host_network = j->input.resolved->net == NET_OPEN,
                          .netns = j->network.up ? j->network.net.netns_path : NULL,
                          .console_socket = job_console_runtime_socket(j),
                          .init_channel = j->console.init.on &&
                                          j->input.provider->init_channel == RUNTIME_INIT_CHANNEL_FD };
        int r;

        if (asprintf(&pid_file, "%s/init.pid", j->paths.run) < 0 ||
            asprintf(&log_file, "%s/" JOB_RUNTIME_LOG, j->paths.run) < 0 ||
            asprintf(&panic_log, "%s/" JOB_RUNTIME_PANIC_LOG, j->paths.run) < 0)
                return -ENOMEM;
        rj.pid_file = pid_file;
        rj.log_file = log_file;
        rj.panic_log = panic_log;
        r = j->input.provider->create_argv(&rj, ret_create);
        if (r >= 0)
                r = j->input.provider->start_argv(&rj, &j->runtime.start_argv);
        return r;
}

/* The child that becomes the runtime's create step: it waits until systemd has moved it into the scope.
 * Nothing but stdio (a stdin job's pipe, the init's channel under runsc, or /dev/null; the output pipes),
 * the go pipe and the init's channel as fd 3 (channel_fd >= 0, runc) reaches it. */
static int fork_create(JobRuntime *rt, char **argv, const struct rlimit *limits, const int *resources,
                       int stdin_fd, int channel_fd, int *ret_go_fd) {
        _cleanup_close_ int go_read = -EBADF, go_write = -EBADF;
        int go[2], r;

        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        go_read = go[0];
        go_write = go[1];
        r = safe_fork_full("(pond-create)", (const int[3]) { stdin_fd, rt->out_pipe[1], rt->err_pipe[1] },
                           (const int[2]) { go_read, channel_fd }, channel_fd >= 0 ? 2 : 1,
                           FORK_EXEC_FLAGS | FORK_REARRANGE_STDIO, &rt->create);
        if (r < 0)
                return r;
        if (r == 0) {
                char c;

                if (read(go_read, &c, 1) != 1)
                        _exit(127); /* the supervisor gave up: never run outside the scope */
                /* --preserve-fds 1: fd 3, open across the exec (dup2 clears close-on-exec) */
                if (channel_fd >= 0 && (channel_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(channel_fd, 3)) < 0)
                        _exit(127);
                /* lowering needs no privilege; a limit that cannot be set is a job that does not run */
                for (size_t i = 0; limits && i < OCI_JOB_RLIMITS; i++)
                        if (setrlimit(resources[i], &limits[i]) < 0)
                                _exit(127);
                runtime_execv(argv);
        }
        rt->out_pipe[1] = safe_close(rt->out_pipe[1]);
        rt->err_pipe[1] = safe_close(rt->err_pipe[1]);
        *ret_go_fd = TAKE_FD(go_write);
        return 0;
}

static int wait_create(JobRuntime *rt) {
        siginfo_t si;
        int r;

        r = pidref_wait_or_kill(&rt->create, RUNTIME_STEP_USEC, &si);
        if (r < 0)
                return r;
        return r == 0 && siginfo_exited_ok(&si) ? 0 : -EIO;
}

/* The scope around the waiting child, exactly where the bundle says the payload's cgroup is. */
static int start_scope(Job *j) {
        const ResolvedPolicy *res = j->input.resolved;
        ScopeLimits limits = { res->memory_bytes, res->cpus_milli, res->host_pids_limit };
        _cleanup_free_ char *desc = NULL;
        int r;

        if (asprintf(&desc, "pond job %s payload", j->paths.id) < 0)
                return -ENOMEM;
        r = scope_start(j->bus, j->paths.scope, j->runtime.create.pid, &limits, job_bound_service(j), desc);
        if (r < 0) {
                log_error_errno(r, "Cannot create the transient scope %s: %m", j->paths.scope);
                return job_fail(j, r, "systemd did not create the job's scope %s (%s; see the journal of %s)",
                                j->paths.scope, strerror(-r), j->paths.service);
        }
        r = unit_cgroup_path(j->bus, j->paths.scope, &j->runtime.scope_cgroup);
        if (r < 0 || !streq(j->runtime.scope_cgroup, j->paths.scope_cgroup))
                return log_error_errno(r < 0 ? r : EXDEV, "Scope %s is not at %s, where the payload's cgroup was "
                                       "configured: refusing to run it elsewhere.", j->paths.scope,
                                       j->paths.scope_cgroup);
        return 0;
}

/* On v1 the memcgs (their oom_kill counts) and the usage counters (job-usage.c) would go with the payload,
 * before job_collect() reads them: a sleeping child, never the OOM killer's choice, holds the payload's
 * memcg, cpuacct, blkio and pids cgroups (and so the scope's) until then. It is in no hierarchy a kill
 * enumerates: systemd's KillUnit and the runtime's kill (runc's devices cgroup) do not see it. */
static const char *const pin_controllers[] = { "memory", CGROUP_USAGE_V1_CONTROLLERS }; /* as the late pin */
#define PIN_CONTROLLERS ELEMENTSOF(pin_controllers)
enum { PIN_PLACED = 1 << 0, PIN_IN_PIDS = 1 << 1 }; /* the pin's report, one byte */

/* The payload's v1 cgroup directories and their cgroup.procs, named before the fork. */
typedef struct PinPlaces {
        char *dirs[PIN_CONTROLLERS];
        char *procs[PIN_CONTROLLERS];
} PinPlaces;

static void pin_places_done(PinPlaces *p) {
        for (size_t i = 0; i < PIN_CONTROLLERS; i++) {
                free(p->dirs[i]);
                free(p->procs[i]);
        }
}

static int pin_places(const char *payload, PinPlaces *ret) {
        for (size_t i = 0; i < PIN_CONTROLLERS; i++)
                if (cgroup_v1_path(CGROUP_ROOT, pin_controllers[i], payload, &ret->dirs[i]) < 0 ||
                    asprintf(&ret->procs[i], "%s/cgroup.procs", ret->dirs[i]) < 0)
                        return -ENOMEM;
        return 0;
}

/* mkdir -p below the hierarchy, without allocating: systemd realizes the slice and the scope only in some
 * hierarchies (blkio not, here), and the runtime makes what is missing, as this does. */
static void mkdir_parents(const char *dir) {
        char buf[PATH_MAX];
        size_t len = strlen(dir);

        if (len >= sizeof buf)
                return;
        memcpy(buf, dir, len + 1);
        for (char *p = buf + sizeof(CGROUP_ROOT); (p = strchr(p + 1, '/')); ) {
                *p = '\0';
                (void) mkdir(buf, 0755);
                *p = '/';
        }
        (void) mkdir(buf, 0755);
}

static bool write_self(const char *procs) {
        int fd = open(procs, O_WRONLY | O_CLOEXEC);
        bool ok = fd >= 0 && write(fd, "0", 1) == 1; /* v1: 0 is the writer */

        if (fd >= 0)
                close(fd);
        return ok;
}

/* In the pin, before its exec (only system calls: pond-run has threads, the input hash): into the payload's
 * cgroups, made here when the runtime has not made them yet; the report says where it went. */
static void pin_place_self(const PinPlaces *places, int report_fd) {
        unsigned char report = 0;

        for (size_t i = 0; i < PIN_CONTROLLERS; i++)
                mkdir_parents(places->dirs[i]);
        if (write_self(places->procs[0])) {
                report = PIN_PLACED;
                for (size_t i = 1; i < PIN_CONTROLLERS; i++)
                        if (write_self(places->procs[i]) && streq(pin_controllers[i], "pids"))
                                report |= PIN_IN_PIDS;
        }
        (void) write(report_fd, &report, 1);
        close(report_fd);
}

/* The pin, forked. With places it puts itself there while the runtime creates the container: a v1 move
 * waits for an RCU grace period (cgroup_threadgroup_rwsem) when no other move ran just before, 5-19 ms,
 * which a move after the create step added to every launch (docs/benchmarks.md). */
static int pin_fork(Job *j, const PinPlaces *places) {
        _cleanup_close_ int report_read = -EBADF, report_write = -EBADF;
        int pipe_fds[2], r;

        if (places) {
                if (pipe2(pipe_fds, O_CLOEXEC) < 0)
                        return -errno;
                report_read = pipe_fds[0];
                report_write = pipe_fds[1];
        }
        r = safe_fork_full("(pond-oom-pin)", NULL, &report_write, places ? 1 : 0, FORK_EXEC_FLAGS,
                           &j->runtime.oom_pin);
        if (r < 0)
                return r;
        if (r == 0) {
                _cleanup_close_ int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
                if (fd >= 0)
                        (void) write_all(fd, "-1000", 5);
                if (places)
                        pin_place_self(places, report_write);
                /* A fork of pond-run holds a copy-on-write image of it (page tables, the pages either side
                 * writes later) for the whole job: pond-run and the fork measured 5.9 MiB of PSS together, with
                 * sleep(1) as the pin 5.4. It holds the cgroups as well; the parent death signal and
                 * oom_score_adj survive the exec. */
                execv("/usr/bin/sleep", (char *[]) { (char *) "pond-oom-pin", (char *) "infinity", NULL });
                for (;;)
                        pause();
        }
        j->runtime.pin_report = TAKE_FD(report_read);
        return 0;
}

/* Before the create step is let go, where the runtime keeps a payload cgroup that exists (v1 only: on v2
 * the pin goes to a leaf of the scope after the create, below). A failure here only leaves the pin to
 * pin_oom_counters(), as before. */
static void pin_oom_counters_early(Job *j) {
        _cleanup_(pin_places_done) PinPlaces places = {};
        _cleanup_free_ char *payload = NULL;
        int r;

        if (!j->input.provider->payload_cgroup_may_exist || !cgroup_layout_has_v1(cgroup_layout_detect(CGROUP_ROOT)))
                return;
        if (asprintf(&payload, "%s/payload", j->paths.scope_cgroup) < 0 || pin_places(payload, &places) < 0)
                return;
        r = pin_fork(j, &places);
        if (r < 0)
                log_debug_errno(r, "Cannot fork the OOM counter pin before the create step: %m");
}

/* The report of a pin that placed itself, once it has made it (it writes before its exec). */
static bool pin_placed(Job *j) {
        unsigned char report = 0;
        ssize_t n;

        if (j->runtime.pin_report < 0)
                return false;
        n = read(j->runtime.pin_report, &report, 1);
        j->runtime.pin_report = safe_close(j->runtime.pin_report);
        if (n != 1 || !(report & PIN_PLACED))
                return false;
        j->runtime.pin_in_pids = report & PIN_IN_PIDS;
        return true;
}

static void pin_oom_counters(Job *j, const char *payload) {
        const char *pinned;
        int r;

        if (pin_placed(j))
                return;
        if (j->runtime.oom_pin.pid <= 0) {
                r = pin_fork(j, NULL);
                if (r < 0) {
                        log_warning_errno(r, "Cannot fork the OOM counter pin: %m");
                        return;
                }
        }
        r = cgroup_oom_pin(payload, j->runtime.oom_pin.pid);
        if (r >= 0)
                pinned = payload;
        else {
                r = cgroup_oom_pin(j->paths.scope_cgroup, j->runtime.oom_pin.pid);
                pinned = j->paths.scope_cgroup;
        }
        if (r < 0) {
                /* cgroup v2: a leaf of the scope's own (it counts in the scope's pids.peak: one more). KillUnit
                 * reaches it there, so a cancelled or timed-out job's counters are read as long as the scope
                 * lasts; an ended or OOM-killed payload's are kept (docs/operations.md, "cgroup v2"). */
                if (cgroup_v2_attach_leaf(j->paths.scope_cgroup, CGROUP_LEAF_PIN, j->runtime.oom_pin.pid) >= 0) {
                        j->runtime.pin_in_pids = true;
                        return;
                }
                log_debug_errno(r, "No v1 memcg to pin (%m): the counters are read while the scope exists.");
                sigkill_wait(&j->runtime.oom_pin);
                return;
        }
        /* The usage counters too (job-usage.c): CPU, IO and tasks, in the same cgroup. */
        j->runtime.pin_in_pids = cgroup_usage_pin(pinned, j->runtime.oom_pin.pid);
}

/* Both levels: the limit may be hit in the payload's own memcg or in the scope's. The notifications are
 * hints to read the counters (they also fire when a memcg is removed). */
static void watch_oom(Job *j) {
        _cleanup_free_ char *payload = NULL;

        if (asprintf(&payload, "%s/payload", j->paths.scope_cgroup) < 0)
                return;
        pin_oom_counters(j, payload);
        if (cgroup_oom_watch(j->paths.scope_cgroup, &j->runtime.oom_fds[0]) < 0 ||
            cgroup_oom_watch(payload, &j->runtime.oom_fds[1]) < 0)
                log_debug("No v1 memory OOM notification here; relying on the OOM counters.");
}

static int read_init_pid(Job *j) {
        _cleanup_free_ char *pid_file = NULL, *buf = NULL;
        int pid, r;

        if (asprintf(&pid_file, "%s/init.pid", j->paths.run) < 0)
                return -ENOMEM;
        r = read_full_file(pid_file, 64, &buf, NULL);
        if (r < 0)
                return r;
        if (sscanf(buf, "%d", &pid) != 1 || pid <= 1)
                return -EINVAL;
        /* It must be ours (re-parented to this subreaper), or waiting for it would be meaningless. */
        if (waitid(P_PID, (id_t) pid, &(siginfo_t) {}, WEXITED | WNOHANG | WNOWAIT) < 0)
                return -ECHILD;
        j->runtime.init_pid = pid;
        return 0;
}

static int log_create_failure(Job *j, int r) {
        _cleanup_free_ char *log_file = NULL, *msg = NULL;

        if (asprintf(&log_file, "%s/" JOB_RUNTIME_LOG, j->paths.run) >= 0)
                (void) read_full_file(log_file, 16 * 1024, &msg, NULL);
        job_end(j, JOB_END_RUNTIME_FAILED, r,
                "runtime failed (%s): %s could not create the container; its log is in the journal of %s",
                j->input.provider->name, j->input.provider->name, j->paths.service);
        return log_error_errno(r, "The runtime %s could not create the container: %s", j->input.provider->name,
                               msg ?: "(no message)");
}

int job_create_in_scope(Job *j) {
        _cleanup_strv_free_ char **create = NULL;
        _cleanup_close_ int go = -EBADF, stdin_fd = -EBADF;
        struct rlimit limits[OCI_JOB_RLIMITS];
        int resources[OCI_JOB_RLIMITS];
        int r;

        r = open_output(j);
        if (r >= 0)
                r = job_console_prepare(j, &stdin_fd);
        if (r >= 0)
                r = job_init_prepare(j);
        if (r >= 0)
                r = runtime_argv(j, &create);
        if (r < 0)
                return r;
        /* the job's rlimits, where config.json does not carry them (oci.h says why) */
        oci_job_rlimits(j->input.resolved, resources, limits);
        sd_notify(false, "STATUS=launching");
        if (j->console.init.on && j->input.provider->init_channel == RUNTIME_INIT_CHANNEL_STDIN) {
                if (stdin_fd >= 0)
                        return log_error_errno(EINVAL, "The init's channel cannot be its stdin: the payload's is.");
                stdin_fd = j->console.init.child_fd;
                j->console.init.child_fd = -EBADF;
        }
        r = fork_create(&j->runtime, create, j->userns.on ? limits : NULL, resources, stdin_fd,
                        j->console.init.child_fd, &go);
        if (r < 0)
                return log_error_errno(r, "Cannot fork the runtime: %m");
        stdin_fd = safe_close(stdin_fd); /* the payload's end: only the create step (and the container) hold it */
        job_init_handed_over(j);
        r = start_scope(j);
        if (r < 0)
                return r;
        /* cgroup v2: the runtime enables the controllers of the scope for the payload's cgroup, which the
         * kernel refuses while a process (the create step itself) is in the scope: it moves to a leaf first.
         * Other layouts: nothing to do (-ENOENT). */
        r = cgroup_v2_attach_leaf(j->paths.scope_cgroup, CGROUP_LEAF_RUNTIME, j->runtime.create.pid);
        if (r < 0 && r != -ENOENT)
                return log_error_errno(r, "Cannot move the runtime's create step into %s/%s: %m",
                                       j->paths.scope_cgroup, CGROUP_LEAF_RUNTIME);
        /* The job's network, made meanwhile (job_network_begin()): the container goes nowhere without it. */
        r = job_network_finish(j);
        if (r < 0)
                return r;
        pin_oom_counters_early(j);
        if (write(go, "g", 1) != 1)
                return -errno;
        r = wait_create(&j->runtime);
        if (r < 0)
                return log_create_failure(j, r);
        r = job_console_receive(j);
        if (r < 0)
                return r;
        watch_oom(j);
        r = read_init_pid(j);
        if (r < 0)
                return log_error_errno(r, "Cannot find the container's init: %m");
        return 0;
}

void job_runtime_done(JobRuntime *rt) {
        sigkill_wait(&rt->create); /* normally reaped already (wait_create, job_collect) */
        sigkill_wait(&rt->oom_pin); /* normally killed by job_collect() once the counters are read */
        safe_close(rt->pin_report);
        if (rt->log_open)
                output_log_close(&rt->log);
        for (int i = 0; i < 2; i++) {
                safe_close(rt->out_pipe[i]);
                safe_close(rt->err_pipe[i]);
                safe_close(rt->oom_fds[i]);
        }
        free(rt->scope_cgroup);
        strv_freep(&rt->start_argv);
        *rt = (JobRuntime) JOB_RUNTIME_NULL;
}
