/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* blob.h: the image store's content-addressed blobs: "sha256:<64 hex>" digests, blobs written through a
 * streaming SHA-256 (libsodium) into an unnamed file that gets its name only once its digest is verified,
 * and small blobs (JSON) read back and verified again. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sodium.h>

#include "image/image-name.h"

void digest_of(const void *p, size_t n, char ret[DIGEST_SIZE]);

/* A blob being written: bytes go to an O_TMPFILE in the blob directory while they are hashed; the file
 * is linked under its digest only by blob_writer_commit(), so an interrupted write leaves nothing. */
typedef struct BlobWriter {
        int fd;
        int dirfd;      /* borrowed */
        uint64_t size, max;
        crypto_hash_sha256_state st;
} BlobWriter;

int blob_writer_open(BlobWriter *w, int blobs_dirfd, uint64_t max_bytes);
/* -EFBIG past max_bytes. */
int blob_writer_write(BlobWriter *w, const void *p, size_t n);
/* Copies fd to EOF into the writer. */
int blob_writer_copy_fd(BlobWriter *w, int fd);
/* Checks the digest against expected (NULL: none expected, the blob is named by what it is) and links
 * the blob: -EBADMSG on a mismatch (nothing is stored). An existing blob of that digest is kept (the same
 * bytes by definition). ret_digest may be NULL. */
int blob_writer_commit(BlobWriter *w, const char *expected, char ret_digest[DIGEST_SIZE], uint64_t *ret_size);
void blob_writer_done(BlobWriter *w);

/* Opens the blob read-only (O_NOFOLLOW, a regular file). */
int blob_open(int blobs_dirfd, const char *digest);
/* Reads a blob of at most max bytes and checks its digest again (-EBADMSG on a mismatch). NUL-terminated. */
int blob_read_verified(int blobs_dirfd, const char *digest, size_t max, char **ret, size_t *ret_len);
/* Reads an fd to EOF (at most max bytes) and checks it against digest: -EBADMSG on a mismatch. */
int blob_verify_fd(int fd, const char *digest, uint64_t max);
