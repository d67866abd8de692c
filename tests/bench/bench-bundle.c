/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-bundle: encrypted bundle extraction against plain `tar -x`. Builds (once) a tree of FILES files
 * totalling ~SIZE MiB, makes a bundle of it (bundle_create) and a plain tarball of it (`tar -cf`), then
 * measures, side by side in one run with the cases interleaved, the median wall time of bundle_extract()
 * (decrypt + validate + extract) and of `tar -xf` of the plain tarball into a fresh directory (removal of
 * each copy untimed), plus decryption alone, and prints throughputs and the ratio. Needs no privileges.
 *   bench-bundle [DIR [FILES [SIZE_MIB [ROUNDS]]]] */
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "bench-util.h"
#include "secrets/bundle-crypt.h"
#include "secrets/bundle.h"

/* dir/src/dNNN/fNNNNN.bin, 200 files per directory, incompressible content (neither side compresses). */
static int make_tree(const char *src, unsigned files, uint64_t bytes) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t per = (size_t) (bytes / files);
        char path[4096 + 64];
        struct stat st;

        if (stat(src, &st) == 0)
                return 0; /* reuse: building it dominates otherwise */
        if (mkdir_p(src, 0755) < 0 || !(buf = malloc(per)))
                return -errno;
        for (unsigned i = 0; i < files; i++) {
                randombytes_buf(buf, per);
                snprintf(path, sizeof path, "%s/d%03u", src, i / 200);
                (void) mkdir(path, 0755);
                snprintf(path, sizeof path, "%s/d%03u/f%05u.bin", src, i / 200, i);
                _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, i % 7 ? 0644 : 0755);
                if (fd < 0 || write_all(fd, buf, per) < 0)
                        return -errno;
        }
        return 0;
}

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

static int time_bundle(const char *bundle, const char *dest, const uint8_t *pk, const uint8_t *sk, uint64_t *ret) {
        _cleanup_close_ int fd = open(bundle, O_RDONLY | O_CLOEXEC), dfd = -EBADF;
        _cleanup_free_ char *err = NULL;
        char sha[SHA256_HEX_SIZE];
        uint64_t t0 = bench_now_ns();
        int r;

        if (fd < 0 || mkdir(dest, 0700) < 0 || (dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return -errno;
        r = bundle_extract(fd, pk, sk, "bench", dfd, NULL, sha, &err);
        *ret = bench_now_ns() - t0;
        if (r < 0)
                fprintf(stderr, "bundle_extract: %s\n", err ?: strerror(-r));
        return r;
}

/* Decryption alone: every chunk authenticated and thrown away. */
static int time_decrypt(const char *bundle, const uint8_t *pk, const uint8_t *sk, uint64_t *ret) {
        _cleanup_(bundle_opener_freep) BundleOpener *o = NULL;
        _cleanup_close_ int fd = open(bundle, O_RDONLY | O_CLOEXEC);
        char sha[SHA256_HEX_SIZE];
        uint64_t t0 = bench_now_ns();
        int r;

        if (fd < 0)
                return -errno;
        r = bundle_opener_new(fd, pk, sk, "bench", UINT64_MAX, &o, NULL);
        if (r >= 0)
                r = bundle_opener_finish(o, sha, NULL);
        *ret = bench_now_ns() - t0;
        return r;
}

static int make_inputs(const char *dir, const char *src, const char *tarball, const char *bundle,
                       const uint8_t *pk) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *err = NULL;
        char sha[SHA256_HEX_SIZE];
        int r;

        (void) unlink(tarball);
        (void) unlink(bundle);
        if (run((const char *const[]) { "tar", "-C", src, "-cf", tarball, ".", NULL }) < 0)
                return fprintf(stderr, "tar -c failed\n"), -EIO;
        fd = open(bundle, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        r = bundle_create(src, pk, "bench", fd, NULL, sha, &err);
        if (r < 0)
                fprintf(stderr, "bundle_create: %s\n", err ?: strerror(-r));
        return r;
}

int main(int argc, char *argv[]) {
        const char *dir = argc > 1 ? argv[1] : "/var/tmp/pond-bench-bundle";
        unsigned files = argc > 2 ? (unsigned) atoi(argv[2]) : 2000;
        uint64_t bytes = (argc > 3 ? strtoull(argv[3], NULL, 10) : 256) << 20;
        unsigned rounds = argc > 4 ? (unsigned) atoi(argv[4]) : 5;
        char src[4096], tarball[4096], bundle[4096], dest_b[4096], dest_t[4096];
        uint64_t b_ns[64], t_ns[64], d_ns[64];
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE], *sk;

        if (rounds == 0 || rounds > 64 || files == 0 || sodium_init() < 0 ||
            !(sk = sodium_malloc(KEY_SEAL_SECRET_SIZE)))
                return fprintf(stderr, "bad arguments\n"), 2;
        crypto_box_keypair(pk, sk);
        snprintf(src, sizeof src, "%s/src", dir);
        snprintf(tarball, sizeof tarball, "%s/plain.tar", dir);
        snprintf(bundle, sizeof bundle, "%s/src.bundle", dir);
        snprintf(dest_b, sizeof dest_b, "%s/x-bundle", dir);
        snprintf(dest_t, sizeof dest_t, "%s/x-tar", dir);
        if (make_tree(src, files, bytes) < 0 || make_inputs(dir, src, tarball, bundle, pk) < 0)
                return fprintf(stderr, "cannot build the inputs in %s\n", dir), 1;
        for (unsigned i = 0; i < rounds; i++) {
                (void) rm_rf_at(AT_FDCWD, dest_b);
                (void) rm_rf_at(AT_FDCWD, dest_t);
                if (time_bundle(bundle, dest_b, pk, sk, &b_ns[i]) < 0)
                        return 1;
                if (mkdir(dest_t, 0700) < 0)
                        return perror("mkdir"), 1;
                uint64_t t0 = bench_now_ns();
                if (run((const char *const[]) { "tar", "-C", dest_t, "-xf", tarball, NULL }) < 0)
                        return fprintf(stderr, "tar -x failed\n"), 1;
                t_ns[i] = bench_now_ns() - t0;
                if (time_decrypt(bundle, pk, sk, &d_ns[i]) < 0)
                        return fprintf(stderr, "decrypt failed\n"), 1;
        }
        (void) rm_rf_at(AT_FDCWD, dest_b);
        (void) rm_rf_at(AT_FDCWD, dest_t);
        sodium_free(sk);
        double mib = (double) bytes / (1 << 20);
        uint64_t mb = bench_median(b_ns, rounds), mt = bench_median(t_ns, rounds), md = bench_median(d_ns, rounds);
        printf("tree: %u files, %.0f MiB, %u rounds (median)\n", files, mib, rounds);
        printf("bundle decrypt+extract: %8.1f ms  %7.0f MiB/s\n", mb / 1e6, mib / (mb / 1e9));
        printf("tar -x (plain):         %8.1f ms  %7.0f MiB/s\n", mt / 1e6, mib / (mt / 1e9));
        printf("decrypt only:           %8.1f ms  %7.0f MiB/s\n", md / 1e6, mib / (md / 1e9));
        printf("ratio bundle / tar -x:  %.2f\n", (double) mb / (double) mt);
        return 0;
}
