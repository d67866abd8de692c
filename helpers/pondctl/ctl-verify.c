/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-verify.c: the verbs about trust: `result` and `verify` check a signed result against the pinned key,
 * `keygen` creates a worker's keys for enrollment, and `hash-input` predicts the input_sha a worker will
 * sign, so that the control plane can demand it with `verify --input-sha`. */
#include <fcntl.h>
#include <getopt.h>
#include <string.h>

#include "basic/fileio.h"
#include "ctl-options.h"
#include "ctl.h"
#include "hash/hash.h"
#include "image/blob.h"
#include "result/result.h"
#include "result/transcript.h"

/* One line per artifact: its path is whatever name the job gave a file, escaped like every string here. */
static void print_artifacts(FILE *f, json_object *result) {
        json_object *arts = json_object_object_get(result, "artifacts");
        size_t n = json_object_is_type(arts, json_type_array) ? json_object_array_length(arts) : 0;

        for (size_t i = 0; i < n; i++) {
                json_object *a = json_object_array_get_idx(arts, i);
                const char *sha = json_object_get_string(json_object_object_get(a, "sha256"));

                ctl_fprintf_untrusted(f, "  %-8s %-9s %12" PRId64 " %s%s%.16s\n",
                                      json_object_get_string(json_object_object_get(a, "kind")) ?: "?",
                                      json_object_get_string(json_object_object_get(a, "change")) ?: "",
                                      json_object_get_int64(json_object_object_get(a, "size")),
                                      json_object_get_string(json_object_object_get(a, "path")) ?: "?",
                                      sha ? "  " : "", sha ?: "");
        }
}

/* The exec transcript's totals (execs/index has each call: docs/result-format.md). */
static void print_execs(FILE *f, json_object *result) {
        json_object *x = json_object_object_get(result, TRANSCRIPT_DIR);

        if (!x)
                return;
        fprintf(f, "pond: execs %" PRId64 " (kept %" PRId64 " bytes of their streams, dropped %" PRId64 ")\n",
                json_object_get_int64(json_object_object_get(x, "count")),
                json_object_get_int64(json_object_object_get(x, "kept_bytes")),
                json_object_get_int64(json_object_object_get(x, "dropped_bytes")));
}

void ctl_result_print(FILE *f, json_object *result, const char *dir) {
        static const char *const fields[] = { "tenant", "input_sha", "profile", "backend", "tier", "image" };

        ctl_print_summary(f, result, dir);
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                json_object *v = json_object_object_get(result, fields[i]);
                ctl_fprintf_untrusted(f, "pond: %s %s\n", fields[i], v ? json_object_get_string(v) : "-");
        }
        ctl_usage_print(f, "pond: usage ", json_object_object_get(result, "usage"));
        print_execs(f, result);
        print_artifacts(f, result);
}

int ctl_result_verify(const char *dir, const uint8_t *pk, const char *job_id, const char *input_sha,
                      json_object **ret_result, char **ret_json, size_t *ret_len, char **ret_error) {
        _cleanup_free_ char *path = NULL, *before = NULL, *after = NULL;
        _cleanup_json_ json_object *result = NULL;
        size_t blen = 0, alen = 0;
        int r;

        *ret_error = NULL;
        if (asprintf(&path, "%s/%s", dir, RESULT_JSON_FILE) < 0)
                return -ENOMEM;
        if (ret_json && read_full_file(path, RESULT_JSON_MAX, &before, &blen) < 0)
                before = NULL;
        r = result_verify(dir, pk, job_id, input_sha, &result, ret_error);
        if (r < 0)
                return r;
        if (ret_json) {
                r = read_full_file(path, RESULT_JSON_MAX, &after, &alen);
                if (r < 0 || !before || alen != blen || memcmp(before, after, alen) != 0)
                        return asprintf(ret_error, "%s changed while it was being verified.", path) < 0 ? -ENOMEM :
                                                                                                     -ESTALE;
                *ret_json = TAKE_PTR(after);
                *ret_len = alen;
        }
        if (ret_result)
                *ret_result = TAKE_PTR(result);
        return 0;
}

