/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-input-hash: what input_sha costs on a big checkout, side by side in one run: the previous
 * implementation's way (one thread, libsodium's SHA-256), the tree digest now (libcrypto, several threads)
 * with no cache, the same again with the worker's digest cache warm, and an empty checkout. The checkout
 * is shared with bench-stage (1 GiB in 20,000 files by default), hashed from the page cache.
 *   bench-input-hash [DIR [FILES [SIZE_MIB [ROUNDS]]]] */
#include <fcntl.h>
#include <ftw.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "bench-util.h"
#include "hash/digest-cache.h"
#include "hash/hash.h"

static uint64_t sodium_bytes;

/* The old per-file hashing: read and hash each regular file in one thread with libsodium. */
static int sodium_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        crypto_hash_sha256_state s;
        uint8_t buf[64 * 1024], d[SHA256_SIZE];
        ssize_t n;

        if (flag != FTW_F || !S_ISREG(st->st_mode))
                return 0;
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        crypto_hash_sha256_init(&s);
        while ((n = read(fd, buf, sizeof buf)) > 0) {
                crypto_hash_sha256_update(&s, buf, (size_t) n);
                sodium_bytes += (uint64_t) n;
        }
        crypto_hash_sha256_final(&s, d);
        close(fd);
        return n < 0 ? -1 : 0;
}

static int digest_once(int dirfd, DigestCache *c, uint64_t *ret_ns) {
        uint8_t d[SHA256_SIZE];
        uint64_t t0 = bench_now_ns();
        int r = tree_digest_cached(dirfd, c, d);

        *ret_ns = bench_now_ns() - t0;
        return r;
}

int main(int argc, char *argv[]) {
        const char *dir = argc > 1 ? argv[1] : "/var/tmp/pond-bench-checkout";
        unsigned files = argc > 2 ? (unsigned) atoi(argv[2]) : 20000;
        uint64_t bytes = (argc > 3 ? strtoull(argv[3], NULL, 10) : 1024) << 20;
        unsigned rounds = argc > 4 ? (unsigned) atoi(argv[4]) : 3;
        uint64_t old_ns[16], cold_ns[16], warm_ns[16], empty_ns[16];
        char cache_dir[] = "/tmp/pond-bench-dcache.XXXXXX", empty[] = "/tmp/pond-bench-empty.XXXXXX";
        _cleanup_free_ char *cache_path = NULL;
        _cleanup_close_ int dirfd = -EBADF, empty_fd = -EBADF;
        int r;

        if (rounds == 0 || rounds > 16 || files == 0 || sodium_init() < 0)
                return fprintf(stderr, "bad arguments\n"), 2;
        r = bench_make_checkout(dir, files, bytes);
        if (r < 0)
                return fprintf(stderr, "cannot build the checkout %s: %s\n", dir, strerror(-r)), 1;
        if (!mkdtemp(cache_dir) || !mkdtemp(empty))
                return perror("mkdtemp"), 1;
        if (asprintf(&cache_path, "%s/cache", cache_dir) < 0)
                return 1;
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        empty_fd = open(empty, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0 || empty_fd < 0)
                return perror("open"), 1;
        /* Everything from the page cache: what is measured is hashing, not the disk. */
        (void) nftw(dir, sodium_one, 32, FTW_PHYS);

        for (unsigned i = 0; i < rounds; i++) {
                _cleanup_(digest_cache_freep) DigestCache *c = NULL;
                uint64_t t0 = bench_now_ns();

                sodium_bytes = 0;
                if (nftw(dir, sodium_one, 32, FTW_PHYS) < 0)
                        return fprintf(stderr, "libsodium walk failed\n"), 1;
                old_ns[i] = bench_now_ns() - t0;

                (void) unlink(cache_path);
                if (digest_cache_load(cache_path, &c, NULL) < 0 || digest_once(dirfd, c, &cold_ns[i]) < 0 ||
                    digest_cache_save(c, cache_path) < 0)
                        return fprintf(stderr, "cold digest failed\n"), 1;
                c = digest_cache_free(c);
                /* A second job: loads the cache the first one saved. */
                t0 = bench_now_ns();
                if (digest_cache_load(cache_path, &c, NULL) < 0 || tree_digest_cached(dirfd, c, (uint8_t[32]) {}) < 0 ||
                    digest_cache_save(c, cache_path) < 0)
                        return fprintf(stderr, "warm digest failed\n"), 1;
                warm_ns[i] = bench_now_ns() - t0;
                if (digest_cache_size(c) == 0)
                        fprintf(stderr, "warning: nothing cached (files younger than %llu s?)\n",
                                DIGEST_CACHE_RACY_NSEC / 1000000000ULL);
                if (digest_once(empty_fd, NULL, &empty_ns[i]) < 0)
                        return fprintf(stderr, "empty digest failed\n"), 1;
        }
        (void) unlink(cache_path);
        (void) rmdir(cache_dir);
        (void) rmdir(empty);

        uint64_t mo = bench_median(old_ns, rounds), mc = bench_median(cold_ns, rounds);
        uint64_t mw = bench_median(warm_ns, rounds), me = bench_median(empty_ns, rounds);
        double gb = (double) sodium_bytes / 1e9;
        printf("checkout: %u files, %.2f GB, %u rounds (median), %ld CPUs\n", files, gb, rounds,
               sysconf(_SC_NPROCESSORS_ONLN));
        printf("old: 1 thread, libsodium    %9.1f ms  %5.2f GB/s\n", mo / 1e6, gb / (mo / 1e9));
        printf("now: no cache (first job)   %9.1f ms  %5.2f GB/s  %.1fx faster\n", mc / 1e6, gb / (mc / 1e9),
               (double) mo / (double) mc);
        printf("now: warm cache (next job)  %9.1f ms  (load+walk+save)\n", mw / 1e6);
        printf("empty checkout              %9.3f ms\n", me / 1e6);
        return 0;
}
