/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* admission.c: the worker's admission ceiling: worker.json parsed strictly, and the lease and queue files
 * of its directory, a lease store (lease/lease-store.h) read and changed under the store's lock, its queue
 * admission-queue.c's. */
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "admission/admission-queue.h"
#include "admission/admission.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/size.h"
#include "lease/lease-store.h"
#include "policy/policy-file.h"

#define LEASE_PREFIX "lease-"
#define LEASE_MAX 128

static int fail(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int fail(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

/* The CPUs pond-run may run on (its affinity: the worker's, less what the operator took from pond-job@). */
static unsigned cpus_allowed(void) {
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof set, &set) < 0)
                return 1;
        return (unsigned) MAX(CPU_COUNT(&set), 1);
}

AdmissionPolicy admission_policy_default(void) {
        return (AdmissionPolicy) {
                .max_wait_s = ADMISSION_MAX_WAIT_S_DEFAULT,
                .max_setups = MIN((uint64_t) ADMISSION_SETUPS_PER_CPU * cpus_allowed(), ADMISSION_MAX_SETUPS_MAX),
        };
}

static bool is_auto(json_object *v) {
        return json_object_is_type(v, json_type_string) && streq(json_object_get_string(v), "auto");
}

static int parse_memory(json_object *v, uint64_t *ret, char **ret_error) {
        struct sysinfo si;

        if (is_auto(v)) {
                if (sysinfo(&si) < 0)
                        return -errno;
                *ret = (uint64_t) si.totalram * si.mem_unit;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string) || parse_size(json_object_get_string(v), ret) < 0 || *ret == 0)
                return fail(ret_error, "max_memory: must be a size (\"16G\") or \"auto\"");
        return 0;
}

static int parse_cpus(json_object *v, uint64_t *ret, char **ret_error) {
        double d;

        if (is_auto(v)) {
                *ret = (uint64_t) cpus_allowed() * 1000;
                return 0;
        }
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
                return fail(ret_error, "max_cpus: must be a number of CPUs (0.001 to 4096) or \"auto\"");
        d = json_object_get_double(v);
        if (!isfinite(d) || d < 0.001 || d > 4096)
                return fail(ret_error, "max_cpus: must be a number of CPUs (0.001 to 4096) or \"auto\"");
        *ret = (uint64_t) llround(d * 1000);
        return 0;
}

int admission_policy_parse(const char *text, size_t len, AdmissionPolicy *ret, char **ret_error) {
        static const char *const known[] = { "max_jobs", "max_memory", "max_cpus", "when_full", "max_wait_s",
                                             "max_setups", NULL };
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        AdmissionPolicy p = admission_policy_default();
        json_object *v;
        int r;

        r = json_parse_strict(text, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, &err);
        if (r < 0)
                return fail(ret_error, "%s", err ?: "invalid JSON");
        r = json_check_object(o, NULL, ret_error);
        if (r >= 0)
                r = json_check_keys(o, NULL, known, ret_error);
        if (r >= 0)
                r = json_get_u64(o, NULL, "max_jobs", 1, 65536, &p.max_jobs, ret_error);
        if (r >= 0)
                r = json_get_u64(o, NULL, "max_wait_s", 0, 86400, &p.max_wait_s, ret_error);
        if (r >= 0)
                r = json_get_u64(o, NULL, "max_setups", 1, ADMISSION_MAX_SETUPS_MAX, &p.max_setups, ret_error);
        if (r < 0)
                return r;
        v = json_get(o, "max_memory");
        if (v && (r = parse_memory(v, &p.max_memory_bytes, ret_error)) < 0)
                return r;
        v = json_get(o, "max_cpus");
        if (v && (r = parse_cpus(v, &p.max_cpus_milli, ret_error)) < 0)
                return r;
        v = json_get(o, "when_full");
        if (v) {
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                if (!streq(s, "wait") && !streq(s, "refuse"))
                        return fail(ret_error, "when_full: must be \"wait\" or \"refuse\"");
                p.refuse_when_full = streq(s, "refuse");
        }
        *ret = p;
        return 0;
}

int admission_policy_load(const char *dir, AdmissionPolicy *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *buf = NULL, *err = NULL;
        size_t len;
        int r;

        if (dir)
                r = asprintf(&path, "%s/%s", dir, ADMISSION_POLICY_FILE) < 0 ? -ENOMEM : 0;
        else
                r = policy_file(ADMISSION_POLICY_FILE, &path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(ret_error, "policy: cannot look up %s: %s", ADMISSION_POLICY_FILE, strerror(-r));
        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r == -ENOENT) {
                *ret = admission_policy_default();
                return 0;
        }
        if (r < 0)
                return fail(ret_error, "policy: cannot read %s: %s", path, strerror(-r));
        r = admission_policy_parse(buf, len, ret, &err);
        if (r < 0)
                return fail(ret_error, "policy: %s: %s", path, err ?: strerror(-r));
        return 0;
}

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
