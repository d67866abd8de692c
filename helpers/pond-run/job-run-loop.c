/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-run-loop.c: phase 7 of the design, while the job runs: drain its stdout/stderr into the log,
 * enforce the wall clock, honour cancellation (SIGTERM from `systemctl stop`) and the cost ceiling (the
 * broker's unit changes, job-broker.c), notice the runtime dying under the payload (job-runtime-failed.c)
 * and the container's init exiting. */
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "basic/log.h"
#include "job.h"
#include "scope/cgroup.h"

/* A gVisor sandbox is several host processes (sentry, gofer, the systrap stubs, pooled and kept): one of
 * them killed from outside wedges the sandbox, which then runs to its wall clock. The payload's task set is
 * sampled; a process that leaves it while the sandbox (the init) lives ends the job with a reason. */
#define SANDBOX_WATCH_USEC (1000ULL * 1000)
#define SANDBOX_GRACE_USEC (2000ULL * 1000)
#define SANDBOX_WATCH_MAX 256

typedef struct Loop {
        Job *job;
        sd_event *event;
        int open_streams;
        bool init_exited;
        pid_t tasks[SANDBOX_WATCH_MAX];
        size_t n_tasks;
        bool tasks_known;
        pid_t lost;                     /* a process that left the sandbox, waiting out the grace period */
} Loop;

static void maybe_exit(Loop *l) {
        /* Exit once init is gone and the pipes are drained: nothing printed before the end is lost. */
        if (l->init_exited && l->open_streams == 0)
                sd_event_exit(l->event, 0);
}

/* A tty job's master reached its end (job-console.c). */
static void on_console_closed(void *userdata) {
        Loop *l = userdata;

        l->open_streams--;
        maybe_exit(l);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        JobRuntime *rt = &l->job->runtime;
        OutputStream stream = fd == rt->out_pipe[0] ? OUTPUT_STDOUT : OUTPUT_STDERR;
        char buf[65536];
        ssize_t n;

        n = read(fd, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                sd_event_source_set_enabled(s, SD_EVENT_OFF);
                l->open_streams--;
                maybe_exit(l);
                return 0;
        }
        if (output_log_append(&rt->log, stream, buf, (size_t) n) < 0)
                log_warning("Cannot write the job's %s to its log.", output_stream_to_string(stream));
        return 0;
}

static int on_oom(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        uint64_t n;

        /* A hint: an OOM, or the memcg going away. The count decides; job_collect() reads it again. */
        (void) read(fd, &n, sizeof n);
        job_read_oom_kills(l->job);
        return 0;
}

static int on_init_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Loop *l = userdata;
        JobOutcome *o = &l->job->outcome;

        if (!o->cancelled && !o->timed_out && job_stop_requested(l->job))
                job_cancel(l->job, "the job's service is being stopped");

        o->ended_mono = clock_usec(CLOCK_MONOTONIC);
        o->ended_usec = clock_usec(CLOCK_REALTIME);
        if (si->si_code == CLD_EXITED)
                o->exit_status = si->si_status;
        else
                o->exit_signal = si->si_status;
        /* pond-init's last word: the payload's own status (a signal it cannot die of as PID 1) */
        job_init_ended(l->job, o);
        l->init_exited = true;
        /* No new attach or exec into a job that has ended. */
        job_console_stop(l->job);
        /* While the scope is surely there: on cgroup v2 the kill below reaches the pin too and may empty it. */
        job_read_oom_kills(l->job);
        job_usage_read(l->job);
        /* Before pond's own kill: whatever of the runtime is dead now was killed by someone else. */
        job_runtime_check(l->job, si);
        job_init_lost(l->job);
        /* Whatever the init left behind in the scope (a daemonized grandchild holding the pipes) goes too. */
        job_kill_payload(l->job);
        maybe_exit(l);
        return 0;
}

static bool task_in(const pid_t *set, size_t n, pid_t pid) {
        for (size_t i = 0; i < n; i++)
                if (set[i] == pid)
                        return true;
        return false;
}

