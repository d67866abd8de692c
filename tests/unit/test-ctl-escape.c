/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ctl-escape.c: nothing a job or a worker names reaches the operator's terminal as a control: the
 * escape's table (C0, DEL, C1 as UTF-8, bytes that are not UTF-8, and what stays as it is), the printf whose
 * string arguments are escaped, the lines `pondctl result` and `verify` print for a result whose artifacts
 * are named to forge an "OK" and to set the clipboard (OSC 52) (the control: the same names printed raw do
 * carry the ESC), `verify` end to end on a signed result collected from such a workspace, what --json keeps
 * exact (json-c writes C0 controls as \u00XX), and the relay of what a worker's pondctl says over ssh. */
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "ctl.h"
#include "result/collect.h"
#include "result/result.h"
#include "secrets/keys.h"
#include "tests.h"

#define OSC52 "evil\x1b]52;c;ZWNobyBwd25lZA==\x07"
#define FORGED_OK "\x1b[2K\rOK"

/* Whether s holds what a terminal acts on (C0 but for the newline, DEL, C1 raw or as UTF-8) or bytes that are
 * not UTF-8 (an 8-bit terminal's C1): a decoder of its own, looser than the escape's (overlongs of 3 and 4
 * bytes pass), which is enough to see a control. */
static bool has_control(const char *p, size_t n) {
        const unsigned char *s = (const unsigned char *) p;

        for (size_t i = 0; i < n;) {
                size_t len = s[i] < 0x80 ? 1 : s[i] >= 0xc2 && s[i] <= 0xdf ? 2 : s[i] >= 0xe0 && s[i] <= 0xef ? 3 :
                             s[i] >= 0xf0 && s[i] <= 0xf4 ? 4 : 0;

                if (len == 0 || i + len > n || (s[i] < 0x20 && s[i] != '\n') || s[i] == 0x7f)
                        return true;
                for (size_t k = 1; k < len; k++)
                        if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                                return true;
                if (s[i] == 0xc2 && s[i + 1] <= 0x9f)
                        return true;
                i += len;
        }
        return false;
}

TEST(escape_table) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "", "" },
                { "plain name.txt", "plain name.txt" },
                { FORGED_OK, "\\x1b[2K\\x0dOK" },
                { OSC52, "evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07" },
                { "a\nb\tc", "a\\x0ab\\x09c" },
                { "\x01\x1f", "\\x01\\x1f" },
                { "del\x7f", "del\\x7f" },
                { "back\\slash", "back\\\\slash" },          /* so that an escape in the text is told apart */
                { "\\x1b", "\\\\x1b" },
                { "\xc2\x9b" "31m", "\\u009b31m" },           /* CSI as UTF-8 */
                { "\xc2\x80\xc2\x9f", "\\u0080\\u009f" },
                { "\x9b" "31m", "\\x9b31m" },                 /* CSI as a raw byte: not UTF-8 */
                { "\x1b\x9d", "\\x1b\\x9d" },
                { "\xc2\xa0", "\xc2\xa0" },                   /* U+00A0: printable */
                { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
                { "\xc0\xaf", "\\xc0\\xaf" },                 /* overlong '/' */
                { "\xe0\x80\xaf", "\\xe0\\x80\\xaf" },
                { "\xed\xa0\x80", "\\xed\\xa0\\x80" },        /* a surrogate */
                { "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" }, /* above U+10FFFF */
                { "\xe2\x82", "\\xe2\\x82" },                 /* cut short */
                { "\xff\xfe", "\\xff\\xfe" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *e = NULL;

                ASSERT_OK(ctl_escape(cases[i].in, &e));
                EXPECT_STREQ(cases[i].out, e);
                EXPECT_FALSE(has_control(e, strlen(e)));
        }
}

TEST(escape_null_and_nul) {
        _cleanup_free_ char *e = NULL;
        char buf[CTL_ESCAPE_SIZE(3)];

        ASSERT_OK(ctl_escape(NULL, &e));
        EXPECT_STREQ("(null)", e);
        EXPECT_EQ(6, ctl_escape_buf(buf, "a\0b", 3));
        EXPECT_STREQ("a\\x00b", buf);
}

