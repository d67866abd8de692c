/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-admit.c: step 1b: the worker's admission ceiling (admission.c, policy/worker.json), once the job's
 * claim (its memory and CPU limits) is known and before anything of it is made. Over the ceiling, it waits
 * its turn in the queue, at most max_wait_s, or is refused at once, as the policy says; a job that alone
 * claims more than the ceiling is refused. The lease goes in the teardown's last step (every path,
 * `pond-run --cleanup` after a SIGKILL included). Then the setup gate (setup-gate.c): a slot among
 * max_setups, waited for in order, held until the payload started. */
#include <inttypes.h>
#include <stdarg.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "admission/admission.h"
#include "admission/setup-gate.h"
#include "basic/dirs.h"
#include "basic/log.h"
#include "job.h"
#include "scope/scope.h"

#define ADMISSION_POLL_USEC (100 * 1000)
#define ADMISSION_EXTEND_USEC (UINT64_C(30) * 1000 * 1000)
#define ADMISSION_EXTEND_EVERY_USEC (UINT64_C(1000) * 1000)
#define SETUP_POLL_USEC (UINT64_C(50) * 1000)
#define SETUP_POLL_MAX_USEC (UINT64_C(500) * 1000)
/* What the setup gets once it has its slot: the unit's start timeout (pond-job@'s default 90 s). */
#define SETUP_EXTEND_USEC (UINT64_C(90) * 1000 * 1000)

static int admission_dir(char **ret) {
        return asprintf(ret, "%s/%s", pond_dir(POND_DIR_RUN), ADMISSION_DIR) < 0 ? -ENOMEM : 0;
}

static int setup_gate_dir(char **ret) {
        return asprintf(ret, "%s/%s", pond_dir(POND_DIR_RUN), SETUP_GATE_DIR) < 0 ? -ENOMEM : 0;
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
        a->setup_slots = (unsigned) p.max_setups;
        a->max_wait_s = p.max_wait_s;
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

/* How long a waiter sleeps between looks: soon when a slot could be its turn, longer the further back it
 * is (a burst's waiters poll the gate's lock; those far back need many setups to end first). */
static uint64_t setup_poll_usec(unsigned ahead, unsigned slots) {
        return MIN(SETUP_POLL_USEC * (1 + ahead / MAX(slots, 1u)), SETUP_POLL_MAX_USEC);
}

int job_setup_gate_take(Job *j) {
        _cleanup_free_ char *dir = NULL;
        JobAdmission *a = &j->admission;
        uint64_t start = clock_usec(CLOCK_MONOTONIC), deadline, extended = 0, now;
        SetupGateState s;
        bool queued = false;
        int r;

        if (setup_gate_dir(&dir) < 0)
                return log_oom();
        deadline = start + a->max_wait_s * 1000000ULL;
        for (;;) {
                r = setup_gate_try(dir, j->paths.id, a->setup_slots, &a->setup_fd, &a->setup_queue_fd, &s);
                if (r < 0)
                        return job_fail(j, log_error_errno(r, "Cannot take a setup slot in %s: %m", dir),
                                        "pond could not take the job's setup slot (see the journal of its unit)");
                now = clock_usec(CLOCK_MONOTONIC);
                if (r > 0)
                        break;
                if (!queued) {
                        queued = true;
                        log_info("Waiting for a setup slot for %s: all %u are taken, %u job(s) wait ahead.",
                                 j->paths.id, a->setup_slots, s.ahead);
                }
                /* Before READY=1: the unit's start timeout is pushed out while it waits its turn. */
                if (now - extended >= ADMISSION_EXTEND_EVERY_USEC) {
                        extended = now;
                        (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64 "\nSTATUS=waiting for a setup slot: "
                                          "%u job(s) in setup, %u ahead", ADMISSION_EXTEND_USEC, a->setup_slots,
                                          s.ahead);
                }
                if (job_stop_requested(j))
                        return -ECANCELED;
                if (now >= deadline)
                        return job_end(j, JOB_END_REFUSED, -EBUSY, "admission: waited %" PRIu64 " s (max_wait_s) "
                                       "for a setup slot and %u job(s) are still in setup (max_setups), %u ahead",
                                       a->max_wait_s, a->setup_slots, s.ahead);
                (void) usleep(setup_poll_usec(s.ahead, a->setup_slots));
        }
        a->setup_queue_fd = safe_close(a->setup_queue_fd);
        log_info("Setting up %s in setup slot %u of %u, after %" PRIu64 " ms waiting.", j->paths.id, s.slot,
                 a->setup_slots, (now - start) / 1000);
        /* The setup itself has the unit's whole start timeout again, however long the waits before it were, and
         * each of its waits on systemd pushes it further (scope.h). */
        (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64 "\nSTATUS=setting up", SETUP_EXTEND_USEC);
        unit_waits_extend_start_timeout(true);
        return 0;
}

void job_setup_started(Job *j, bool sidecars_starting) {
        unit_waits_extend_start_timeout(false);
        if (!sidecars_starting)
                job_setup_gate_release(j);
}

void job_setup_gate_release(Job *j) {
        JobAdmission *a = &j->admission;

        if (a->setup_fd < 0)
                return;
        a->setup_fd = safe_close(a->setup_fd);
        log_debug("Setup slot of %s given back.", j->paths.id);
}

int job_admission_release(Job *j) {
        _cleanup_free_ char *dir = NULL, *gate = NULL;
        int r;

        j->admission.queue_fd = safe_close(j->admission.queue_fd);
        job_setup_gate_release(j);
        j->admission.setup_queue_fd = safe_close(j->admission.setup_queue_fd);
        if (setup_gate_dir(&gate) < 0)
                return -ENOMEM;
        (void) setup_gate_leave(gate, j->paths.id); /* a waiter's queue file, if its supervisor died waiting */
        if (admission_dir(&dir) < 0)
                return -ENOMEM;
        r = admission_release(dir, j->paths.id);
        if (r >= 0)
                j->admission.leased = false;
        return r;
}
