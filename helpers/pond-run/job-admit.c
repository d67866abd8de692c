/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-admit.c: step 1b: the worker's admission ceiling (admission.c, policy/worker.json), once the job's
 * claim (its memory and CPU limits) is known and before anything of it is made. Over the ceiling, it waits
 * its turn in the queue, at most max_wait_s, or is refused at once, as the policy says; a job that alone
 * claims more than the ceiling is refused. The lease goes in the teardown's last step (every path,
 * `pond-run --cleanup` after a SIGKILL included). */
#include <inttypes.h>
#include <stdarg.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "admission/admission.h"
#include "basic/dirs.h"
#include "basic/log.h"
#include "job.h"

#define ADMISSION_POLL_USEC (100 * 1000)
#define ADMISSION_EXTEND_USEC (UINT64_C(30) * 1000 * 1000)

static int admission_dir(char **ret) {
        return asprintf(ret, "%s/%s", pond_dir(POND_DIR_RUN), ADMISSION_DIR) < 0 ? -ENOMEM : 0;
}

/* "3 of 4 jobs, memory 12884901888 of 17179869184, cpus 6.000 of 8.000": what is held, against the ceiling. */
static void held_words(const AdmissionPolicy *p, const AdmissionState *s, char *buf, size_t size) {
        int n = snprintf(buf, size, "%" PRIu64 " job(s)", s->jobs);

        if (p->max_jobs && n >= 0 && (size_t) n < size)
                n += snprintf(buf + n, size - (size_t) n, " of %" PRIu64, p->max_jobs);
        if (p->max_memory_bytes && n >= 0 && (size_t) n < size)
                n += snprintf(buf + n, size - (size_t) n, ", memory %" PRIu64 " of %" PRIu64 " bytes",
                              s->memory_bytes, p->max_memory_bytes);
        if (p->max_cpus_milli && n >= 0 && (size_t) n < size)
                (void) snprintf(buf + n, size - (size_t) n, ", cpus %.3f of %.3f", s->cpus_milli / 1000.0,
                                p->max_cpus_milli / 1000.0);
}

static int refuse(Job *j, const char *fmt, ...) _printf_(2, 3);
static int refuse(Job *j, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&why, fmt, ap) < 0)
                why = NULL;
        va_end(ap);
        return job_end(j, JOB_END_REFUSED, -EBUSY, "%s", why ?: "admission: refused");
}

int job_admit(Job *j) {
        _cleanup_free_ char *dir = NULL, *err = NULL;
        const ResolvedPolicy *res = j->input.resolved;
        AdmissionClaim claim = { res->memory_bytes, res->cpus_milli };
        JobAdmission *a = &j->admission;
        AdmissionPolicy p;
        AdmissionState s;
        AdmissionVerdict v;
        uint64_t start = clock_usec(CLOCK_MONOTONIC), deadline;
        char held[256];
        unsigned polls = 0;
        int r;

        r = admission_policy_load(NULL, &p, &err);
        if (r < 0)
                return refuse(j, "%s", err ?: "policy: worker.json: cannot be read");
        if (admission_dir(&dir) < 0)
                return log_oom();
        deadline = start + p.max_wait_s * 1000000ULL;
        for (;;) {
                r = admission_try(dir, j->paths.id, &p, &claim, &a->queue_fd, &s, &v);
                if (r < 0)
                        return job_fail(j, log_error_errno(r, "Cannot take an admission lease in %s: %m", dir),
                                        "pond could not take the job's admission lease (see the journal of its unit)");
                held_words(&p, &s, held, sizeof held);
                switch (v) {
                case ADMISSION_ADMITTED:
                        a->leased = true;
                        if (a->queued)
                                log_info("Admitted %s after %" PRIu64 " ms in the queue.", j->paths.id,
                                         (clock_usec(CLOCK_MONOTONIC) - start) / 1000);
                        return 0;
                case ADMISSION_TOO_BIG:
                        held_words(&p, &(AdmissionState) { .jobs = 1, .memory_bytes = claim.memory_bytes,
                                                           .cpus_milli = claim.cpus_milli }, held, sizeof held);
                        return refuse(j, "admission: the job alone claims more than this worker's ceiling (%s)", held);
                case ADMISSION_FULL:
                        return refuse(j, "admission: the worker is full (it holds %s) and its policy refuses "
                                      "rather than queues (when_full: refuse)", held);
                case ADMISSION_QUEUED:
                        break;
                }
                if (!a->queued) {
                        a->queued = true;
                        log_info("Queued %s: the worker holds %s, %u job(s) wait ahead.", j->paths.id, held, s.ahead);
                }
                /* Queued before READY=1: the unit's start timeout is pushed out while it waits its turn. */
                if (polls++ % 10 == 0)
                        (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64 "\nSTATUS=queued: the worker holds "
                                          "%s, %u job(s) ahead", ADMISSION_EXTEND_USEC, held, s.ahead);
                if (job_stop_requested(j))
                        return -ECANCELED;
                if (clock_usec(CLOCK_MONOTONIC) >= deadline)
                        return refuse(j, "admission: waited %" PRIu64 " s (max_wait_s) in the queue and the worker "
                                      "is still full (it holds %s)", p.max_wait_s, held);
                (void) usleep(ADMISSION_POLL_USEC);
        }
}

int job_admission_release(Job *j) {
        _cleanup_free_ char *dir = NULL;
        int r;

        j->admission.queue_fd = safe_close(j->admission.queue_fd);
        if (admission_dir(&dir) < 0)
                return -ENOMEM;
        r = admission_release(dir, j->paths.id);
        if (r >= 0)
                j->admission.leased = false;
        return r;
}