TEST(escape_every_byte) {
        /* Every byte alone, and after a UTF-8 lead: never a control out, never more than 4 bytes per byte. */
        for (int c = 1; c < 256; c++) {
                char in[3] = { (char) c }, lead[4] = { (char) 0xc2, (char) c }, out[CTL_ESCAPE_SIZE(2)];
                size_t n;

                n = ctl_escape_buf(out, in, 1);
                EXPECT_TRUE(n <= 4);
                EXPECT_FALSE(has_control(out, n));
                n = ctl_escape_buf(out, lead, 2);
                EXPECT_TRUE(n <= 8);
                EXPECT_FALSE(has_control(out, n));
        }
}

TEST(printf_untrusted) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        ASSERT_OK(ctl_asprintf_untrusted(&a, "%-8s|%5s|%.3s|%d|%zu|%" PRId64 "|%%|%c|%x|%.2f|%lu\n", "ab", "\x1b",
                                         "\x1b" "bcdef", -3, (size_t) 7, (int64_t) 1 << 40, '\a', 255u, 1.5,
                                         123456789UL));
        EXPECT_STREQ("ab      | \\x1b|\\x1bbc|-3|7|1099511627776|%|\\x07|ff|1.50|123456789\n", a);
        /* The format's own newlines stay; an argument's are escaped. */
        ASSERT_OK(ctl_asprintf_untrusted(&b, "a\n%s\n%*s|%-*s|", "x\ny", 4, "z", 3, "w"));
        EXPECT_STREQ("a\nx\\x0ay\n   z|w  |", b);
        errno = ENOENT;
        ASSERT_OK(ctl_asprintf_untrusted(&c, "%m: %s", (const char *) NULL));
        EXPECT_STREQ("No such file or directory: (null)", c);
        ASSERT_OK(ctl_asprintf_untrusted(&d, "%s", OSC52 FORGED_OK "\xc2\x9b"));
        EXPECT_FALSE(has_control(d, strlen(d)));
}

TEST(log_untrusted_escapes) {
        char buf[512] = {};
        _cleanup_close_ int fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        int saved = dup(STDERR_FILENO);
        ssize_t n;

        ASSERT_TRUE(fd >= 0 && saved >= 0);
        fflush(stderr);
        ASSERT_TRUE(dup2(fd, STDERR_FILENO) >= 0);
        EXPECT_EQ(-EIO, ctl_log_error_errno_untrusted(EIO, "Refused: %s: %m", OSC52));
        EXPECT_EQ(CTL_EXIT_REFUSED, ctl_fail_untrusted(CTL_EXIT_REFUSED, "%s", FORGED_OK));
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        n = pread(fd, buf, sizeof buf - 1, 0);
        ASSERT_TRUE(n > 0);
        EXPECT_STREQ("Refused: evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07: Input/output error\n\\x1b[2K\\x0dOK\n", buf);
}

/* A verified result as pondctl has it: hostile strings wherever a job or a spec could put them. */
static json_object *hostile_result(void) {
        static const char *const paths[] = { OSC52, FORGED_OK, "out/\xc2\x9b" "2J", "out/\x9b" "2J" };
        json_object *r = json_object_new_object(), *arts = json_object_new_array(), *ex = json_object_new_object();

        json_object_object_add(r, "job_id", json_object_new_string("j-1"));
        json_object_object_add(r, "status", json_object_new_string("refused"));
        json_object_object_add(r, "reason", json_object_new_string("checkout: '\x1b]0;title\x07' is not absolute"));
        json_object_object_add(r, "tenant", json_object_new_string("acme\x1b[31m"));
        json_object_object_add(r, "image", json_object_new_string("img\r\x1b[1A"));
        json_object_object_add(ex, "signal", json_object_new_string("SIG\x1b[2J"));
        json_object_object_add(r, "exit", ex);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                json_object *a = json_object_new_object();
                json_object_object_add(a, "path", json_object_new_string(paths[i]));
                json_object_object_add(a, "kind", json_object_new_string("file"));
                json_object_object_add(a, "change", json_object_new_string("added\x1b"));
                json_object_object_add(a, "size", json_object_new_int(3));
                json_object_object_add(a, "sha256", json_object_new_string("\x1b" "5d1f0b5ba6c1bd0a"));
                json_object_array_add(arts, a);
        }
        json_object_object_add(r, "artifacts", arts);
        return r;
}

