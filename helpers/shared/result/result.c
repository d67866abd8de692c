/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* result.c: the result directory's life: staging (.ID.tmp), signing and the atomic, durable publish (fsync
 * everything, rename, fsync the parent), abort (recursive removal that follows nothing), and verification of
 * a published result against a pinned key, including every artifact byte. */
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/json-util.h"
#include "result/collect.h"
#include "result/result.h"
#include "result/transcript.h"
#include "secrets/keys.h"

/* Removal and fsync walk the staged dir, artifacts/ below it mirroring a workspace up to COLLECT_MAX_DEPTH. */
#define RESULT_WALK_MAX_DEPTH (COLLECT_MAX_DEPTH + 16)

static int stage_name(const char *job_id, char ret[JOB_ID_MAX + 8]) {
        if (!job_id_is_valid(job_id))
                return -EINVAL;
        snprintf(ret, JOB_ID_MAX + 8, ".%s.tmp", job_id);
        return 0;
}

int result_stage_abort(int results_dirfd, const char *job_id) {
        char name[JOB_ID_MAX + 8];
        int r;

        r = stage_name(job_id, name);
        if (r < 0)
                return r;
        return rm_rf_at(results_dirfd, name);
}

int result_stage_open(int results_dirfd, const char *job_id, int *ret_staged_dirfd) {
        char name[JOB_ID_MAX + 8];
        struct stat st;
        int fd, r;

        r = stage_name(job_id, name);
        if (r < 0)
                return r;
        if (fstatat(results_dirfd, job_id, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                return -EEXIST;
        if (errno != ENOENT)
                return negative_errno();
        r = rm_rf_at(results_dirfd, name);
        if (r < 0)
                return r;
        if (mkdirat(results_dirfd, name, 0700) < 0)
                return negative_errno();
        fd = openat(results_dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret_staged_dirfd = fd;
        return 0;
}

/* fsync()s every regular file and directory below fd, then fd itself. */
static int fsync_tree(int fd, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        if (depth >= RESULT_WALK_MAX_DEPTH)
                return -ELOOP;
        r = opendir_fd(fd, &d);
        if (r < 0)
                return r;
        for (struct dirent *de; (errno = 0, de = readdir(d));) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                        continue;
                _cleanup_close_ int sub = openat(fd, de->d_name,
                                                 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (sub < 0)
                        return negative_errno();
                r = S_ISDIR(st.st_mode) ? fsync_tree(sub, depth + 1) : RET_NERRNO(fsync(sub));
                if (r < 0)
                        return r;
        }
        if (errno > 0)
                return -errno;
        return RET_NERRNO(fsync(fd));
}

static int write_new_file(int dirfd, const char *name, const void *p, size_t n) {
        _cleanup_close_ int fd = -EBADF;
        const uint8_t *b = p;

        fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return negative_errno();
        if (fchmod(fd, 0644) < 0)
                return negative_errno();
        while (n > 0) {
                ssize_t k = write(fd, b, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                b += k;
                n -= (size_t) k;
        }
        return 0;
}

#define SIG_TEXT_SIZE (sodium_base64_ENCODED_LEN(crypto_sign_BYTES, sodium_base64_VARIANT_ORIGINAL) + 1)

/* result.json bytes (serialization + "\n") and result.sig bytes (base64(signature) + "\n"). */
static int result_sign(json_object *result, const uint8_t *sign_sk, char **ret_json, size_t *ret_len,
                       char ret_sig[SIG_TEXT_SIZE]) {
        uint8_t sig[crypto_sign_BYTES];
        size_t len = 0;

        const char *s = json_object_to_json_string_length(result, RESULT_JSON_FLAGS, &len);
        if (!s)
                return -ENOMEM;
        char *buf = malloc(len + 1);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, s, len);
        buf[len++] = '\n';
        if (crypto_sign_detached(sig, NULL, (const uint8_t *) buf, len, sign_sk) < 0) {
                free(buf);
                return -EIO;
        }
        sodium_bin2base64(ret_sig, sodium_base64_ENCODED_LEN(crypto_sign_BYTES, sodium_base64_VARIANT_ORIGINAL),
                          sig, sizeof sig, sodium_base64_VARIANT_ORIGINAL);
        strcat(ret_sig, "\n");
        *ret_json = buf;
        *ret_len = len;
        return 0;
}

int result_write_signed(int results_dirfd, const char *job_id, json_object *result, const uint8_t *sign_sk,
                        int staged_dirfd) {
        char name[JOB_ID_MAX + 8];
        char sig[SIG_TEXT_SIZE];
        _cleanup_free_ char *json = NULL;
        json_object *id;
        size_t len = 0;
        int r;

        r = stage_name(job_id, name);
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(result, "job_id", &id) || !json_object_is_type(id, json_type_string) ||
            !streq(json_object_get_string(id), job_id))
                return -EINVAL;
        r = result_sign(result, sign_sk, &json, &len, sig);
        if (r < 0)
                return r;
        r = write_new_file(staged_dirfd, RESULT_JSON_FILE, json, len);
        if (r < 0)
                return r;
        r = write_new_file(staged_dirfd, RESULT_SIG_FILE, sig, strlen(sig));
        if (r < 0)
                return r;
        /* Everything durable before the name appears: after a crash ID is either absent or complete. */
        r = fsync_tree(staged_dirfd, 0);
        if (r < 0)
                return r;
        if (renameat2(results_dirfd, name, results_dirfd, job_id, RENAME_NOREPLACE) < 0)
                return negative_errno();
        return RET_NERRNO(fsync(results_dirfd));
}

#define refuse error_set

/* Reads a whole regular file below dirfd, refusing more than max bytes (-EFBIG). NUL-terminated. */
static int read_bounded(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat_beneath(dirfd, name, O_RDONLY, 0);

        if (fd < 0)
                return fd;
        return read_full_fd(fd, max, ret, ret_len);
}

static int verify_signature(int dirfd, const uint8_t pk[32], char **ret_json, size_t *ret_len,
                            char **ret_error) {
        _cleanup_free_ char *json = NULL, *sigtext = NULL;
        uint8_t sig[crypto_sign_BYTES];
        size_t len, siglen, n;
        int r;

        r = read_bounded(dirfd, RESULT_JSON_FILE, RESULT_JSON_MAX, &json, &len);
        if (r < 0)
                return refuse(ret_error, r, "cannot read %s: %s", RESULT_JSON_FILE, strerror(-r));
        r = read_bounded(dirfd, RESULT_SIG_FILE, RESULT_SIG_MAX, &sigtext, &siglen);
        if (r < 0)
                return refuse(ret_error, r, "cannot read %s: %s", RESULT_SIG_FILE, strerror(-r));
        if (siglen > 0 && sigtext[siglen - 1] == '\n')
                sigtext[--siglen] = 0;
        if (sodium_base642bin(sig, sizeof sig, sigtext, siglen, NULL, &n, NULL,
                              sodium_base64_VARIANT_ORIGINAL) < 0 ||
            n != sizeof sig)
                return refuse(ret_error, -EBADMSG, "%s is not one line of base64 of a %d-byte signature",
                              RESULT_SIG_FILE, crypto_sign_BYTES);
        if (crypto_sign_verify_detached(sig, (const uint8_t *) json, len, pk) < 0)
                return refuse(ret_error, -EBADMSG, "signature does not verify");
        *ret_json = TAKE_PTR(json);
        *ret_len = len;
        return 0;
}

static int parse_result(const char *json, size_t len, json_object **ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        json_tokener *tok = json_tokener_new();
        size_t end;

        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, json, (int) len);
        bool ok = json_tokener_get_error(tok) == json_tokener_success;
        end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!ok || !json_object_is_type(o, json_type_object) || strspn(json + end, " \t\r\n") != len - end)
                return refuse(ret_error, -EBADMSG, "%s is not one JSON object", RESULT_JSON_FILE);
        *ret = TAKE_PTR(o);
        return 0;
}

