/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* worker-policy.h: policy/worker.json, the worker's admission ceiling (how many jobs, how much memory and
 * how many CPUs their limits may add up to, and what a job over it does) and the pool and tenant tags it
 * carries, parsed strictly. pond-run admits by it (pond-run/admission/) and refuses a job whose tags it does
 * not carry; pondctl tells a scheduler what the worker can take (docs/fleet.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

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
        char **tags;                    /* "tags"; NULL: the key is absent (admission_policy_tags()) */
} AdmissionPolicy;

/* What a worker without "tags" carries: the pools of pond's own workers, never pool:byo (a bring-your-own
 * worker says so, with its tenant). */
#define WORKER_TAGS_DEFAULT "pool:trusted", "pool:any"

/* The worker's tags: worker.json's, or WORKER_TAGS_DEFAULT. Never NULL. */
char *const *admission_policy_tags(const AdmissionPolicy *p);
/* Frees what the parser allocated (the tags); the rest stays. */
void admission_policy_done(AdmissionPolicy *p);

/* The CPUs this process may run on (its affinity: pond-run's is the worker's, less what the operator took
 * from pond-job@), at least 1. */
unsigned admission_cpus_allowed(void);

/* No ceiling, the default wait and setup slots (what a missing worker.json means). */
AdmissionPolicy admission_policy_default(void);
/* worker.json: {"max_jobs": N, "max_memory": "16G" | "auto", "max_cpus": N | "auto", "when_full": "wait" |
 * "refuse", "max_wait_s": N, "max_setups": N, "tags": ["pool:trusted", ...]}, every key optional, any other
 * refused. "auto": the host's memory (MemTotal) or the CPUs pond-run may run on. "tags": 1 to TAGS_MAX tags
 * (tags.h: tag_is_valid()), duplicates refused. On success release *ret with admission_policy_done(). */
int admission_policy_parse(const char *text, size_t len, AdmissionPolicy *ret, char **ret_error);
/* DIR/worker.json; dir NULL: the worker's, /etc/pond's if there is one (policy_file(), policy-file.h). A
 * missing file is no ceiling at all. */
int admission_policy_load(const char *dir, AdmissionPolicy *ret, char **ret_error);