TEST(result_print_escapes_what_the_job_named) {
        _cleanup_json_ json_object *r = hostile_result();
        _cleanup_free_ char *out = NULL, *raw = NULL;
        size_t len = 0, raw_len = 0;
        FILE *f;

        /* The control: printed as the artifact lines were before, the names do carry their ESC. */
        f = open_memstream(&raw, &raw_len);
        ASSERT_TRUE(f != NULL);
        for (size_t i = 0; i < json_object_array_length(json_object_object_get(r, "artifacts")); i++)
                fprintf(f, "  %s\n", json_object_get_string(json_object_object_get(
                                json_object_array_get_idx(json_object_object_get(r, "artifacts"), i), "path")));
        fclose(f);
        EXPECT_TRUE(memchr(raw, 0x1b, raw_len) != NULL);
        EXPECT_TRUE(has_control(raw, raw_len));

        f = open_memstream(&out, &len);
        ASSERT_TRUE(f != NULL);
        ctl_result_print(f, r, "/tmp/result\x1b");
        fclose(f);
        TEST_LOG("%s", out);
        EXPECT_TRUE(memchr(out, 0x1b, len) == NULL);
        EXPECT_TRUE(memchr(out, 0x07, len) == NULL);
        EXPECT_TRUE(memchr(out, '\r', len) == NULL);
        EXPECT_FALSE(has_control(out, len));
        ASSERT_CONTAINS("  file     added\\x1b            3 evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07  "
                        "\\x1b5d1f0b5ba6c1", out);
        ASSERT_CONTAINS(" \\x1b[2K\\x0dOK  ", out);
        ASSERT_CONTAINS(" out/\\u009b2J  ", out);
        ASSERT_CONTAINS(" out/\\x9b2J  ", out);
        ASSERT_CONTAINS("pond: reason: checkout: '\\x1b]0;title\\x07' is not absolute\n", out);
        ASSERT_CONTAINS("pond: tenant acme\\x1b[31m\n", out);
        ASSERT_CONTAINS("pond: image img\\x0d\\x1b[1A\n", out);
        ASSERT_CONTAINS("refused: signal SIG\\x1b[2J,", out);
        ASSERT_CONTAINS("result /tmp/result\\x1b\n", out);
}

TEST(json_c_escapes_c0_controls) {
        /* What --json prints (ctl_json_print()'s flags, and result.json's as signed) holds no raw C0. */
        static const int flags[] = { JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, RESULT_JSON_FLAGS };
        char all[32];

        for (int c = 1; c < 32; c++)
                all[c - 1] = (char) c;
        all[31] = 0;
        for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
                _cleanup_json_ json_object *o = json_object_new_object();
                const char *s;

                json_object_object_add(o, "path", json_object_new_string(all));
                json_object_object_add(o, OSC52, json_object_new_string(FORGED_OK));
                s = json_object_to_json_string_ext(o, flags[i]);
                ASSERT_TRUE(s != NULL);
                for (const char *p = s; *p; p++)
                        EXPECT_TRUE(*p == '\n' || (unsigned char) *p >= 0x20);
                EXPECT_TRUE(strstr(s, "\\u001b") != NULL);
        }
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

typedef struct Signed {
        char top[64], keys[96], pub[128], dir[128];
} Signed;