static int verify_fields(json_object *o, const char *expect_job_id, const char *expect_input_sha,
                         char **ret_error) {
        json_object *v;

        if (!json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) != RESULT_VERSION)
                return refuse(ret_error, -EBADMSG, "version is not %d", RESULT_VERSION);
        const char *job_id = json_get_str(o, "job_id"), *input_sha = json_get_str(o, "input_sha");
        if (!job_id)
                return refuse(ret_error, -EBADMSG, "job_id is missing or not a string");
        if (expect_job_id && !streq(job_id, expect_job_id))
                return refuse(ret_error, -EBADMSG, "job_id is '%s', expected '%s'", job_id, expect_job_id);
        /* null: a job refused before its input could be hashed. It then matches no expected input. */
        if (!input_sha &&
            !(json_object_object_get_ex(o, "input_sha", &v) && json_object_is_type(v, json_type_null)))
                return refuse(ret_error, -EBADMSG, "input_sha is missing or neither a string nor null");
        if (expect_input_sha && (!input_sha || !streq(input_sha, expect_input_sha)))
                return refuse(ret_error, -EBADMSG, "input_sha mismatch: result has '%s', expected '%s'",
                              input_sha ?: "null", expect_input_sha);
        return 0;
}

static int verify_one_artifact(int artdir, json_object *a, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        uint8_t digest[SHA256_SIZE];
        char hex[SHA256_HEX_SIZE];
        json_object *size;
        uint64_t n;
        struct stat st;
        int r;

        const char *path = json_get_str(a, "path"), *sha = json_get_str(a, "sha256");
        if (!path || !sha || !json_object_object_get_ex(a, "size", &size) ||
            !json_object_is_type(size, json_type_int) || json_object_get_int64(size) < 0)
                return refuse(ret_error, -EBADMSG, "artifact entry without path, size or sha256");
        if (artdir < 0)
                return refuse(ret_error, -EBADMSG, "artifact '%s' is missing (no %s/)", path,
                              RESULT_ARTIFACTS_DIR);
        /* The manifest is signed, but its paths still only ever resolve beneath artifacts/. */
        fd = openat_beneath(artdir, path, O_RDONLY, 0);
        if (fd < 0)
                return refuse(ret_error, -EBADMSG, "artifact '%s' cannot be opened: %s", path, strerror(-fd));
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return refuse(ret_error, -EBADMSG, "artifact '%s' is not a regular file", path);
        r = hash_fd(fd, -EBADF, (uint64_t) json_object_get_int64(size), digest, &n);
        if (r < 0 && r != -EFBIG)
                return refuse(ret_error, r, "artifact '%s' cannot be read: %s", path, strerror(-r));
        if (r == -EFBIG || n != (uint64_t) json_object_get_int64(size))
                return refuse(ret_error, -EBADMSG, "artifact '%s' size mismatch", path);
        hex_encode(digest, sizeof digest, hex);
        if (!streq(hex, sha))
                return refuse(ret_error, -EBADMSG, "artifact '%s' sha256 mismatch", path);
        return 0;
}

