/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* admission.c: the worker's admission ceiling (worker.json, policy/worker-policy.c) applied: the lease and
 * queue files of its directory, a lease store (lease/lease-store.h) read and changed under the store's
 * lock, its queue admission-queue.c's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admission/admission-queue.h"
#include "admission/admission.h"
#include "basic/fileio.h"
#include "basic/json-util.h"
#include "lease/lease-store.h"

#define LEASE_PREFIX "lease-"
#define LEASE_MAX 128

static bool over(const AdmissionPolicy *p, uint64_t jobs, uint64_t mem, uint64_t cpus) {
        return (p->max_jobs && jobs > p->max_jobs) || (p->max_memory_bytes && mem > p->max_memory_bytes) ||
               (p->max_cpus_milli && cpus > p->max_cpus_milli);
}

/* A lease's claim, added to what is held; unreadable: counted as a job, its claim unknown (never less than
 * what is there). */
static void add_lease(const char *text, AdmissionState *s) {
        uint64_t mem, cpus;

        s->jobs++;
        if (!text || sscanf(text, "%" SCNu64 " %" SCNu64, &mem, &cpus) != 2)
                return;
        s->memory_bytes += mem;
        s->cpus_milli += cpus;
}

/* The leases' totals; the live queue files before mine (mine: *mine, or NULL: every live one is ahead),
 * the dead ones removed. */
static int scan(const LeaseStore *store, const char *job_id, const char *mine, AdmissionState *s,
                bool *ret_leased) {
        _cleanup_(lease_list_free) LeaseList leases = {};
        int r;

        (void) admission_queue_sweep(store, job_id, 0);
        r = lease_store_list(store, LEASE_PREFIX, LEASE_MAX, &leases);
        if (r < 0)
                return r;
        *s = (AdmissionState) {};
        *ret_leased = false;
        for (size_t i = 0; i < leases.n; i++) {
                if (streq(leases.entries[i].name + strlen(LEASE_PREFIX), job_id))
                        *ret_leased = true;
                else
                        add_lease(leases.entries[i].text, s);
        }
        return admission_queue_ahead(store, job_id, mine, &s->ahead);
}

int admission_try(const char *dir, const char *job_id, const AdmissionPolicy *p, const AdmissionClaim *c,
                  int *queue_fd, AdmissionState *ret_state, AdmissionVerdict *ret) {
        _cleanup_(lease_store_close) LeaseStore store = LEASE_STORE_NULL;
        _cleanup_free_ char *mine = NULL, *lease = NULL, *text = NULL;
        AdmissionState s;
        bool leased;
        int r;

        if (over(p, 1, c->memory_bytes, c->cpus_milli)) {
                *ret_state = (AdmissionState) {};
                *ret = ADMISSION_TOO_BIG;
                return 0;
        }
        r = lease_store_open(dir, LEASE_STORE_CREATE, &store);
        if (r < 0)
                return r;
        if (*queue_fd >= 0) {
                r = admission_queue_find(&store, job_id, &mine);
                if (r < 0)
                        return r;
        }
        r = scan(&store, job_id, mine, &s, &leased);
        if (r < 0)
                return r;
        *ret_state = s;
        if (leased) {
                *ret = ADMISSION_ADMITTED;
                return 0;
        }
        if (s.ahead == 0 && !over(p, s.jobs + 1, s.memory_bytes + c->memory_bytes, s.cpus_milli + c->cpus_milli)) {
                if (asprintf(&lease, LEASE_PREFIX "%s", job_id) < 0 ||
                    asprintf(&text, "%" PRIu64 " %" PRIu64 "\n", c->memory_bytes, c->cpus_milli) < 0)
                        return -ENOMEM;
                r = lease_store_write(&store, lease, text);
                if (r < 0)
                        return r;
                if (mine)
                        (void) lease_store_remove(&store, mine);
                *queue_fd = safe_close(*queue_fd);
                *ret = ADMISSION_ADMITTED;
                return 0;
        }
        if (p->refuse_when_full) {
                *ret = ADMISSION_FULL;
                return 0;
        }
        if (!mine) {
                *queue_fd = safe_close(*queue_fd);
                r = admission_queue_enter(&store, job_id, &mine, queue_fd);
                if (r < 0)
                        return r;
        }
        *ret = ADMISSION_QUEUED;
        return 0;
}

int admission_release(const char *dir, const char *job_id) {
        _cleanup_(lease_store_close) LeaseStore store = LEASE_STORE_NULL;
        _cleanup_free_ char *lease = NULL;
        int r;

        r = lease_store_open(dir, LEASE_STORE_MISSING_OK, &store);
        if (r <= 0)
                return r;
        if (asprintf(&lease, LEASE_PREFIX "%s", job_id) < 0)
                return -ENOMEM;
        r = lease_store_release(&store, lease, 0, NULL, NULL);
        if (r < 0)
                return r;
        return admission_queue_leave(&store, job_id);
}