int ctl_result_report(const char *dir, int r, json_object *result, const char *json, size_t len,
                      const char *error, bool as_json) {
        if (r == -ESTALE)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "%s", error ?: strerror(-r));
        if (r < 0) {
                ctl_printf_untrusted("FAILED: %s\n", error ?: strerror(-r));
                return CTL_EXIT_ERROR;
        }
        if (as_json) {
                /* Byte for byte as signed: json-c wrote every C0 control in it as \u00XX. */
                fwrite(json, 1, len, stdout);
                return 0;
        }
        printf("OK\n");
        ctl_result_print(stdout, result, dir);
        return 0;
}

/* Verifies dir and, with json, prints result.json byte for byte as verified (read again and compared, so
 * what is printed is what the signature covers). */
static int verify_and_print(const char *dir, const uint8_t *pk, const char *job_id, const char *input_sha,
                            bool json) {
        _cleanup_json_ json_object *result = NULL;
        _cleanup_free_ char *bytes = NULL, *err = NULL;
        size_t len = 0;
        int r;

        r = ctl_result_verify(dir, pk, job_id, input_sha, &result, json ? &bytes : NULL, &len, &err);
        return ctl_result_report(dir, r, result, bytes, len, err, json);
}

int ctl_verb_result(int argc, char *argv[]) {
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *dir = NULL;
        const char *id, *pubkey = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        bool json = false;
        const CtlOption options[] = { CTL_OPTION_JSON(&json), CTL_OPTION_PUBKEY(&pubkey), {} };
        int r;

        r = ctl_options_parse(argc, argv, options, NULL);
        if (r < 0 || ctl_job_id_arg(argc, argv, r, &id) < 0)
                return CTL_EXIT_USAGE;
        if (ctl_load_public_key(pubkey, pk) < 0)
                return CTL_EXIT_ERROR;
        if (job_paths_init(&paths, id) < 0 || ctl_result_dir(&paths, id, &dir) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (access(dir, F_OK) < 0)
                return ctl_fail_errno(errno == ENOENT ? CTL_EXIT_NOT_FOUND : CTL_EXIT_ERROR, errno,
                                      "Job %s has no result in %s: %m", id, dir);
        r = ctl_job_check_readable(&paths, id);
        if (r != 0)
                return r;
        return verify_and_print(dir, pk, id, NULL, json);
}

/* --image-digest: the signed result must name that imported image (result.json's image_digest). Verified
 * here on its own so that nothing is printed as OK before the image is checked too. */
static int check_image_digest(const char *dir, const uint8_t *pk, const char *job_id, const char *input_sha,
                              const char *want) {
        _cleanup_json_ json_object *result = NULL;
        _cleanup_free_ char *err = NULL;
        const char *got;
        int r;

        r = result_verify(dir, pk, job_id, input_sha, &result, &err);
        if (r < 0) {
                ctl_printf_untrusted("FAILED: %s\n", err ?: strerror(-r));
                return CTL_EXIT_ERROR;
        }
        got = json_object_get_string(json_object_object_get(result, "image_digest"));
        if (!got || !streq(got, want)) {
                ctl_printf_untrusted("FAILED: the job ran on image %s, not %s\n", got ?: "(no imported image)",
                                     want);
                return CTL_EXIT_ERROR;
        }
        return 0;
}

int ctl_verb_verify(int argc, char *argv[]) {
        const char *pubkey = NULL, *job_id = NULL, *input_sha = NULL, *image_digest = NULL;
        const CtlOption options[] = {
                CTL_OPTION_PUBKEY(&pubkey),
                CTL_OPTION_JOB_ID(&job_id),
                { "input-sha", .value = &input_sha },
                { "image-digest", .value = &image_digest },
                {}
        };
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];

        if (ctl_options_parse(argc, argv, options, NULL) < 0)
                return CTL_EXIT_USAGE;
        if (!pubkey || optind != argc - 1)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl verify --pubkey FILE [--job-id ID] "
                                "[--input-sha HEX] [--image-digest sha256:HEX] DIR");
        if (input_sha && (strlen(input_sha) != SHA256_HEX_SIZE - 1 ||
                          strspn(input_sha, "0123456789abcdef") != SHA256_HEX_SIZE - 1))
                return ctl_fail(CTL_EXIT_USAGE, "--input-sha: must be 64 lowercase hex digits.");
        if (image_digest && !digest_is_valid(image_digest))
                return ctl_fail(CTL_EXIT_USAGE, "--image-digest: must be \"sha256:\" and 64 lowercase hex digits.");
        if (ctl_load_public_key(pubkey, pk) < 0)
                return CTL_EXIT_ERROR;
        if (image_digest && check_image_digest(argv[optind], pk, job_id, input_sha, image_digest) != 0)
                return CTL_EXIT_ERROR;
        return verify_and_print(argv[optind], pk, job_id, input_sha, false);
}

