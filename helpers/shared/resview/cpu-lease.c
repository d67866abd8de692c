/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-lease.c: per-job cpusets. A lease is a file named after the job id in the lease directory, holding
 * the job's cpu list (lease/lease-store.h); the load of a CPU is the number of leases that name it. The
 * choice is made under the store's lock, so two jobs starting at once see each other's leases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/jobid.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "lease/lease-store.h"
#include "resview/cpu-lease.h"

#define LEASE_MAX 4096 /* bytes of one lease file: a cpu list of CPU_SETSIZE CPUs fits */

unsigned cpus_ceil(unsigned long long cpus_milli) {
        unsigned long long n = (cpus_milli + 999) / 1000;
        return n == 0 ? 1 : n > CPU_SETSIZE ? CPU_SETSIZE : (unsigned) n;
}

int cpu_list_format(const cpu_set_t *set, char **ret) {
        char buf[LEASE_MAX] = "";
        size_t len = 0;

        for (int i = 0; i < CPU_SETSIZE; i++) {
                int j = i;

                if (!CPU_ISSET(i, set))
                        continue;
                while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set))
                        j++;
                len += (size_t) snprintf(buf + len, sizeof buf - len, j > i ? "%s%d-%d" : "%s%d",
                                         len ? "," : "", i, j);
                if (len >= sizeof buf)
                        return -E2BIG;
                i = j;
        }
        if (len == 0)
                return -EINVAL;
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

int cpu_list_parse(const char *s, cpu_set_t *ret) {
        cpu_set_t set;

        CPU_ZERO(&set);
        while (s && *s && *s != '\n') {
                unsigned a, b;
                int n = 0;

                if (sscanf(s, "%u%n", &a, &n) != 1 || n == 0)
                        return -EINVAL;
                s += n;
                b = a;
                if (*s == '-') {
                        s++;
                        if (sscanf(s, "%u%n", &b, &n) != 1 || n == 0)
                                return -EINVAL;
                        s += n;
                }
                if (b < a || b >= CPU_SETSIZE)
                        return -EINVAL;
                for (unsigned c = a; c <= b; c++)
                        CPU_SET(c, &set);
                if (*s == ',')
                        s++;
                else if (*s && *s != '\n')
                        return -EINVAL;
        }
        if (CPU_COUNT(&set) == 0)
                return -EINVAL;
        *ret = set;
        return 0;
}

int cpu_lease_choose(const cpu_set_t *host, const unsigned *load, unsigned n, cpu_set_t *ret) {
        cpu_set_t chosen;
        unsigned have = (unsigned) CPU_COUNT(host);

        if (n == 0 || have == 0)
                return -EINVAL;
        if (n >= have) {
                *ret = *host;
                return 0;
        }
        CPU_ZERO(&chosen);
        /* n rounds of "the least-loaded CPU not yet taken": n is at most CPU_SETSIZE, and so is each round */
        for (unsigned k = 0; k < n; k++) {
                int best = -1;

                for (int c = 0; c < CPU_SETSIZE; c++)
                        if (CPU_ISSET(c, host) && !CPU_ISSET(c, &chosen) && (best < 0 || load[c] < load[best]))
                                best = c;
                CPU_SET(best, &chosen);
        }
        *ret = chosen;
        return 0;
}

static int read_lease(const LeaseStore *s, const char *name, cpu_set_t *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = lease_store_read(s, name, LEASE_MAX, &buf);

        return r < 0 ? r : cpu_list_parse(buf, ret);
}

/* Each CPU's number of leases; malformed files count for nothing. */
static int count_load(const LeaseStore *s, unsigned *load) {
        _cleanup_(lease_list_free) LeaseList l = {};
        int r = lease_store_list(s, NULL, LEASE_MAX, &l);

        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                cpu_set_t set;

                if (!job_id_is_valid(l.entries[i].name) || !l.entries[i].text ||
                    cpu_list_parse(l.entries[i].text, &set) < 0)
                        continue;
                for (int c = 0; c < CPU_SETSIZE; c++)
                        if (CPU_ISSET(c, &set))
                                load[c]++;
        }
        return 0;
}

int cpu_lease_acquire(const char *dir, const char *job_id, const cpu_set_t *host, unsigned n, cpu_set_t *ret) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_free_ unsigned *load = NULL;
        _cleanup_free_ char *list = NULL;
        cpu_set_t set;
        int r;

        if (!job_id_is_valid(job_id))
                return -EINVAL;
        r = lease_store_open(dir, LEASE_STORE_CREATE, &s);
        if (r < 0)
                return r;
        if (read_lease(&s, job_id, &set) >= 0) {
                *ret = set;
                return 0;
        }
        load = calloc(CPU_SETSIZE, sizeof *load);
        if (!load)
                return -ENOMEM;
        r = count_load(&s, load);
        if (r >= 0)
                r = cpu_lease_choose(host, load, n, &set);
        if (r >= 0)
                r = cpu_list_format(&set, &list);
        if (r >= 0)
                r = lease_store_write(&s, job_id, list);
        if (r < 0)
                return log_debug_errno(r, "Cannot lease %u CPUs for %s: %m", n, job_id);
        *ret = set;
        return 0;
}

int cpu_lease_release(const char *dir, const char *job_id) {
        return job_id_is_valid(job_id) ? lease_release(dir, job_id, 0, NULL, NULL) : -EINVAL;
}
