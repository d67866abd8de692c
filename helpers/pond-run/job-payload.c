/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-payload.c: acting on the running payload, for the run loop and the features that watch it (the
 * console, the resource view, the sidecars, the runtime's own processes): reading the kernel's OOM kills,
 * killing the payload, cancelling the job (a signal, a caller that hung up, the cost ceiling), telling whether
 * a stop of its service is under way. It calls no phase and no feature. */
#include <inttypes.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "basic/log.h"
#include "job.h"
#include "scope/cgroup.h"
#include "scope/scope.h"

/* Only the kernel's count of OOM kills in the scope (its memcgs' oom_kill) makes a job OOM-killed: the v1
 * notification also fires when a memcg is removed, which every job's end does. */
void job_read_oom_kills(Job *j) {
        uint64_t n = 0;
        int r;

        if (!j->runtime.scope_cgroup || j->outcome.oom_killed)
                return;
        r = cgroup_oom_kills(j->runtime.scope_cgroup, &n);
        if (r < 0) {
                log_debug_errno(r, "Cannot read the OOM kill count of %s: %m", j->runtime.scope_cgroup);
                return;
        }
        if (n == 0)
                return;
        j->outcome.oom_killed = true;
        audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "out of memory in %s: the kernel's OOM killer "
                    "killed %" PRIu64 " process(es)", j->paths.scope, n);
}

void job_kill_payload(Job *j) {
        /* The counters as they are before the kill: on cgroup v2 KillUnit takes the pin too, and systemd may
         * remove the emptied scope before they can be read again (a later reading that succeeds wins). */
        job_read_oom_kills(j);
        job_usage_read(j);
        if (scope_kill(j->bus, j->paths.scope) < 0)
                (void) kill(j->runtime.init_pid, SIGKILL); /* the scope is gone: at least the init (and its pid ns) */
}

/* Marks the job cancelled and says so, once. */
void job_cancel(Job *j, const char *why) {
        if (j->outcome.cancelled)
                return;
        (void) job_end(j, JOB_END_CANCELLED, 0, NULL);
        audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "cancelled (%s): killing %s", why, j->paths.scope);
        sd_notify(false, "STATUS=cancelling");
}

/* The spec's kill_on_hangup: the caller's terminal is gone, as a session's SIGHUP. */
void job_console_hangup(Job *j) {
        if (j->outcome.cancelled || j->runtime.init_pid <= 0 || j->outcome.ended_usec != 0)
                return;
        job_fail(j, 0, "cancelled: its caller hung up (kill_on_hangup)");
        job_cancel(j, "the attached caller hung up, kill_on_hangup");
        job_kill_payload(j);
}

static int on_ceiling_grace(sd_event_source *s, uint64_t usec, void *userdata) {
        job_kill_payload(userdata);
        return 0;
}

/* The job is cancelled, not left to spin on refused requests until its wall clock runs out. The payload is
 * killed JOB_CEILING_GRACE_USEC later, so the agent can read the 402 that says why: nothing can be spent in
 * between, the broker refuses every request once the ceiling is reached. */
void job_cost_ceiling(Job *j) {
        int r;

        /* Only while the payload runs: not before it started, not after its init has exited. */
        if (j->outcome.cancelled || j->runtime.init_pid <= 0 || j->outcome.ended_usec != 0)
                return;
        job_end(j, JOB_END_CANCELLED, 0, "cost ceiling reached: max_cost_cents %llu spent",
                (unsigned long long) j->input.spec->limits.max_cost_cents);
        audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "cost ceiling reached: killing %s", j->paths.scope);
        r = sd_event_add_time_relative(sd_bus_get_event(j->bus), NULL, CLOCK_MONOTONIC, JOB_CEILING_GRACE_USEC, 0,
                                       on_ceiling_grace, j);
        if (r < 0)
                job_kill_payload(j); /* no timer: at once rather than never */
}

/* `systemctl stop` of the job's service also stops the scope (BindsTo=), and systemd may signal the payload
 * before the run loop has read its own SIGTERM: an init that dies then was cancelled, not completed. Either the
 * SIGTERM is still pending here, or the service is being stopped. */
bool job_stop_requested(Job *j) {
        sigset_t pending;

        if (sigpending(&pending) >= 0 &&
            (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1))
                return true;
        return j->bus && unit_is_stopping(j->bus, j->paths.service) > 0;
}
