/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-resview: what the resource view adds to a job's start, piece by piece, as pond-run pays it: the
 * LXCFS health check (a read of its meminfo), a CPU lease taken and given back (with LEASES other leases
 * in the directory), the v1 cpuset of a scope prepared and removed, and the view written into a
 * config.json. Prints the median and p90 of each and their sum. Run it as root where LXCFS runs (the box):
 *   bench-resview [ROUNDS [LEASES]] */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "bench-util.h"
#include "cgroup/cgroup-util.h"
#include "resview/cpu-lease.h"
#include "resview/resview.h"

#define SCOPE "/pond-bench.slice/pond-bench-resview.scope"

static void report(const char *what, uint64_t *v, size_t n, uint64_t *sum) {
        (void) bench_median(v, n); /* sorts v */
        printf("%-34s median %8.1f us   p90 %8.1f us\n", what, v[n / 2] / 1000.0, v[n * 9 / 10] / 1000.0);
        *sum += v[n / 2];
}

static void remove_scope(void) {
        char p[256];
        snprintf(p, sizeof p, "%s/cpuset%s", CGROUP_ROOT, SCOPE);
        (void) rmdir(p);
        *strrchr(p, '/') = 0;
        (void) rmdir(p);
}

int main(int argc, char **argv) {
        unsigned rounds = argc > 1 ? (unsigned) atoi(argv[1]) : 200, leases = argc > 2 ? (unsigned) atoi(argv[2]) : 16;
        uint64_t *t[4], sum = 0;
        char dir[] = "/tmp/bench-resview.XXXXXX", leasedir[64];
        cpu_set_t host, got;
        int lxcfs;

        if (rounds < 10 || !mkdtemp(dir))
                return 1;
        for (int i = 0; i < 4; i++)
                if (!(t[i] = calloc(rounds, sizeof(uint64_t))))
                        return 1;
        snprintf(leasedir, sizeof leasedir, "%s/cpus", dir);
        if (sched_getaffinity(0, sizeof host, &host) < 0)
                return 1;
        for (unsigned i = 0; i < leases; i++) {
                char id[32];
                snprintf(id, sizeof id, "other-%u", i);
                (void) cpu_lease_acquire(leasedir, id, &host, 1, &got);
        }
        lxcfs = lxcfs_check(LXCFS_ROOT, NULL);
        printf("LXCFS at %s: %s; %u rounds, %u other leases, %d host CPUs\n", LXCFS_ROOT,
               lxcfs >= 0 ? "answers" : strerror(-lxcfs), rounds, leases, CPU_COUNT(&host));
        for (unsigned r = 0; r < rounds; r++) {
                _cleanup_json_ json_object *config = json_tokener_parse(
                        "{\"mounts\":[],\"linux\":{\"resources\":{\"cpu\":{}}}}");
                ResourceView v = {};
                _cleanup_free_ char *list = NULL;
                uint64_t a = bench_now_ns();

                (void) lxcfs_check(LXCFS_ROOT, NULL);
                uint64_t b = bench_now_ns();
                (void) cpu_lease_acquire(leasedir, "bench", &host, 1, &got);
                (void) cpu_list_format(&got, &list);
                (void) cpu_lease_release(leasedir, "bench");
                uint64_t c = bench_now_ns();
                int k = resource_view_prepare_cpuset(SCOPE, list ?: "0");
                uint64_t d = bench_now_ns();
                remove_scope();
                uint64_t e = bench_now_ns();
                (void) resource_view_decide("runc", RESOURCE_VIEW_BEST_EFFORT, 1, 1ULL << 30, lxcfs, NULL, 2,
                                            1ULL << 34, &v, NULL);
                (void) resource_view_set_cpuset(&v, list ?: "0");
                (void) resource_view_apply(&v, LXCFS_ROOT, config);
                uint64_t f = bench_now_ns();
                resource_view_done(&v);
                if (k < 0 && r == 0)
                        printf("(cpuset not prepared: %s)\n", strerror(-k));
                t[0][r] = b - a;
                t[1][r] = c - b;
                t[2][r] = d - c;
                t[3][r] = f - e;
        }
        report("LXCFS health check", t[0], rounds, &sum);
        report("CPU lease taken and given back", t[1], rounds, &sum);
        report("v1 cpuset of the scope prepared", t[2], rounds, &sum);
        report("decision + config.json", t[3], rounds, &sum);
        printf("%-34s median %8.1f us\n", "sum of medians", sum / 1000.0);
        (void) rm_rf_at(AT_FDCWD, dir);
        return 0;
}
