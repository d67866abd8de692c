/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* blob.c: owns blob verification: digests, streaming SHA-256 while a blob is written (libsodium's
 * crypto_hash_sha256, which pond already links for signing), and the link-on-verify that keeps a blob
 * without a name until its bytes are known to be what its digest says. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "hash/hash.h"
#include "image/blob.h"

static void digest_format(const uint8_t d[SHA256_SIZE], char ret[DIGEST_SIZE]) {
        memcpy(ret, DIGEST_PREFIX, strlen(DIGEST_PREFIX));
        hex_encode(d, SHA256_SIZE, ret + strlen(DIGEST_PREFIX));
}

void digest_of(const void *p, size_t n, char ret[DIGEST_SIZE]) {
        uint8_t d[SHA256_SIZE];

        crypto_hash_sha256(d, p, n);
        digest_format(d, ret);
}

int blob_writer_open(BlobWriter *w, int blobs_dirfd, uint64_t max_bytes) {
        int fd = openat(blobs_dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0444);

        if (fd < 0)
                return -errno;
        *w = (BlobWriter) { .fd = fd, .dirfd = blobs_dirfd, .max = max_bytes };
        crypto_hash_sha256_init(&w->st);
        return 0;
}

int blob_writer_write(BlobWriter *w, const void *p, size_t n) {
        if ((uint64_t) n > w->max - w->size)
                return -EFBIG;
        w->size += n;
        crypto_hash_sha256_update(&w->st, p, n);
        return write_all(w->fd, p, n);
}

int blob_writer_copy_fd(BlobWriter *w, int fd) {
        uint8_t buf[128 * 1024];

        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                int r;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                r = blob_writer_write(w, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
}

int blob_writer_commit(BlobWriter *w, const char *expected, char ret_digest[DIGEST_SIZE], uint64_t *ret_size) {
        char digest[DIGEST_SIZE], proc[64];
        uint8_t d[SHA256_SIZE];

        crypto_hash_sha256_final(&w->st, d);
        digest_format(d, digest);
        if (expected && !streq(expected, digest))
                return -EBADMSG;
        /* Durable before it has a name: a crash after the link must not leave a named blob of zeros. */
        if (fsync(w->fd) < 0)
                return -errno;
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", w->fd);
        if (linkat(AT_FDCWD, proc, w->dirfd, digest_hex(digest), AT_SYMLINK_FOLLOW) < 0 && errno != EEXIST)
                return -errno;
        if (fsync(w->dirfd) < 0)
                return -errno;
        if (ret_digest)
                memcpy(ret_digest, digest, DIGEST_SIZE);
        if (ret_size)
                *ret_size = w->size;
        return 0;
}

void blob_writer_done(BlobWriter *w) {
        if (!w)
                return;
        if (w->fd >= 0)
                close(w->fd);
        *w = (BlobWriter) { .fd = -EBADF, .dirfd = -EBADF };
}

int blob_open(int blobs_dirfd, const char *digest) {
        struct stat st;
        int fd;

        if (!digest_is_valid(digest))
                return -EINVAL;
        fd = openat(blobs_dirfd, digest_hex(digest), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EBADFD;
        }
        return fd;
}

int blob_verify_fd(int fd, const char *digest, uint64_t max) {
        char got[DIGEST_SIZE];
        uint8_t d[SHA256_SIZE];
        int r;

        r = hash_fd(fd, -EBADF, max, d, NULL);
        if (r < 0)
                return r;
        digest_format(d, got);
        return streq(got, digest) ? 0 : -EBADMSG;
}

int blob_read_verified(int blobs_dirfd, const char *digest, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        char got[DIGEST_SIZE];
        size_t len;
        int r;

        fd = blob_open(blobs_dirfd, digest);
        if (fd < 0)
                return fd;
        r = read_full_fd(fd, max, &buf, &len);
        if (r < 0)
                return r;
        digest_of(buf, len, got);
        if (!streq(got, digest))
                return -EBADMSG;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}
