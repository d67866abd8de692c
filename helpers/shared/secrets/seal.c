/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seal.c: sealing secrets to a worker, bound to a job id and a kind (seal.h, docs/secrets.md). The plaintext
 * holds the secret, so it only ever lives in sodium_malloc'd memory, freed (and so wiped) on every path. */
#include <sodium.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/jobid.h"
#include "secrets/seal.h"

int seal_bound(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], SealKind kind, const char *job_id,
               const uint8_t *secret, size_t len, uint8_t **ret_sealed, size_t *ret_sealed_len) {
        _cleanup_sodium_ uint8_t *plain = NULL;
        _cleanup_free_ uint8_t *sealed = NULL;
        size_t id_len, plain_len;

        if (sodium_init() < 0)
                return -EIO;
        if (!job_id || !job_id_is_valid(job_id) || len == 0 || len > SEAL_SECRET_MAX)
                return -EINVAL;
        if (kind != SEAL_KIND_CREDENTIAL && kind != SEAL_KIND_BUNDLE_KEY)
                return -EINVAL;
        id_len = strlen(job_id);
        plain_len = SEAL_HEADER_SIZE + id_len + len;
        plain = sodium_malloc(plain_len);
        sealed = malloc(plain_len + crypto_box_SEALBYTES);
        if (!plain || !sealed)
                return -ENOMEM;
        memcpy(plain, SEAL_MAGIC, 4);
        plain[4] = SEAL_VERSION;
        plain[5] = (uint8_t) kind;
        plain[6] = (uint8_t) id_len;
        memcpy(plain + SEAL_HEADER_SIZE, job_id, id_len);
        memcpy(plain + SEAL_HEADER_SIZE + id_len, secret, len);
        if (crypto_box_seal(sealed, plain, plain_len, worker_pk) < 0)
                return -EIO;
        *ret_sealed = TAKE_PTR(sealed);
        *ret_sealed_len = plain_len + crypto_box_SEALBYTES;
        return 0;
}

/* Checks the opened plaintext's header against what the caller expects; returns the secret's offset. */
static int seal_check_header(const uint8_t *plain, size_t plain_len, SealKind kind, const char *expect_job_id,
                             char **ret_error) {
        size_t id_len = strlen(expect_job_id);

        if (plain_len < SEAL_HEADER_SIZE || memcmp(plain, SEAL_MAGIC, 4) != 0)
                return error_set(ret_error, -EBADMSG, "sealed blob: not a pond sealed secret");
        if (plain[4] != SEAL_VERSION)
                return error_set(ret_error, -EBADMSG, "sealed blob: version %u, expected %u", plain[4],
                                 SEAL_VERSION);
        if (plain[5] != (uint8_t) kind)
                return error_set(ret_error, -EBADMSG, "sealed blob: kind %u, expected %u (%s)", plain[5],
                                 (unsigned) kind, kind == SEAL_KIND_CREDENTIAL ? "credential" : "bundle key");
        /* The job id is not secret; comparing it in constant time is not needed, exactness is. */
        if (plain[6] != id_len || plain_len < SEAL_HEADER_SIZE + id_len ||
            memcmp(plain + SEAL_HEADER_SIZE, expect_job_id, id_len) != 0)
                return error_set(ret_error, -EBADMSG, "sealed blob: sealed for another job, not '%s'",
                                 expect_job_id);
        if (plain_len == SEAL_HEADER_SIZE + id_len)
                return error_set(ret_error, -EBADMSG, "sealed blob: empty secret");
        return (int) (SEAL_HEADER_SIZE + id_len);
}

int unseal_bound(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk, SealKind kind,
                 const char *expect_job_id, const uint8_t *sealed, size_t sealed_len, uint8_t **ret_secret,
                 size_t *ret_len, char **ret_error) {
        _cleanup_sodium_ uint8_t *plain = NULL, *secret = NULL;
        size_t plain_len, len;
        int off;

        if (sodium_init() < 0)
                return -EIO;
        if (!expect_job_id || !job_id_is_valid(expect_job_id))
                return error_set(ret_error, -EINVAL, "job id: not a valid job id");
        if (sealed_len <= crypto_box_SEALBYTES + SEAL_HEADER_SIZE || sealed_len > SEAL_SEALED_MAX)
                return error_set(ret_error, -EBADMSG, "sealed blob: %zu bytes, outside %u..%u", sealed_len,
                                 crypto_box_SEALBYTES + SEAL_HEADER_SIZE + 1, SEAL_SEALED_MAX);
        plain_len = sealed_len - crypto_box_SEALBYTES;
        plain = sodium_malloc(plain_len);
        if (!plain)
                return -ENOMEM;
        if (crypto_box_seal_open(plain, sealed, sealed_len, worker_pk, worker_sk) < 0)
                return error_set(ret_error, -EBADMSG, "sealed blob: does not open with this worker's key "
                                 "(sealed to another worker, or altered)");
        off = seal_check_header(plain, plain_len, kind, expect_job_id, ret_error);
        if (off < 0)
                return off;
        len = plain_len - (size_t) off;
        secret = sodium_malloc(len);
        if (!secret)
                return -ENOMEM;
        memcpy(secret, plain + off, len);
        if (sodium_mprotect_readonly(secret) < 0)
                return -EIO;
        *ret_secret = TAKE_PTR(secret);
        *ret_len = len;
        return 0;
}

int seal_credential(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id, const uint8_t *secret,
                    size_t len, char **ret_b64) {
        _cleanup_free_ uint8_t *sealed = NULL;
        _cleanup_free_ char *b64 = NULL;
        size_t sealed_len, b64_len;
        int r;

        r = seal_bound(worker_pk, SEAL_KIND_CREDENTIAL, job_id, secret, len, &sealed, &sealed_len);
        if (r < 0)
                return r;
        b64_len = sodium_base64_ENCODED_LEN(sealed_len, sodium_base64_VARIANT_ORIGINAL);
        b64 = malloc(b64_len);
        if (!b64)
                return -ENOMEM;
        sodium_bin2base64(b64, b64_len, sealed, sealed_len, sodium_base64_VARIANT_ORIGINAL);
        *ret_b64 = TAKE_PTR(b64);
        return 0;
}

int unseal_credential(const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk,
                      const char *expect_job_id, const char *b64, uint8_t **ret_secret, size_t *ret_len,
                      char **ret_error) {
        _cleanup_free_ uint8_t *sealed = NULL;
        size_t b64_len, sealed_len;
        const char *end = NULL;

        if (sodium_init() < 0)
                return -EIO;
        b64_len = b64 ? strlen(b64) : 0;
        if (b64_len == 0 || b64_len > sodium_base64_ENCODED_LEN(SEAL_SEALED_MAX, sodium_base64_VARIANT_ORIGINAL))
                return error_set(ret_error, -EBADMSG, "sealed blob: empty or longer than %u bytes sealed",
                                 SEAL_SEALED_MAX);
        sealed = malloc(b64_len);
        if (!sealed)
                return -ENOMEM;
        if (sodium_base642bin(sealed, b64_len, b64, b64_len, NULL, &sealed_len, &end,
                              sodium_base64_VARIANT_ORIGINAL) < 0 || end != b64 + b64_len)
                return error_set(ret_error, -EBADMSG, "sealed blob: not standard padded base64");
        return unseal_bound(worker_pk, worker_sk, SEAL_KIND_CREDENTIAL, expect_job_id, sealed, sealed_len,
                            ret_secret, ret_len, ret_error);
}
