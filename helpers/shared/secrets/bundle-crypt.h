/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bundle-crypt.h: the bundle file format (docs/secrets.md), independent of what the stream carries:
 *   "POND-BUNDLE-1\n" | u32be n | sealed key (n bytes) | secretstream header (24) | chunk...
 *   chunk = u32be m | crypto_secretstream_xchacha20poly1305 ciphertext (m bytes, at most BUNDLE_CHUNK_SIZE
 *   plaintext bytes + 17), the first chunk authenticating every header byte before it as additional data,
 *   the last (and only the last) tagged FINAL, nothing after it.
 * The sealed key is seal_bound(SEAL_KIND_BUNDLE_KEY, job id, 32-byte secretstream key). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hash/hash.h"
#include "secrets/keys.h"

#define BUNDLE_MAGIC "POND-BUNDLE-1\n"
#define BUNDLE_MAGIC_SIZE 14
#define BUNDLE_CHUNK_SIZE (64U * 1024U)

/* Writer: bytes in, bundle out to fd. */
typedef struct BundleSealer BundleSealer;

/* Makes a fresh key, seals it to worker_pk for job_id and writes the header to out_fd. */
int bundle_sealer_new(int out_fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id,
                      BundleSealer **ret);
int bundle_sealer_write(BundleSealer *s, const void *p, size_t n);
/* Writes the FINAL chunk; ret_sha: sha256 hex of every byte written to out_fd. */
int bundle_sealer_finish(BundleSealer *s, char ret_sha[SHA256_HEX_SIZE]);
/* Wipes the key state and frees; NULL is fine. Does not close out_fd. */
BundleSealer *bundle_sealer_free(BundleSealer *s);
static inline void bundle_sealer_freep(BundleSealer **s) {
        bundle_sealer_free(*s);
}

/* Reader: a bundle from fd in, the authenticated plaintext out, chunk by chunk (bounded memory). */
typedef struct BundleOpener BundleOpener;

/* Reads and checks the header and unseals the key: -EBADMSG with a message for a bundle that is not one,
 * or not for this worker (pk, sk) and job. At most max_bytes are ever read from fd (-E2BIG beyond). */
int bundle_opener_new(int fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk,
                      const char *job_id, uint64_t max_bytes, BundleOpener **ret, char **ret_error);
/* A BundleReadFn (bundle.h): the next authenticated chunk's plaintext (valid until the next call), 0 after
 * the FINAL chunk, -EBADMSG for a forged, reordered or truncated chunk or bytes after FINAL. */
ssize_t bundle_opener_read(void *opener, const void **ret_buf, char **ret_error);
/* Reads and authenticates what is left up to FINAL and EOF; ret_sha: sha256 hex of every byte of the file. */
int bundle_opener_finish(BundleOpener *o, char ret_sha[SHA256_HEX_SIZE], char **ret_error);
BundleOpener *bundle_opener_free(BundleOpener *o);
static inline void bundle_opener_freep(BundleOpener **o) {
        bundle_opener_free(*o);
}

/* Encrypts an arbitrary byte stream (e.g. a hand-made tar) read from in_fd into a bundle on out_fd: what
 * bundle_create() does after the tar writer. For tests and tooling. */
int bundle_encrypt_fd(int in_fd, int out_fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id,
                      char ret_sha[SHA256_HEX_SIZE]);
