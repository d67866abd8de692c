/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-seal.c: a sealed credential opens only with the worker's key pair, only for the job it was sealed for,
 * only as the kind it was sealed as, and not after any byte of it changed. */
#include <sodium.h>
#include <string.h>

#include "basic/macro.h"
#include "secrets/keys.h"
#include "secrets/seal.h"
#include "tests.h"

typedef struct Worker {
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        uint8_t *sk; /* sodium_malloc, as key_load_secret() gives it */
} Worker;

static int worker_new(Worker *w) {
        if (sodium_init() < 0)
                return -EIO;
        w->sk = sodium_malloc(KEY_SEAL_SECRET_SIZE);
        if (!w->sk)
                return -ENOMEM;
        crypto_box_keypair(w->pk, w->sk);
        return 0;
}

static void worker_done(Worker *w) {
        secret_free(w->sk);
        w->sk = NULL;
}

static const char secret[] = "sk-ant-api03-0123456789abcdef";

/* Unseals b64 with w for job_id; returns the error and keeps the message for the caller to check. */
static int try_unseal(const Worker *w, const char *job_id, const char *b64, char **ret_error) {
        uint8_t *out = NULL;
        size_t len = 0;
        int r = unseal_credential(w->pk, w->sk, job_id, b64, &out, &len, ret_error);
        if (r >= 0) {
                r = len == strlen(secret) && memcmp(out, secret, len) == 0 ? 0 : -EPROTO;
                secret_free(out);
        }
        return r;
}

TEST(round_trip) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ char *b64 = NULL, *err = NULL;
        uint8_t *out = NULL;
        size_t len = 0;

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(seal_credential(w.pk, "j-1", (const uint8_t *) secret, strlen(secret), &b64));
        ASSERT_TRUE(strstr(b64, secret) == NULL);
        ASSERT_OK(unseal_credential(w.pk, w.sk, "j-1", b64, &out, &len, &err));
        ASSERT_EQ(strlen(secret), len);
        ASSERT_TRUE(memcmp(out, secret, len) == 0);
        secret_free(out);
        ASSERT_TRUE(err == NULL);
}

TEST(other_job_refused) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ char *b64 = NULL, *err = NULL;

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(seal_credential(w.pk, "j-1", (const uint8_t *) secret, strlen(secret), &b64));
        ASSERT_ERROR(EBADMSG, try_unseal(&w, "j-2", b64, &err));
        ASSERT_CONTAINS("another job", err);
        /* A prefix or extension of the id is another id. */
        ASSERT_ERROR(EBADMSG, try_unseal(&w, "j-10", b64, &err));
        ASSERT_ERROR(EBADMSG, try_unseal(&w, "j", b64, &err));
        ASSERT_OK(try_unseal(&w, "j-1", b64, &err));
}

TEST(other_worker_refused) {
        _cleanup_(worker_done) Worker w = {}, other = {};
        _cleanup_free_ char *b64 = NULL, *err = NULL;

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(worker_new(&other));
        ASSERT_OK(seal_credential(w.pk, "j-1", (const uint8_t *) secret, strlen(secret), &b64));
        ASSERT_ERROR(EBADMSG, try_unseal(&other, "j-1", b64, &err));
        ASSERT_CONTAINS("another worker", err);
}

TEST(every_flipped_byte_refused) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ uint8_t *sealed = NULL;
        size_t n = 0;

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(seal_bound(w.pk, SEAL_KIND_CREDENTIAL, "j-1", (const uint8_t *) secret, strlen(secret), &sealed,
                             &n));
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *err = NULL;
                uint8_t *out = NULL;
                size_t len = 0;

                sealed[i] ^= 0x01;
                int r = unseal_bound(w.pk, w.sk, SEAL_KIND_CREDENTIAL, "j-1", sealed, n, &out, &len, &err);
                sealed[i] ^= 0x01;
                ASSERT_ERROR(EBADMSG, r);
                ASSERT_TRUE(out == NULL);
        }
}

TEST(tampered_base64_refused) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ char *b64 = NULL, *err = NULL;

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(seal_credential(w.pk, "j-1", (const uint8_t *) secret, strlen(secret), &b64));
        b64[10] = b64[10] == 'A' ? 'B' : 'A';
        ASSERT_ERROR(EBADMSG, try_unseal(&w, "j-1", b64, &err));
        b64[10] = 0;
        ASSERT_ERROR(EBADMSG, try_unseal(&w, "j-1", b64, &err));
        ASSERT_ERROR(EBADMSG, try_unseal(&w, "j-1", "", &err));
        ASSERT_ERROR(EBADMSG, try_unseal(&w, "j-1", "not base64!", &err));
        ASSERT_CONTAINS("base64", err);
}

TEST(kind_is_bound) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ uint8_t *sealed = NULL;
        _cleanup_free_ char *err = NULL;
        uint8_t *out = NULL;
        size_t n = 0, len = 0;

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(seal_bound(w.pk, SEAL_KIND_BUNDLE_KEY, "j-1", (const uint8_t *) secret, strlen(secret), &sealed,
                             &n));
        ASSERT_ERROR(EBADMSG, unseal_bound(w.pk, w.sk, SEAL_KIND_CREDENTIAL, "j-1", sealed, n, &out, &len, &err));
        ASSERT_CONTAINS("kind", err);
        ASSERT_OK(unseal_bound(w.pk, w.sk, SEAL_KIND_BUNDLE_KEY, "j-1", sealed, n, &out, &len, &err));
        secret_free(out);
}

TEST(bad_inputs_refused) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ char *b64 = NULL, *err = NULL;
        static uint8_t big[SEAL_SECRET_MAX + 1];
        uint8_t *out = NULL;
        size_t len = 0;

        ASSERT_OK(worker_new(&w));
        ASSERT_ERROR(EINVAL, seal_credential(w.pk, "../x", (const uint8_t *) secret, strlen(secret), &b64));
        ASSERT_ERROR(EINVAL, seal_credential(w.pk, "j-1", (const uint8_t *) secret, 0, &b64));
        ASSERT_ERROR(EINVAL, seal_credential(w.pk, "j-1", big, sizeof big, &b64));
        ASSERT_OK(seal_credential(w.pk, "j-1", big, SEAL_SECRET_MAX, &b64));
        ASSERT_OK(unseal_credential(w.pk, w.sk, "j-1", b64, &out, &len, &err));
        ASSERT_EQ(SEAL_SECRET_MAX, len);
        secret_free(out);
        ASSERT_ERROR(EINVAL, try_unseal(&w, "bad/id", b64, &err));
}

TEST_MAIN()
