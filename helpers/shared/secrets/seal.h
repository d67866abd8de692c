/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seal.h: secrets sealed to one worker for one job. A sealed blob is crypto_box_seal(worker X25519 public key,
 * header || job id || secret): only the holder of the worker's secret key opens it, and it opens only for the
 * job id it names, so a blob copied into another job's spec is refused. docs/secrets.md has the format byte
 * for byte. Anyone holding the worker's public key can seal: a blob proves confidentiality, not origin. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "secrets/keys.h"

/* What a sealed blob carries; part of the sealed header, so a bundle key is never accepted as a credential
 * or the other way round. */
typedef enum SealKind {
        SEAL_KIND_CREDENTIAL = 1,
        SEAL_KIND_BUNDLE_KEY = 2,
} SealKind;

#define SEAL_MAGIC "POND"
#define SEAL_VERSION 1
#define SEAL_HEADER_SIZE 7   /* "POND", version, kind, job id length */
#define SEAL_SECRET_MAX (64U * 1024U)
/* crypto_box_SEALBYTES (48) + header + longest job id + longest secret. */
#define SEAL_SEALED_MAX (48U + SEAL_HEADER_SIZE + 64U + SEAL_SECRET_MAX)

/* Seals secret (1..SEAL_SECRET_MAX bytes) of kind for job_id (a valid job id) to worker_pk. The result is
 * not secret: plain malloc. -EINVAL for an invalid job id or length. */
int seal_bound(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], SealKind kind, const char *job_id,
               const uint8_t *secret, size_t len, uint8_t **ret_sealed, size_t *ret_sealed_len);

/* Opens a blob from seal_bound() with the worker's key pair. The secret comes back in sodium_malloc'd,
 * read-only memory (free with secret_free()). Refuses with -EBADMSG and a message: a blob that does not open
 * with this key (sealed to another worker, or altered), an unknown version or kind, or another job id. */
int unseal_bound(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk, SealKind kind,
                 const char *expect_job_id, const uint8_t *sealed, size_t sealed_len, uint8_t **ret_secret,
                 size_t *ret_len, char **ret_error);

/* The same for credentials, as one line of standard padded base64 (the form job specs carry). */
int seal_credential(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id, const uint8_t *secret,
                    size_t len, char **ret_b64);
int unseal_credential(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk,
                      const char *expect_job_id, const char *b64, uint8_t **ret_secret, size_t *ret_len,
                      char **ret_error);
