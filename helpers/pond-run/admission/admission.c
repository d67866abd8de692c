/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* admission.c: the worker's admission ceiling: worker.json parsed strictly, and the lease and queue files
 * of its directory, a lease store (lease/lease-store.h) read and changed under the store's lock; a queue
 * file whose waiter is gone is the store's stale entry. */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "admission/admission.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/size.h"
#include "lease/lease-store.h"
#include "policy/policy-file.h"

#define LEASE_PREFIX "lease-"
#define LEASE_MAX 128
#define QUEUE_PREFIX "queue-"

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
        cpu_set_t set;
        double d;

        if (is_auto(v)) {
                if (sched_getaffinity(0, sizeof set, &set) < 0)
                        return -errno;
                *ret = (uint64_t) CPU_COUNT(&set) * 1000;
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
        static const char *const known[] = { "max_jobs", "max_memory", "max_cpus", "when_full", "max_wait_s", NULL };
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        AdmissionPolicy p = { .max_wait_s = ADMISSION_MAX_WAIT_S_DEFAULT };
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
                *ret = (AdmissionPolicy) { .max_wait_s = ADMISSION_MAX_WAIT_S_DEFAULT };
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

/* A queue file whose flock can be taken has no waiter left. */
static bool waiter_alive(int dfd, const char *name) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0)
                return false;
        return flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

static bool queue_name_is(const char *name, const char *job_id) {
        const char *dash = strchr(name + strlen(QUEUE_PREFIX), '-');
        return dash && streq(dash + 1, job_id);
}

/* The queue's proof of a stale entry: its waiter is gone. The job's own entry is never another's to judge. */
static int waiter_gone(const LeaseStore *s, const char *name, const char *text _unused_, void *userdata) {
        const char *job_id = userdata;

        return !queue_name_is(name, job_id) && !waiter_alive(s->dfd, name);
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
        _cleanup_(lease_list_free) LeaseList leases = {}, queue = {};
        int r;

        (void) lease_store_sweep(store, QUEUE_PREFIX, 0, waiter_gone, (void *) job_id);
        r = lease_store_list(store, LEASE_PREFIX, LEASE_MAX, &leases);
        if (r >= 0)
                r = lease_store_list(store, QUEUE_PREFIX, 0, &queue);
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
        for (size_t i = 0; i < queue.n; i++) {
                const char *name = queue.entries[i].name;

                if (!queue_name_is(name, job_id) && (!mine || strcmp(name, mine) < 0))
                        s->ahead++;
        }
        return 0;
}

/* The job's queue file, named by the time it queued (20 digits: names sort as times), flocked. */
static int enqueue(const LeaseStore *store, const char *job_id, char **ret_name, int *ret_fd) {
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        if (asprintf(&name, QUEUE_PREFIX "%020" PRIu64 "-%s",
                     (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec, job_id) < 0)
                return -ENOMEM;
        if (!lease_name_is_valid(name))
                return -EINVAL;
        fd = openat(store->dfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        *ret_name = TAKE_PTR(name);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The name of the job's queue file, if it has one. */
static int find_queued(const LeaseStore *store, const char *job_id, char **ret) {
        _cleanup_(lease_list_free) LeaseList queue = {};
        int r;

        *ret = NULL;
        r = lease_store_list(store, QUEUE_PREFIX, 0, &queue);
        if (r < 0)
                return r;
        for (size_t i = 0; i < queue.n; i++)
                if (queue_name_is(queue.entries[i].name, job_id)) {
                        *ret = strdup(queue.entries[i].name);
                        return *ret ? 0 : -ENOMEM;
                }
        return 0;
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
                r = find_queued(&store, job_id, &mine);
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
                r = enqueue(&store, job_id, &mine, queue_fd);
                if (r < 0)
                        return r;
        }
        *ret = ADMISSION_QUEUED;
        return 0;
}

int admission_release(const char *dir, const char *job_id) {
        _cleanup_(lease_store_close) LeaseStore store = LEASE_STORE_NULL;
        _cleanup_free_ char *lease = NULL, *queued = NULL;
        int r;

        r = lease_store_open(dir, LEASE_STORE_MISSING_OK, &store);
        if (r <= 0)
                return r;
        if (asprintf(&lease, LEASE_PREFIX "%s", job_id) < 0)
                return -ENOMEM;
        r = lease_store_release(&store, lease, 0, NULL, NULL);
        if (r < 0)
                return r;
        r = find_queued(&store, job_id, &queued);
        if (r < 0 || !queued)
                return r;
        return lease_store_remove(&store, queued);
}