static void signed_done(Signed *s) {
        if (s->top[0])
                (void) nftw(s->top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_at(int dirfd, const char *name, const char *text) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        return fd < 0 ? -errno : write_all(fd, text, strlen(text));
}

/* A result signed as pond-run signs one, its artifacts collected from a workspace whose job named its files
 * to attack the operator's terminal. */
static int signed_make(Signed *s, const char *job_id) {
        _cleanup_secret_ uint8_t *sk = NULL;
        _cleanup_manifest_ Manifest *m = NULL;
        _cleanup_json_ json_object *r = NULL;
        _cleanup_close_ int top = -EBADF, ws = -EBADF, results = -EBADF, staged = -EBADF, art = -EBADF;
        CollectLimits limits = { .max_bytes = 1 << 20, .max_entries = 100 };
        char *outputs[] = { "out", NULL }, sha[SHA256_HEX_SIZE];
        json_object *manifest = NULL;
        int k;

        *s = (Signed) { .top = "/tmp/pond-test-escape-XXXXXX" };
        if (!mkdtemp(s->top))
                return -errno;
        snprintf(s->keys, sizeof s->keys, "%s/keys", s->top);
        snprintf(s->pub, sizeof s->pub, "%s/keys/%s", s->top, KEY_SIGN_PUBLIC_FILE);
        snprintf(s->dir, sizeof s->dir, "%s/results/%s", s->top, job_id);
        if ((k = keys_generate(s->keys)) < 0 || (k = keys_load_sign_secret(s->keys, &sk)) < 0)
                return k;
        top = open(s->top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0 || mkdirat(top, "ws", 0755) < 0 || mkdirat(top, "ws/out", 0755) < 0 ||
            mkdirat(top, "results", 0755) < 0)
                return -errno;
        ws = openat(top, "ws", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        results = openat(top, "results", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ws < 0 || results < 0 || write_at(ws, "out/" OSC52, "pwn") < 0 ||
            write_at(ws, "out/" FORGED_OK, "ok") < 0 || write_at(ws, "out/plain.txt", "fine\n") < 0)
                return -errno;
        if ((k = result_stage_open(results, job_id, &staged)) < 0)
                return k;
        if (mkdirat(staged, "artifacts", 0755) < 0 ||
            (art = openat(staged, "artifacts", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return -errno;
        if ((k = collect_artifacts(-EBADF, -EBADF, ws, outputs, art, &limits, &m)) < 0 ||
            (k = manifest_to_json(m, &manifest)) < 0 || (k = manifest_sha(m, sha)) < 0)
                return k;
        r = json_object_new_object();
        json_object_object_add(r, "version", json_object_new_int(RESULT_VERSION));
        json_object_object_add(r, "job_id", json_object_new_string(job_id));
        json_object_object_add(r, "tenant", json_object_new_string("acme"));
        json_object_object_add(r, "status", json_object_new_string("completed"));
        json_object_object_add(r, "input_sha", NULL);
        json_object_object_add(r, "output_sha", json_object_new_string(sha));
        json_object_object_add(r, "artifacts", manifest);
        k = result_write_signed(results, job_id, r, sk, staged);
        return k;
}

/* Runs pondctl with argv, its stdout captured into *ret. Returns its exit status. */
static int run_captured(int argc, char **argv, char **ret) {
        _cleanup_close_ int fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        int saved = dup(STDOUT_FILENO), status;
        size_t len;

        if (fd < 0 || saved < 0)
                return -errno;
        fflush(stdout);
        dup2(fd, STDOUT_FILENO);
        status = ctl_main(argc, argv);
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
        if (lseek(fd, 0, SEEK_SET) < 0 || read_full_fd(fd, 1 << 20, ret, &len) < 0)
                return -EIO;
        return status;
}

TEST(verify_prints_no_control_for_hostile_artifacts) {
        _cleanup_(signed_done) Signed s = {};
        _cleanup_free_ char *out = NULL, *json = NULL, *path = NULL;
        size_t len;

        ASSERT_OK(signed_make(&s, "j-escape"));
        char *argv[] = { "pondctl", "verify", "--pubkey", s.pub, "--job-id", "j-escape", s.dir, NULL };
        ASSERT_EQ(0, run_captured(ELEMENTSOF(argv) - 1, argv, &out));
        TEST_LOG("%s", out);
        ASSERT_TRUE(strncmp(out, "OK\n", 3) == 0);
        EXPECT_TRUE(strchr(out, 0x1b) == NULL);
        EXPECT_TRUE(strchr(out, 0x07) == NULL);
        EXPECT_TRUE(strchr(out, '\r') == NULL);
        EXPECT_FALSE(has_control(out, strlen(out)));
        ASSERT_CONTAINS(" out/evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07  ", out);
        ASSERT_CONTAINS(" out/\\x1b[2K\\x0dOK  ", out);
        ASSERT_CONTAINS(" out/plain.txt  ", out);
        /* --json prints result.json as signed: the names are in it, as json-c's \u001b. */
        ASSERT_TRUE(asprintf(&path, "%s/%s", s.dir, RESULT_JSON_FILE) > 0);
        ASSERT_OK(read_full_file(path, RESULT_JSON_MAX, &json, &len));
        EXPECT_TRUE(memchr(json, 0x1b, len) == NULL);
        ASSERT_CONTAINS("out/evil\\u001b]52;c;ZWNobyBwd25lZA==\\u0007", json);
}

TEST(verify_failure_names_the_artifact_escaped) {
        _cleanup_(signed_done) Signed s = {};
        _cleanup_free_ char *out = NULL, *victim = NULL;

        ASSERT_OK(signed_make(&s, "j-escape"));
        ASSERT_TRUE(asprintf(&victim, "%s/artifacts/out/%s", s.dir, FORGED_OK) > 0);
        ASSERT_EQ(0, unlink(victim));
        char *argv[] = { "pondctl", "verify", "--pubkey", s.pub, s.dir, NULL };
        ASSERT_EQ(CTL_EXIT_ERROR, run_captured(ELEMENTSOF(argv) - 1, argv, &out));
        TEST_LOG("%s", out);
        EXPECT_FALSE(has_control(out, strlen(out)));
        ASSERT_CONTAINS("FAILED: artifact 'out/\\x1b[2K\\x0dOK' cannot be opened", out);
}

TEST(relay_escapes_lines_and_feeds_stdin) {
        static const char said[] = "job:    j-1\nstatus: " OSC52 "\n" FORGED_OK "\xc2\x9b" "no newline at the end";
        int out[2], err[2], in[2], dst_out[2], dst_err[2];
        char buf[1024] = {}, ebuf[1024] = {}, fed[64] = {};
        pid_t pid;

        ASSERT_EQ(0, pipe2(out, O_CLOEXEC));
        ASSERT_EQ(0, pipe2(err, O_CLOEXEC));
        ASSERT_EQ(0, pipe2(in, O_CLOEXEC));
        ASSERT_EQ(0, pipe2(dst_out, O_CLOEXEC));
        ASSERT_EQ(0, pipe2(dst_err, O_CLOEXEC));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) { /* the worker's pondctl: reads its stdin whole, then speaks */
                ssize_t n = read(in[0], fed, sizeof fed - 1);
                _exit(n == 5 && write(out[1], said, sizeof said - 1) > 0 && write(err[1], "e\x1b\n", 3) == 3 ? 0 : 1);
        }
        close(out[1]);
        close(err[1]);
        close(in[0]);
        ASSERT_OK(ctl_remote_relay(in[1], "spec\n", 5, (const int[2]) { out[0], err[0] },
                                   (const int[2]) { dst_out[1], dst_err[1] }));
        close(dst_out[1]);
        close(dst_err[1]);
        ASSERT_TRUE(read(dst_out[0], buf, sizeof buf - 1) > 0);
        ASSERT_TRUE(read(dst_err[0], ebuf, sizeof ebuf - 1) > 0);
        EXPECT_STREQ("job:    j-1\nstatus: evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07\n"
                     "\\x1b[2K\\x0dOK\\u009bno newline at the end", buf);
        EXPECT_STREQ("e\\x1b\n", ebuf);
        int status;
        ASSERT_EQ(pid, waitpid(pid, &status, 0));
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_MAIN()