static int on_sandbox_watch(sd_event_source *s, uint64_t usec, void *userdata) {
        _cleanup_free_ char *payload = NULL;
        Loop *l = userdata;
        Job *j = l->job;
        pid_t now[SANDBOX_WATCH_MAX];
        size_t n = 0;

        if (l->init_exited || j->outcome.cancelled || j->outcome.timed_out || j->outcome.failed)
                return 0;
        /* A process left and the sandbox is still there a grace period later (a sandbox that ends on its
         * own takes its processes with it and exits within it): wedged. */
        if (l->lost > 0) {
                char what[160];

                snprintf(what, sizeof what, "the gVisor sandbox lost one of its processes (pid %d) and cannot make "
                         "progress: ended instead of running to its wall clock", (int) l->lost);
                job_runtime_failed(j, what);
                return 0;
        }
        if (asprintf(&payload, "%s/payload", j->paths.scope_cgroup) < 0 ||
            cgroup_read_procs(payload, now, ELEMENTSOF(now), &n) < 0)
                return 0;
        for (size_t i = 0; l->tasks_known && i < l->n_tasks; i++)
                if (!task_in(now, n, l->tasks[i]) && l->tasks[i] != j->runtime.init_pid) {
                        l->lost = l->tasks[i];
                        return sd_event_source_set_time_relative(s, SANDBOX_GRACE_USEC) < 0 ? 0 :
                               sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                }
        memcpy(l->tasks, now, n * sizeof now[0]);
        l->n_tasks = n;
        l->tasks_known = true;
        return sd_event_source_set_time_relative(s, SANDBOX_WATCH_USEC) < 0 ? 0 :
               sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Loop *l = userdata;
        Job *j = l->job;

        j->outcome.timed_out = true;
        audit_event(&j->audit, POND_EVENT_TIMED_OUT, AUDIT_NO_RC, "timed out after %llu s: killing %s",
                    (unsigned long long) j->input.spec->limits.wall_clock_s, j->paths.scope);
        job_kill_payload(j);
        return 0;
}

static int on_cancel(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Loop *l = userdata;
        Job *j = l->job;

        char why[32];

        if (j->outcome.cancelled)
                return 0;
        snprintf(why, sizeof why, "signal %u", si->ssi_signo);
        job_cancel(j, why);
        job_kill_payload(j);
        return 0;
}

static int add_sources(Loop *l) {
        sd_event *e = l->event;
        Job *j = l->job;
        int r;

        r = sd_event_add_io(e, NULL, j->runtime.out_pipe[0], EPOLLIN, on_output, l);
        if (r >= 0)
                r = sd_event_add_io(e, NULL, j->runtime.err_pipe[0], EPOLLIN, on_output, l);
        if (r >= 0)
                r = sd_event_add_child(e, NULL, j->runtime.init_pid, WEXITED, on_init_exit, l);
        if (r >= 0)
                r = sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC,
                                               j->input.spec->limits.wall_clock_s * 1000000ULL, 0, on_deadline, l);
        for (int i = 0; r >= 0 && i < 2; i++)
                if (j->runtime.oom_fds[i] >= 0)
                        r = sd_event_add_io(e, NULL, j->runtime.oom_fds[i], EPOLLIN, on_oom, l);
        /* From a second after the start: the runtime's own start-up processes have come and gone by then. */
        if (r >= 0 && j->input.provider && j->input.provider->watch_task_set)
                r = sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, SANDBOX_WATCH_USEC, 0, on_sandbox_watch, l);
        if (r >= 0) {
                r = job_console_watch(j, e, on_console_closed, l);
                if (r > 0)
                        l->open_streams++;
        }
        if (r >= 0)
                r = job_init_watch(j, e);
        if (r >= 0)
                r = job_features_watch(j, e);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGTERM, on_cancel, l);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT, on_cancel, l);
        /* The sidecars' units' signals (job-sidecar.c) are dispatched from here. The bus outlives the
         * loop (the teardown stops units over it): not closed when the loop exits. */
        if (r >= 0)
                r = sd_bus_set_close_on_exit(j->bus, false);
        if (r >= 0)
                r = sd_bus_attach_event(j->bus, e, SD_EVENT_PRIORITY_NORMAL);
        return r;
}

int job_run_loop(Job *j) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Loop l = { .job = j, .open_streams = 2 };
        int r;

        r = sd_event_new(&e);
        if (r < 0)
                return r;
        l.event = e;
        r = add_sources(&l);
        if (r < 0) {
                job_console_done(&j->console);
                return log_error_errno(r, "Cannot set up the event loop: %m");
        }
        r = sd_event_loop(e);
        /* The console's connections and execs end with the loop: the payload has. */
        job_console_done(&j->console);
        (void) sd_bus_detach_event(j->bus);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}
