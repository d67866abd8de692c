/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-util.c: the benchmarks' clock, medians and synthetic checkout. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "bench-util.h"

uint64_t bench_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

uint64_t bench_median(uint64_t *v, size_t n) {
        qsort(v, n, sizeof *v, cmp_u64);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_make_checkout(const char *dir, unsigned files, uint64_t bytes) {
        char path[4096], *buf;
        size_t per = (size_t) (bytes / files);
        struct stat st;

        if (stat(dir, &st) == 0)
                return 0; /* reuse: building it dominates otherwise */
        if (mkdir_p(dir, 0755) < 0)
                return -errno;
        buf = malloc(per);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < per; i++)
                buf[i] = (char) ('a' + i % 26);
        for (unsigned i = 0; i < files; i++) {
                snprintf(path, sizeof path, "%s/d%03u", dir, i / 200);
                (void) mkdir(path, 0755);
                snprintf(path, sizeof path, "%s/d%03u/f%05u.txt", dir, i / 200, i);
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write_all(fd, buf, per) < 0) {
                        free(buf);
                        return -errno;
                }
                close(fd);
        }
        free(buf);
        sync();
        return 0;
}
