/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* admission.h: the worker's ceiling on what its jobs may claim together (how many run, the memory and
 * CPUs their limits add up to), from policy/worker.json; a job over it waits in a queue, in order, or is
 * refused, as the policy says (docs/operations.md, "Admission"). Race-free across pond-run processes: one
 * lease file per admitted job and one queue file per waiting job in one directory, read and changed only
 * under an flock of that directory (as cpu-lease.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "policy/worker-policy.h"

#define ADMISSION_DIR "admission"


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


/* One attempt, under dir's flock: admitted (a lease file written for job_id, its queue file removed), or
 * queued (*queue_fd: its queue file, created on the first attempt and flocked while the caller holds it
 * open: a waiter that died is skipped, and its file removed, by the next one), or full, or too big. A job
 * whose lease exists is admitted. ret_state says what was held (for the reason). */
int admission_try(const char *dir, const char *job_id, const AdmissionPolicy *p, const AdmissionClaim *c,
                  int *queue_fd, AdmissionState *ret_state, AdmissionVerdict *ret);

/* Removes the job's lease and queue file; none is fine. For every teardown path, --cleanup included. */
int admission_release(const char *dir, const char *job_id);
