/* supervise-finish.c: after the payload: record the outcome, remove the container and its scope, sign the
 * result, and leave nothing behind (also as `pond-run --cleanup`, the unit's ExecStopPost). */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>

#include "fileio.h"
#include "log.h"
#include "result.h"
#include "scope.h"
#include "supervise-launch.h"

#define RUNTIME_DELETE_USEC (30ULL * 1000 * 1000)

int job_delete_container(const RuntimeProvider *p, const JobPaths *paths) {
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
        }
        if (p->forget)
                p->forget(&rj);
        return 0;
}

static void reap_init(Job *j) {
        /* A failure before or during the loop may leave the container's init running: kill, then reap. */
        if (j->init_pid > 0 && j->exit_status < 0 && j->exit_signal == 0) {
                siginfo_t si = {};
                if (j->bus)
                        (void) scope_kill(j->bus, j->paths.scope);
                (void) kill(j->init_pid, SIGKILL);
                if (waitid(P_PID, (id_t) j->init_pid, &si, WEXITED) >= 0) {
                        j->exit_signal = si.si_code == CLD_EXITED ? 0 : si.si_status;
                        j->exit_status = si.si_code == CLD_EXITED ? si.si_status : -1;
                }
        }
        if (j->create_pid > 0) {
                (void) kill(j->create_pid, SIGKILL);
                (void) waitpid(j->create_pid, NULL, 0);
                j->create_pid = 0;
        }
}

int job_finish(Job *j, int r) {
        uint64_t ooms = 0;
        const char *status;
        int rc;

        reap_init(j);
        /* A notification the loop did not get to dispatch before it ended still counts. */
        for (int i = 0; i < 2; i++) {
                uint64_t n;
                if (j->oom_fds[i] >= 0 && read(j->oom_fds[i], &n, sizeof n) == (ssize_t) sizeof n)
                        j->oom_killed = true;
        }
        if (j->scope_cgroup && cgroup_oom_kills(j->scope_cgroup, &ooms) >= 0 && ooms > 0)
                j->oom_killed = true;
        /* The scope first: whatever the runtime left running (runsc's gofer) dies with it, and delete
         * then only removes state instead of waiting for a sandbox to answer. */
        if (j->bus && scope_stop(j->bus, j->paths.scope) < 0)
                log_warning("Could not stop %s; cleanup will retry.", j->paths.scope);
        /* As the subreaper we inherited the runtime's helpers (runsc's gofer): their zombies would look
         * alive to the runtime's delete, which then waits for them to stop. */
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        if (j->provider && job_delete_container(j->provider, &j->paths) < 0)
                log_warning("Could not delete container %s; cleanup will retry.", j->paths.container);
        if (j->egress_up && job_egress_stop(j->bus, &j->paths, &j->egress_stats) < 0)
                log_warning("Could not stop the egress proxy of %s; cleanup will retry.", j->id);
        if (j->broker_up && job_broker_stop(j->bus, &j->paths, &j->broker_stats) < 0)
                log_warning("Could not stop the broker of %s; cleanup will retry.", j->id);
        (void) cgroup_remove_leftovers(j->paths.scope_cgroup);
        if (j->input.started) {
                pthread_join(j->input.thread, NULL);
                j->input.started = false;
                if (j->input.r < 0) {
                        log_error_errno(j->input.r, "Cannot hash the job's input: %m");
                        j->input.hex[0] = 0;
                        r = r < 0 ? r : j->input.r;
                }
        }
        if (j->ended_usec == 0) {
                j->ended_usec = clock_usec(CLOCK_REALTIME);
                j->ended_mono = clock_usec(CLOCK_MONOTONIC);
        }
        status = r < 0 ? "failed" : j->cancelled ? "cancelled" : "completed";
        if (r < 0 && !j->reason)
                j->reason = strdup("pond could not run the job (see the journal of its unit)");
        rc = j->exit_status >= 0 ? j->exit_status : j->exit_signal > 0 ? 128 + j->exit_signal : AUDIT_NO_RC;
        audit_event(&j->audit, r < 0 ? POND_EVENT_FAILED : POND_EVENT_EXITED, rc,
                    "%s: rc %d, signal %d%s%s%s", status, j->exit_status, j->exit_signal,
                    j->timed_out ? ", timed out" : "", j->oom_killed ? ", OOM-killed" : "",
                    j->cancelled ? ", cancelled" : "");
        sd_notifyf(false, "STATUS=signing (%s)", status);
        if (job_write_result(j, status) < 0)
                return POND_RUN_EXIT_FAILED;
        return r < 0 ? POND_RUN_EXIT_FAILED : POND_RUN_EXIT_OK;
}

/* Everything below the job's runtime dir, in dependency order; an error leaves the rest for a retry. */
static int teardown_paths(const JobPaths *paths) {
        _cleanup_free_ char *parent = NULL;
        _cleanup_close_ int pfd = -EBADF;
        const char *base;
        int r;

        r = job_net_teardown(paths->id, paths->rundir);
        if (r < 0)
                return r;
        r = stage_teardown(paths->run);
        if (r < 0)
                return r;
        r = image_cleanup(paths->run);
        if (r < 0)
                return r;
        /* A bundle job's extracted checkout: only the job's own, staged copy ever read it. */
        _cleanup_free_ char *checkout = job_bundle_checkout(paths);
        if (!checkout)
                return -ENOMEM;
        r = rm_rf_at(AT_FDCWD, checkout);
        if (r < 0)
                return r;
        base = strrchr(paths->run, '/');
        parent = strndup(paths->run, (size_t) (base - paths->run));
        if (!parent)
                return -ENOMEM;
        pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return errno == ENOENT ? 0 : -errno;
        return rm_rf_at(pfd, base + 1);
}

int job_teardown(Job *j) {
        int r = teardown_paths(&j->paths);
        if (r < 0)
                log_warning_errno(r, "Could not remove %s: %m; cleanup will retry.", j->paths.run);
        return r;
}
