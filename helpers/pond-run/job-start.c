/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-start.c: step 6 of the design, the hand-off: once every sidecar is up (fail closed) and watched, the
 * runtime lets the container's init go. From here the payload runs, and the job is READY for systemd. */
#include <malloc.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "basic/log.h"
#include "job.h"

int job_start(Job *j) {
        const ResolvedPolicy *res = j->input.resolved;
        char words[256];
        int r;

        r = job_sidecars_wait(j);
        if (r < 0)
                return r;
        j->outcome.started_usec = clock_usec(CLOCK_REALTIME);
        j->outcome.started_mono = clock_usec(CLOCK_MONOTONIC);
        r = runtime_exec_setup(j->runtime.start_argv, RUNTIME_STEP_USEC, j->input.provider->start_child_setup);
        if (r != 0) {
                /* Whatever the init did was the runtime's, not a payload's that never started. */
                job_end(j, JOB_END_RUNTIME_FAILED, r < 0 ? r : -EIO, "runtime failed (%s): %s could not start "
                        "the container; its messages are in the journal of %s", j->input.provider->name,
                        j->input.provider->name, j->paths.service);
                return log_error_errno(r < 0 ? r : EIO, "The runtime %s could not start the container.",
                                       j->input.provider->name);
        }
        audit_event(&j->audit, POND_EVENT_STARTED, AUDIT_NO_RC, "started: %s in %s (memory %llu, cpus %.2f, "
                    "pids %llu; %s)", j->input.provider->name, j->paths.scope, (unsigned long long) res->memory_bytes,
                    res->cpus_milli / 1000.0, (unsigned long long) res->pids_limit, job_resview_words(j, words,
                    sizeof words));
        if (j->view.view.degraded)
                audit_event(&j->audit, POND_EVENT_DEGRADED, AUDIT_NO_RC, "resource view degraded: %s",
                            j->view.view.degraded);
        sd_notifyf(false, "READY=1\nSTATUS=running %s", j->paths.container);
        /* The set-up's peaks (the digest cache, the policy, nftables' ruleset cache) are freed by now, but
         * the heap kept its pages: 4.5 MiB in some supervisors for the rest of the job (tools/bench-density). */
        (void) malloc_trim(0);
        return 0;
}