/* Counts the regular files below fd, refusing anything neither a file nor a directory; stops past max. */
static int count_files(int fd, unsigned depth, size_t max, size_t *n) {
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        if (depth >= RESULT_WALK_MAX_DEPTH)
                return -ELOOP;
        r = opendir_fd(fd, &d);
        if (r < 0)
                return r;
        for (struct dirent *de; *n <= max && (errno = 0, de = readdir(d));) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                if (S_ISREG(st.st_mode)) {
                        (*n)++;
                        continue;
                }
                if (!S_ISDIR(st.st_mode))
                        return -EBADMSG;
                _cleanup_close_ int sub = openat_beneath(fd, de->d_name, O_RDONLY | O_DIRECTORY, 0);
                if (sub < 0)
                        return sub;
                r = count_files(sub, depth + 1, max, n);
                if (r < 0)
                        return r;
        }
        return errno > 0 ? -errno : 0;
}

static int verify_artifacts(int dirfd, json_object *o, char **ret_error) {
        _cleanup_close_ int artdir = -EBADF;
        char hex[SHA256_HEX_SIZE];
        json_object *arr;
        size_t n_files = 0, n_found = 0;
        int r;

        if (!json_object_object_get_ex(o, "artifacts", &arr) || !json_object_is_type(arr, json_type_array))
                return refuse(ret_error, -EBADMSG, "artifacts is missing or not an array");
        const char *output_sha = json_get_str(o, "output_sha");
        r = manifest_json_sha(arr, hex);
        if (r < 0)
                return refuse(ret_error, r, "cannot serialize the artifacts manifest");
        if (!output_sha || !streq(output_sha, hex))
                return refuse(ret_error, -EBADMSG,
                              "output_sha mismatch: result has '%s', manifest digest is '%s'",
                              output_sha ?: "(none)", hex);

        artdir = openat_beneath(dirfd, RESULT_ARTIFACTS_DIR, O_RDONLY | O_DIRECTORY, 0);
        if (artdir < 0 && artdir != -ENOENT)
                return refuse(ret_error, artdir, "cannot open %s/: %s", RESULT_ARTIFACTS_DIR,
                              strerror(-artdir));
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
                json_object *a = json_object_array_get_idx(arr, i);
                const char *kind = json_get_str(a, "kind");
                if (!kind)
                        return refuse(ret_error, -EBADMSG, "artifact entry %zu without kind", i);
                if (!streq(kind, "file"))
                        continue;
                n_files++;
                r = verify_one_artifact(artdir, a, ret_error);
                if (r < 0)
                        return r;
        }
        /* Paths are unique, so equal counts mean artifacts/ holds exactly the signed files and nothing else. */
        r = artdir >= 0 ? count_files(artdir, 0, n_files, &n_found) : 0;
        if (r < 0 || n_found != n_files)
                return refuse(ret_error, r < 0 && r != -EBADMSG ? r : -EBADMSG,
                              "%s/ holds files or entries not in the signed manifest", RESULT_ARTIFACTS_DIR);
        return 0;
}