static int print_public_key(const char *dir, const char *name, const char *what, size_t size) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        char fp[KEY_FINGERPRINT_SIZE];
        uint8_t pk[32]; /* KEY_SIGN_PUBLIC_SIZE and KEY_SEAL_PUBLIC_SIZE */

        _Static_assert(KEY_SIGN_PUBLIC_SIZE <= sizeof pk && KEY_SEAL_PUBLIC_SIZE <= sizeof pk, "key size");
        size_t len;
        int r;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        r = key_load_public(path, size, pk);
        if (r >= 0)
                r = read_full_file(path, 1024, &text, &len);
        if (r < 0)
                return log_error_errno(r, "Cannot read %s: %m", path);
        key_fingerprint(pk, size, fp);
        printf("%s\n  file        %s\n  key         %s\n  fingerprint %s\n", what, path,
               strtok(text, "\n") ?: "", fp);
        return 0;
}

int ctl_verb_keygen(int argc, char *argv[]) {
        const char *dir = pond_dir(POND_DIR_KEY);
        const CtlOption options[] = { { "dir", .value = &dir }, {} };
        int r;

        if (ctl_options_parse(argc, argv, options, NULL) < 0)
                return CTL_EXIT_USAGE;
        if (optind != argc)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl keygen [--dir DIR]");
        r = keys_generate(dir);
        if (r == -EEXIST)
                return ctl_fail(CTL_EXIT_ERROR, "Keys already exist in %s; they are pinned at enrollment. "
                                "Remove them first to replace them.", dir);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot generate keys in %s: %m", dir);
        if (print_public_key(dir, KEY_SIGN_PUBLIC_FILE, "Signing key (Ed25519; pin it to verify results):",
                             KEY_SIGN_PUBLIC_SIZE) < 0 ||
            print_public_key(dir, KEY_SEAL_PUBLIC_FILE, "Sealing key (X25519; seal job secrets to it):",
                             KEY_SEAL_PUBLIC_SIZE) < 0)
                return CTL_EXIT_ERROR;
        return 0;
}

int ctl_verb_hash_input(int argc, char *argv[]) {
        static const CtlOption options[] = { CTL_OPTION_CHECKOUT, {} };
        _cleanup_free_ char *checkout = NULL, *file = NULL, *spec = NULL, *err = NULL;
        _cleanup_(job_spec_freep) JobSpec *parsed = NULL;
        _cleanup_close_ int fd = -EBADF;
        char hex[SHA256_HEX_SIZE];
        size_t file_len, len;
        int r;

        r = ctl_options_parse(argc, argv, options, &checkout);
        if (r < 0)
                return r == -CTL_EUSAGE ? CTL_EXIT_USAGE : CTL_EXIT_ERROR;
        if (optind != argc - 1)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl hash-input SPEC [--checkout DIR]");
        /* Exactly the bytes submit would write, and the tree the worker would hash. */
        r = ctl_spec_read(argv[optind], &file, &file_len, &err);
        if (r >= 0)
                r = ctl_spec_rewrite(file, file_len, checkout, &spec, &len, &err);
        if (r >= 0)
                r = ctl_spec_validate(spec, len, &parsed, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Refused: %s: %s", argv[optind], err ?: strerror(-r));
        if (parsed->checkout) {
                fd = open(parsed->checkout, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot open the checkout %s: %m",
                                              parsed->checkout);
        }
        r = input_sha_compute(spec, len, fd, hex);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot hash the input of %s: %m", argv[optind]);
        printf("%s\n", hex);
        return 0;
}
