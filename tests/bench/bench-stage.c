/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-stage: staging cost against copying. Builds (once) a checkout of FILES files totalling ~SIZE bytes,
 * then measures, side by side in one run, the median wall time of stage_setup()+stage_teardown() of an
 * untrusted-code-write workspace (idmapped read-only lower + tmpfs upper + overlay) and of `cp -a` of the
 * same tree (plus removal of the copy, untimed), and prints the ratio. Needs root.
 *   bench-stage [DIR [FILES [SIZE_MIB [ROUNDS]]]] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "bench-util.h"
#include "oci/oci.h"
#include "stage/stage.h"

static int run(const char *const argv[]) {
        int status;
        pid_t pid = fork();

        if (pid == 0) {
                execvp(argv[0], (char **) argv);
                _exit(127);
        }
        if (pid < 0 || waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

int main(int argc, char *argv[]) {
        const char *dir = argc > 1 ? argv[1] : "/var/tmp/pond-bench-checkout";
        unsigned files = argc > 2 ? (unsigned) atoi(argv[2]) : 20000;
        uint64_t bytes = (argc > 3 ? strtoull(argv[3], NULL, 10) : 1024) << 20;
        unsigned rounds = argc > 4 ? (unsigned) atoi(argv[4]) : 5;
        char job_dir[] = "/run/pond-bench-stage.XXXXXX", copy[4096];
        uint64_t stage_ns[64], cp_ns[64];
        int r;

        if (rounds == 0 || rounds > 64 || files == 0)
                return fprintf(stderr, "bad arguments\n"), 2;
        r = bench_make_checkout(dir, files, bytes);
        if (r < 0)
                return fprintf(stderr, "cannot build the checkout %s: %s\n", dir, strerror(-r)), 1;
        if (!mkdtemp(job_dir))
                return perror("mkdtemp"), 1;
        snprintf(copy, sizeof copy, "%s.copy", dir);
        /* Opened once, as acceptance does; staging clones from the fd. */
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return perror("open"), 1;
        for (unsigned i = 0; i < rounds; i++) {
                Stage s = {};
                uint64_t t0 = bench_now_ns();
                r = stage_setup(job_dir, NULL, dfd, FS_OVERLAY, 2ULL << 30, JOB_UID, JOB_GID, &s);
                if (r < 0)
                        return fprintf(stderr, "stage_setup: %s\n", strerror(-r)), 1;
                r = stage_teardown(job_dir);
                stage_ns[i] = bench_now_ns() - t0;
                stage_done(&s);
                if (r < 0)
                        return fprintf(stderr, "stage_teardown: %s\n", strerror(-r)), 1;

                t0 = bench_now_ns();
                if (run((const char *const[]) { "cp", "-a", dir, copy, NULL }) < 0)
                        return fprintf(stderr, "cp -a failed\n"), 1;
                cp_ns[i] = bench_now_ns() - t0;
                if (run((const char *const[]) { "rm", "-rf", copy, NULL }) < 0)
                        return fprintf(stderr, "rm -rf failed\n"), 1;
        }
        (void) rm_rf_at(AT_FDCWD, job_dir);
        uint64_t ms = bench_median(stage_ns, rounds), mc = bench_median(cp_ns, rounds);
        printf("checkout: %u files, %llu MiB, %u rounds\n", files, (unsigned long long) (bytes >> 20), rounds);
        printf("stage+discard (overlay) median: %.3f ms\n", ms / 1e6);
        printf("cp -a median:                   %.3f ms\n", mc / 1e6);
        printf("ratio cp -a / stage:            %.0fx\n", (double) mc / (double) ms);
        return 0;
}