/* The log's files are signed through their digests in "log": each file there must hash to its digest, and
 * log/ must hold nothing else. A result without "log" (nothing ran) has no log/. */
static const char *const log_files[] = { "stdout", "stderr", "index" };

static int verify_one_log(int logdir, json_object *log, const char *name, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        uint8_t digest[SHA256_SIZE];
        char key[32], hex[SHA256_HEX_SIZE];
        struct stat st;
        uint64_t n;
        int r;

        snprintf(key, sizeof key, "%s_sha256", name);
        const char *sha = json_get_str(log, key);
        if (!sha)
                return refuse(ret_error, -EBADMSG, "log.%s is missing: %s/%s is not covered by the signature", key,
                              RESULT_LOG_DIR, name);
        fd = openat_beneath(logdir, name, O_RDONLY, 0);
        if (fd < 0)
                return refuse(ret_error, -EBADMSG, "%s/%s cannot be opened: %s", RESULT_LOG_DIR, name, strerror(-fd));
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return refuse(ret_error, -EBADMSG, "%s/%s is not a regular file", RESULT_LOG_DIR, name);
        r = hash_fd(fd, -EBADF, UINT64_MAX, digest, &n);
        if (r < 0)
                return refuse(ret_error, r, "%s/%s cannot be read: %s", RESULT_LOG_DIR, name, strerror(-r));
        hex_encode(digest, sizeof digest, hex);
        if (!streq(hex, sha))
                return refuse(ret_error, -EBADMSG, "%s/%s sha256 mismatch: the log is not what was signed",
                              RESULT_LOG_DIR, name);
        return 0;
}

