/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* admission.h: the worker's ceiling on what its jobs may claim together (how many run, the memory and
 * CPUs their limits add up to), from policy/worker.json; a job over it waits in a queue, in order, or is
 * refused, as the policy says (docs/operations.md, "Admission"). Race-free across pond-run processes: one
 * lease file per admitted job and one queue file per waiting job in one directory, read and changed only
 * under an flock of that directory (as cpu-lease.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define ADMISSION_DIR "admission"
#define ADMISSION_POLICY_FILE "worker.json"
#define ADMISSION_MAX_WAIT_S_DEFAULT 600
/* Jobs in setup at once (setup-gate.h): by default 2 per CPU pond-run may run on, at most 1024. */
#define ADMISSION_SETUPS_PER_CPU 2
#define ADMISSION_MAX_SETUPS_MAX 1024

typedef struct AdmissionPolicy {
        uint64_t max_jobs;              /* 0: no ceiling */
        uint64_t max_memory_bytes;      /* 0: no ceiling */
        uint64_t max_cpus_milli;        /* 0: no ceiling */
        bool refuse_when_full;          /* "when_full": "refuse" (else "wait") */
        uint64_t max_wait_s;            /* the longest wait in the queue, and again for a setup slot */
        uint64_t max_setups;            /* jobs in setup at once (setup-gate.h); never 0 */
} AdmissionPolicy;

typedef struct AdmissionClaim {
        uint64_t memory_bytes, cpus_milli;
} AdmissionClaim;

/* What the admitted jobs hold together (leases), and how many wait ahead. */
typedef struct AdmissionState {
        uint64_t jobs, memory_bytes, cpus_milli;
        unsigned ahead;
} AdmissionState;

typedef enum AdmissionVerdict {
        ADMISSION_ADMITTED,
        ADMISSION_QUEUED,       /* over the ceiling now, or others wait ahead: try again later */
        ADMISSION_FULL,         /* over the ceiling now and the policy refuses rather than waits */
        ADMISSION_TOO_BIG,      /* over the ceiling on its own: it can never run here */
} AdmissionVerdict;

/* No ceiling, the default wait and setup slots (what a missing worker.json means). */
AdmissionPolicy admission_policy_default(void);
/* worker.json: {"max_jobs": N, "max_memory": "16G" | "auto", "max_cpus": N | "auto", "when_full": "wait" |
 * "refuse", "max_wait_s": N, "max_setups": N}, every key optional, any other refused. "auto": the host's
 * memory (MemTotal) or the CPUs pond-run may run on. */
int admission_policy_parse(const char *text, size_t len, AdmissionPolicy *ret, char **ret_error);
/* DIR/worker.json; dir NULL: the worker's, /etc/pond's if there is one (policy_file(), policy-file.h). A
 * missing file is no ceiling at all. */
int admission_policy_load(const char *dir, AdmissionPolicy *ret, char **ret_error);

/* One attempt, under dir's flock: admitted (a lease file written for job_id, its queue file removed), or
 * queued (*queue_fd: its queue file, created on the first attempt and flocked while the caller holds it
 * open: a waiter that died is skipped, and its file removed, by the next one), or full, or too big. A job
 * whose lease exists is admitted. ret_state says what was held (for the reason). */
int admission_try(const char *dir, const char *job_id, const AdmissionPolicy *p, const AdmissionClaim *c,
                  int *queue_fd, AdmissionState *ret_state, AdmissionVerdict *ret);

/* Removes the job's lease and queue file; none is fine. For every teardown path, --cleanup included. */
int admission_release(const char *dir, const char *job_id);
