/* supervise-loop.c: while the job runs: drain its stdout/stderr into the log, enforce the wall clock,
 * honour cancellation (SIGTERM from `systemctl stop`), and notice the container's init exiting. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "log.h"
#include "scope.h"
#include "supervise-launch.h"

typedef struct Loop {
        Job *job;
        sd_event *event;
        int open_streams;
        bool init_exited;
} Loop;

static void maybe_exit(Loop *l) {
        /* Exit once init is gone and the pipes are drained: nothing printed before the end is lost. */
        if (l->init_exited && l->open_streams == 0)
                sd_event_exit(l->event, 0);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        OutputStream stream = fd == l->job->out_pipe[0] ? OUTPUT_STDOUT : OUTPUT_STDERR;
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
        if (output_log_append(&l->job->log, stream, buf, (size_t) n) < 0)
                log_warning("Cannot write the job's %s to its log.", output_stream_to_string(stream));
        return 0;
}

static int on_oom(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;
        uint64_t n;

        if (read(fd, &n, sizeof n) == (ssize_t) sizeof n && !l->job->oom_killed) {
                l->job->oom_killed = true;
                audit_event(&l->job->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "out of memory in %s: the kernel's "
                            "OOM killer acts", l->job->paths.scope);
        }
        /* One notification is all we need; the memcg may be gone soon. */
        return sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

static void kill_payload(Loop *l) {
        Job *j = l->job;
        if (scope_kill(j->bus, j->paths.scope) < 0)
                (void) kill(j->init_pid, SIGKILL); /* the scope is gone: at least the init (and its pid ns) */
}

static int on_init_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Loop *l = userdata;
        Job *j = l->job;

        j->ended_mono = clock_usec(CLOCK_MONOTONIC);
        j->ended_usec = clock_usec(CLOCK_REALTIME);
        if (si->si_code == CLD_EXITED)
                j->exit_status = si->si_status;
        else
                j->exit_signal = si->si_status;
        l->init_exited = true;
        /* Whatever the init left behind in the scope (a daemonized grandchild holding the pipes) goes too. */
        kill_payload(l);
        maybe_exit(l);
        return 0;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Loop *l = userdata;

        l->job->timed_out = true;
        audit_event(&l->job->audit, POND_EVENT_TIMED_OUT, AUDIT_NO_RC, "timed out after %llu s: killing %s",
                    (unsigned long long) l->job->spec->limits.wall_clock_s, l->job->paths.scope);
        kill_payload(l);
        return 0;
}

/* The broker marks its totals when the job's budget is spent; the job is then cancelled, not left to spin
 * on refused requests until its wall clock runs out. */
static int on_broker_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Loop *l = userdata;
        Job *j = l->job;

        if (!j->cancelled && job_broker_ceiling_hit(j)) {
                j->cancelled = j->ceiling_hit = true;
                free(j->reason);
                if (asprintf(&j->reason, "cost ceiling reached: max_cost_cents %llu spent",
                             (unsigned long long) j->spec->limits.max_cost_cents) < 0)
                        j->reason = NULL;
                audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "cost ceiling reached: killing %s",
                            j->paths.scope);
                kill_payload(l);
                return 0;
        }
        return sd_event_source_set_time_relative(s, 250 * 1000) < 0 ? 0 : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_cancel(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Loop *l = userdata;

        if (l->job->cancelled)
                return 0;
        l->job->cancelled = true;
        audit_event(&l->job->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "cancelled (signal %u): killing %s",
                    si->ssi_signo, l->job->paths.scope);
        sd_notify(false, "STATUS=cancelling");
        kill_payload(l);
        return 0;
}

static void event_unrefp(sd_event **e) {
        sd_event_unref(*e);
}

int job_run_loop(Job *j) {
        _cleanup_(event_unrefp) sd_event *e = NULL;
        Loop l = { .job = j, .open_streams = 2 };
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_default(&e);
        if (r < 0)
                return r;
        l.event = e;
        r = sd_event_add_io(e, NULL, j->out_pipe[0], EPOLLIN, on_output, &l);
        if (r >= 0)
                r = sd_event_add_io(e, NULL, j->err_pipe[0], EPOLLIN, on_output, &l);
        if (r >= 0)
                r = sd_event_add_child(e, NULL, j->init_pid, WEXITED, on_init_exit, &l);
        if (r >= 0)
                r = sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC,
                                               j->spec->limits.wall_clock_s * 1000000ULL, 0, on_deadline, &l);
        for (int i = 0; r >= 0 && i < 2; i++)
                if (j->oom_fds[i] >= 0)
                        r = sd_event_add_io(e, NULL, j->oom_fds[i], EPOLLIN, on_oom, &l);
        if (r >= 0 && j->broker_up)
                r = sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, 250 * 1000, 0, on_broker_tick, &l);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGTERM, on_cancel, &l);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT, on_cancel, &l);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        r = sd_event_loop(e);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}