static int verify_log(int dirfd, json_object *o, char **ret_error) {
        _cleanup_close_ int logdir = -EBADF;
        json_object *log = NULL;
        size_t n_found = 0;
        int r;

        (void) json_object_object_get_ex(o, "log", &log);
        logdir = openat_beneath(dirfd, RESULT_LOG_DIR, O_RDONLY | O_DIRECTORY, 0);
        if (logdir < 0 && logdir != -ENOENT)
                return refuse(ret_error, logdir, "cannot open %s/: %s", RESULT_LOG_DIR, strerror(-logdir));
        if (!json_object_is_type(log, json_type_object)) {
                if (logdir >= 0)
                        return refuse(ret_error, -EBADMSG, "%s/ is present but the result signs no log",
                                      RESULT_LOG_DIR);
                return 0;
        }
        if (logdir < 0)
                return refuse(ret_error, -EBADMSG, "%s/ is missing", RESULT_LOG_DIR);
        for (size_t i = 0; i < ELEMENTSOF(log_files); i++) {
                r = verify_one_log(logdir, log, log_files[i], ret_error);
                if (r < 0)
                        return r;
        }
        r = count_files(logdir, RESULT_WALK_MAX_DEPTH - 1, ELEMENTSOF(log_files), &n_found);
        if (r < 0 || n_found != ELEMENTSOF(log_files))
                return refuse(ret_error, r < 0 && r != -EBADMSG ? r : -EBADMSG,
                              "%s/ holds files not covered by the signature", RESULT_LOG_DIR);
        return 0;
}

/* "signer": {key_id, worker_id}. The signature verified with pk already; a key_id that names another key
 * is a result that lies about its signer. */
static int verify_signer(json_object *o, const uint8_t pk[32], char **ret_error) {
        char fp[KEY_FINGERPRINT_SIZE];
        json_object *signer;

        if (!json_object_object_get_ex(o, "signer", &signer))
                return 0; /* results signed before the signer was named */
        const char *key_id = json_get_str(signer, "key_id");
        key_fingerprint(pk, KEY_SIGN_PUBLIC_SIZE, fp);
        if (!key_id || !streq(key_id, fp))
                return refuse(ret_error, -EBADMSG, "signer.key_id is '%s', but the key that verifies is %s",
                              key_id ?: "(none)", fp);
        return 0;
}

int result_verify(const char *dir, const uint8_t pk[32], const char *expect_job_id,
                  const char *expect_input_sha, json_object **ret_result, char **ret_error) {
        _cleanup_close_ int dirfd = -EBADF;
        _cleanup_free_ char *json = NULL;
        _cleanup_json_ json_object *o = NULL;
        size_t len = 0;
        int r;

        if (ret_error)
                *ret_error = NULL;
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return refuse(ret_error, negative_errno(), "cannot open result directory '%s': %m", dir);
        r = verify_signature(dirfd, pk, &json, &len, ret_error);
        if (r < 0)
                return r;
        /* Only now is the JSON parsed: nothing unsigned ever reaches the parser. */
        r = parse_result(json, len, &o, ret_error);
        if (r < 0)
                return r;
        r = verify_fields(o, expect_job_id, expect_input_sha, ret_error);
        if (r < 0)
                return r;
        r = verify_artifacts(dirfd, o, ret_error);
        if (r >= 0)
                r = verify_log(dirfd, o, ret_error);
        if (r >= 0)
                r = transcript_verify(dirfd, o, ret_error);
        if (r >= 0)
                r = verify_signer(o, pk, ret_error);
        if (r < 0)
                return r;
        if (ret_result)
                *ret_result = TAKE_PTR(o);
        return 0;
}
