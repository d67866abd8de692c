/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ctl-remote.c: what `pondctl -H` sends and takes: the hosts it accepts (nothing ssh or the remote shell
 * could read as more than a host), the remote command line (each argument arrives as itself through a real
 * sh, hostile ones included; the control shows the same words unquoted run what they carry), and the result
 * tar stream (a directory round-trips byte for byte; paths that leave the destination, links and devices
 * are refused, and nothing is written outside it), and what a worker's pondctl says comes through a fake ssh
 * escaped (but --json). The real thing over ssh is tests/integration/test-fleet.sh. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ctl.h"
#include "fileio.h"
#include "keys.h"
#include "strv.h"
#include "tests.h"

TEST(host_names) {
        static const char *const good[] = { "worker7", "root@worker7", "ci_user@w-7.example.org", "10.0.0.1",
                                             "a" };
        static const char *const bad[] = { "", "-oProxyCommand=sh", "root@-oProxyCommand=x", "@host", "a@b@c",
                                           "host;id", "host id", "host'x", "$(id)", "`id`", "host,argv5=x",
                                           "host:22", "[::1]", "root@", ".hidden", "root@.x", "a\nb" };

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                EXPECT_TRUE(ctl_host_is_valid(good[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                EXPECT_FALSE(ctl_host_is_valid(bad[i]));
        EXPECT_FALSE(ctl_host_is_valid(NULL));
}

/* Runs line in sh -c with POND_REMOTE_PONDCTL's command being printf '%s\n', so that each argument the
 * shell hands over comes back as one line; returns what came back. */
static char *through_sh(const char *line) {
        _cleanup_free_ char *out = NULL;
        char buf[4096];
        int p[2];
        size_t len = 0;
        pid_t pid;
        ssize_t n;

        if (pipe(p) < 0)
                return NULL;
        pid = fork();
        if (pid == 0) {
                dup2(p[1], STDOUT_FILENO);
                close(p[0]);
                execl("/bin/sh", "sh", "-c", line, (char *) NULL);
                _exit(127);
        }
        close(p[1]);
        while ((n = read(p[0], buf, sizeof buf)) > 0) {
                char *o = realloc(out, len + (size_t) n + 1);
                if (!o)
                        break;
                out = o;
                memcpy(out + len, buf, (size_t) n);
                len += (size_t) n;
                out[len] = 0;
        }
        close(p[0]);
        (void) waitpid(pid, NULL, 0);
        return TAKE_PTR(out) ?: strdup("");
}

TEST(remote_command_line_quotes_every_argument) {
        char *argv[] = { "submit", "-", "--checkout", "/tmp/a b;touch /tmp/pond-test-pwned", "it's", "$(id)",
                         "`id`", "a\\b", "\"q\"", "*", "", NULL };
        _cleanup_free_ char *line = NULL, *got = NULL, *want = NULL;
        size_t len = 0;

        ASSERT_OK(setenv("POND_REMOTE_PONDCTL", "printf", 1));
        (void) unlink("/tmp/pond-test-pwned");
        /* printf's format is the first argument: put one in front. */
        char *with_format[ELEMENTSOF(argv) + 1] = { "%s|\\n" };
        memcpy(with_format + 1, argv, sizeof argv);
        ASSERT_OK(ctl_remote_command_line(with_format, &line));
        got = through_sh(line);
        ASSERT_TRUE(got != NULL);
        want = malloc(4096);
        ASSERT_TRUE(want != NULL);
        want[0] = 0;
        for (size_t i = 0; argv[i]; i++)
                len += (size_t) snprintf(want + len, 4096 - len, "%s|\n", argv[i]);
        EXPECT_STREQ(want, got);
        EXPECT_TRUE(access("/tmp/pond-test-pwned", F_OK) < 0);
}

TEST(remote_command_line_control_unquoted_runs_the_payload) {
        /* The same hostile path joined without quoting, as a naive `ssh host pondctl ARGS` would: the remote
         * shell runs what follows the ';'. */
        _cleanup_free_ char *got = NULL;

        (void) unlink("/tmp/pond-test-pwned-control");
        got = through_sh("printf '%s\\n' submit --checkout /tmp/a b;touch /tmp/pond-test-pwned-control");
        EXPECT_TRUE(access("/tmp/pond-test-pwned-control", F_OK) >= 0);
        (void) unlink("/tmp/pond-test-pwned-control");
}

TEST(remote_command_line_says_when_pondctl_is_missing) {
        char *argv[] = { "list", NULL };
        _cleanup_free_ char *line = NULL, *cmd = NULL;
        int status;

        ASSERT_OK(setenv("POND_REMOTE_PONDCTL", "/nonexistent/pondctl", 1));
        ASSERT_OK(ctl_remote_command_line(argv, &line));
        ASSERT_TRUE(asprintf(&cmd, "%s 2>/dev/null", line) > 0);
        status = system(cmd);
        /* 1 ("failed"), not the shell's 127, which would read as "did not verify". */
        EXPECT_TRUE(WIFEXITED(status));
        EXPECT_EQ(1, WEXITSTATUS(status));
}

static int write_at(int dirfd, const char *name, const char *text) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        return fd < 0 ? -errno : write_all(fd, text, strlen(text));
}

static int read_at(int dirfd, const char *name, char **ret) {
        size_t len;

        return read_full_file_at(dirfd, name, 1 << 20, ret, &len);
}

typedef struct Dirs {
        char tmpl[64];
        int src, dst, top;
} Dirs;

#define DIRS_NULL { .src = -EBADF, .dst = -EBADF, .top = -EBADF }

static int dirs_make(Dirs *d) {
        *d = (Dirs) { .tmpl = "/tmp/pond-test-tar-XXXXXX", .src = -EBADF, .dst = -EBADF, .top = -EBADF };
        if (!mkdtemp(d->tmpl))
                return -errno;
        d->top = open(d->tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d->top < 0 || mkdirat(d->top, "src", 0755) < 0 || mkdirat(d->top, "dst", 0700) < 0)
                return -errno;
        d->src = openat(d->top, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        d->dst = openat(d->top, "dst", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return d->src < 0 || d->dst < 0 ? -errno : 0;
}

static void dirs_done(Dirs *d) {
        safe_close(d->src);
        safe_close(d->dst);
        if (d->top >= 0) {
                (void) rm_rf_at(d->top, "src");
                (void) rm_rf_at(d->top, "dst");
                (void) unlinkat(d->top, "outside", 0);
                safe_close(d->top);
                (void) rmdir(d->tmpl);
        }
}

TEST(result_tar_round_trip) {
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        _cleanup_close_ int tar = -EBADF;
        char *err = NULL;

        ASSERT_OK(dirs_make(&d));
        ASSERT_OK(write_at(d.src, "result.json", "{\"job_id\": \"j\"}\n"));
        ASSERT_OK(write_at(d.src, "result.sig", "c2ln\n"));
        ASSERT_EQ(0, mkdirat(d.src, "artifacts", 0755));
        ASSERT_EQ(0, mkdirat(d.src, "artifacts/out", 0755));
        ASSERT_OK(write_at(d.src, "artifacts/out/patch.diff", "--- a\n+++ b\n"));
        ASSERT_EQ(0, mkdirat(d.src, "log", 0755));
        ASSERT_OK(write_at(d.src, "log/index", ""));
        tar = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ASSERT_TRUE(tar >= 0);
        ASSERT_OK(ctl_result_tar_export(d.src, tar));
        ASSERT_EQ(0, lseek(tar, 0, SEEK_SET));
        ASSERT_OK(ctl_result_tar_import(tar, d.dst, &err));
        ASSERT_OK(read_at(d.dst, "result.json", &a));
        EXPECT_STREQ("{\"job_id\": \"j\"}\n", a);
        ASSERT_OK(read_at(d.dst, "artifacts/out/patch.diff", &b));
        EXPECT_STREQ("--- a\n+++ b\n", b);
        ASSERT_OK(read_at(d.dst, "log/index", &c));
        EXPECT_STREQ("", c);
        free(err);
}

TEST(result_tar_export_refuses_a_symlink) {
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_close_ int tar = -EBADF;

        ASSERT_OK(dirs_make(&d));
        ASSERT_EQ(0, symlinkat("/etc/passwd", d.src, "result.json"));
        tar = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ASSERT_TRUE(tar >= 0);
        EXPECT_TRUE(ctl_result_tar_export(d.src, tar) < 0);
}

/* A tar of one entry made with libarchive, as a hostile worker could send it. */
static int hostile_tar(const char *path, mode_t type, const char *link, int fd) {
        struct archive *a = archive_write_new();
        struct archive_entry *e = archive_entry_new();
        int r = -EIO;

        if (!a || !e)
                goto out;
        if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK || archive_write_open_fd(a, fd) != ARCHIVE_OK)
                goto out;
        archive_entry_set_pathname(e, path);
        archive_entry_set_filetype(e, type);
        archive_entry_set_perm(e, 0644);
        if (type == AE_IFLNK)
                archive_entry_set_symlink(e, link);
        else if (link)
                archive_entry_set_hardlink(e, link);
        archive_entry_set_size(e, type == AE_IFREG && !link ? 3 : 0);
        if (archive_write_header(a, e) != ARCHIVE_OK)
                goto out;
        if (type == AE_IFREG && !link && archive_write_data(a, "bad", 3) != 3)
                goto out;
        r = archive_write_close(a) == ARCHIVE_OK ? 0 : -EIO;
out:
        archive_entry_free(e);
        archive_write_free(a);
        return r;
}

TEST(result_tar_import_refuses_what_leaves_or_links) {
        static const struct {
                const char *path;
                mode_t type;
                const char *link;
        } cases[] = {
                { "../outside", AE_IFREG, NULL },
                { "/tmp/pond-test-tar-abs", AE_IFREG, NULL },
                { "a/../../outside", AE_IFREG, NULL },
                { "./result.json", AE_IFREG, NULL },
                { "result.json", AE_IFLNK, "/etc/passwd" },
                { "result.json", AE_IFREG, "../outside" },
                { "dev", AE_IFCHR, NULL },
                { "fifo", AE_IFIFO, NULL },
                { "missing/parent", AE_IFREG, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(dirs_done) Dirs d = DIRS_NULL;
                _cleanup_close_ int tar = -EBADF;
                _cleanup_free_ char *err = NULL;
                int r;

                ASSERT_OK(dirs_make(&d));
                tar = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
                ASSERT_TRUE(tar >= 0);
                ASSERT_OK(hostile_tar(cases[i].path, cases[i].type, cases[i].link, tar));
                ASSERT_EQ(0, lseek(tar, 0, SEEK_SET));
                r = ctl_result_tar_import(tar, d.dst, &err);
                if (r >= 0)
                        fprintf(stderr, "# accepted: %s\n", cases[i].path);
                EXPECT_TRUE(r < 0);
                EXPECT_TRUE(faccessat(d.top, "outside", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
                EXPECT_TRUE(access("/tmp/pond-test-tar-abs", F_OK) < 0);
        }
}

TEST(result_tar_import_refuses_a_symlinked_parent) {
        /* A directory of the destination replaced by a symlink (by whatever else writes there): a file below
         * it is not written through it. */
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_close_ int tar = -EBADF;
        _cleanup_free_ char *err = NULL;
        char target[96];

        ASSERT_OK(dirs_make(&d));
        snprintf(target, sizeof target, "%s/src", d.tmpl);
        ASSERT_EQ(0, symlinkat(target, d.dst, "artifacts"));
        tar = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ASSERT_TRUE(tar >= 0);
        ASSERT_OK(hostile_tar("artifacts/x", AE_IFREG, NULL, tar));
        ASSERT_EQ(0, lseek(tar, 0, SEEK_SET));
        EXPECT_TRUE(ctl_result_tar_import(tar, d.dst, &err) < 0);
        EXPECT_TRUE(faccessat(d.src, "x", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
}

/* A worker behind a fake ssh (it runs the remote command line with sh), whose pondctl is a script that says
 * what a hostile worker would for `status`, and sends the tar at w->tar for `export` (exit 4, "no such job",
 * if there is none). */
typedef struct FakeWorker {
        char top[64], bin[96], tar[96], into[96], ssh_log[96], keys[96], pub[128], results[96];
} FakeWorker;

static void fake_worker_done(FakeWorker *w) {
        if (w->top[0])
                (void) rm_rf_at(AT_FDCWD, w->top);
}

static int write_script(const char *path, const char *text) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);

        return fd < 0 ? -errno : write_all(fd, text, strlen(text));
}

static int fake_worker_make(FakeWorker *w) {
        _cleanup_free_ char *ssh = NULL, *pondctl = NULL, *ssh_path = NULL, *pondctl_path = NULL, *path = NULL;

        *w = (FakeWorker) { .top = "/tmp/pond-test-fetch-XXXXXX" };
        if (!mkdtemp(w->top))
                return -errno;
        snprintf(w->bin, sizeof w->bin, "%s/bin", w->top);
        snprintf(w->tar, sizeof w->tar, "%s/export.tar", w->top);
        snprintf(w->into, sizeof w->into, "%s/into", w->top);
        snprintf(w->ssh_log, sizeof w->ssh_log, "%s/ssh.log", w->top);
        snprintf(w->keys, sizeof w->keys, "%s/keys", w->top);
        snprintf(w->pub, sizeof w->pub, "%s/keys/%s", w->top, KEY_SIGN_PUBLIC_FILE);
        snprintf(w->results, sizeof w->results, "%s/results", w->top);
        if (mkdir(w->bin, 0755) < 0 || mkdir(w->into, 0755) < 0 || mkdir(w->results, 0755) < 0)
                return -errno;
        if (asprintf(&ssh, "#!/bin/sh\necho \"$*\" >>%s\n[ \"$1\" = -xT ] && [ \"$2\" = -- ] || exit 255\n"
                     "exec /bin/sh -c \"$4\"\n", w->ssh_log) < 0 ||
            asprintf(&pondctl, "#!/bin/sh\n"
                     /* a worker that would write escapes to the operator's terminal, and JSON with \u001b */
                     "if [ \"$1\" = status ]; then\n"
                     "  [ \"$3\" = --json ] && printf '{ \"status_text\": \"\\\\u001b]0;x\\\\u0007\" }\\n' ||\n"
                     "    printf 'status: \\033]52;c;eA==\\007\\n\\033[2K\\rOK\\n'\n"
                     "  printf 'warning: \\033[31mred\\n' >&2; exit 0\n"
                     "fi\n"
                     "[ \"$1\" = export ] || exit 64\n"
                     "[ -f %s ] || { printf 'No result of %%s.\\033]52;c;eA==\\007\\n' \"$2\" >&2; exit 4; }\n"
                     "exec cat %s\n", w->tar, w->tar) < 0 ||
            asprintf(&ssh_path, "%s/ssh", w->bin) < 0 || asprintf(&pondctl_path, "%s/pondctl", w->bin) < 0 ||
            asprintf(&path, "%s:%s", w->bin, getenv("PATH") ?: "/usr/bin:/bin") < 0)
                return -ENOMEM;
        if (write_script(ssh_path, ssh) < 0 || write_script(pondctl_path, pondctl) < 0)
                return -errno;
        if (setenv("PATH", path, 1) < 0 || setenv("POND_REMOTE_PONDCTL", pondctl_path, 1) < 0)
                return -errno;
        return keys_generate(w->keys);
}

/* Runs pondctl with argv, its stdout captured into *ret (and its stderr into *ret_err, if not NULL). Returns
 * its exit status. */
static int run_captured_full(char **argv, char **ret, char **ret_err) {
        _cleanup_close_ int fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        _cleanup_close_ int efd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        int saved = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO), status, argc = 0;
        size_t len;

        while (argv[argc])
                argc++;
        if (fd < 0 || efd < 0 || saved < 0 || saved_err < 0)
                return -errno;
        fflush(stdout);
        fflush(stderr);
        dup2(fd, STDOUT_FILENO);
        if (ret_err)
                dup2(efd, STDERR_FILENO);
        status = ctl_main(argc, argv);
        fflush(stdout);
        fflush(stderr);
        dup2(saved, STDOUT_FILENO);
        dup2(saved_err, STDERR_FILENO);
        close(saved);
        close(saved_err);
        if (lseek(fd, 0, SEEK_SET) < 0 || read_full_fd(fd, 1 << 20, ret, &len) < 0)
                return -EIO;
        if (ret_err && (lseek(efd, 0, SEEK_SET) < 0 || read_full_fd(efd, 1 << 20, ret_err, &len) < 0))
                return -EIO;
        return status;
}

TEST(host_status_comes_escaped_but_json_exact) {
        _cleanup_(fake_worker_done) FakeWorker w = {};
        _cleanup_free_ char *out = NULL, *err = NULL, *json = NULL, *json_err = NULL;
        char *argv[] = { "pondctl", "-H", "worker7", "status", "j-1", NULL };
        char *json_argv[] = { "pondctl", "-H", "worker7", "status", "--json", "j-1", NULL };

        ASSERT_OK(fake_worker_make(&w));
        EXPECT_EQ(0, run_captured_full(argv, &out, &err));
        TEST_LOG("%s%s", out ?: "", err ?: "");
        EXPECT_STREQ("status: \\x1b]52;c;eA==\\x07\n\\x1b[2K\\x0dOK\n", out);
        EXPECT_STREQ("warning: \\x1b[31mred\n", err);
        /* --json passes json-c's text through as it came (it has no raw control to escape). */
        EXPECT_EQ(0, run_captured_full(json_argv, &json, &json_err));
        EXPECT_STREQ("{ \"status_text\": \"\\u001b]0;x\\u0007\" }\n", json);
        EXPECT_STREQ("warning: \\x1b[31mred\n", json_err);
}

TEST(host_option_is_refused_by_verbs_that_have_no_remote_form) {
        char *argv[] = { "pondctl", "-H", "worker7", "keygen", NULL };
        char *bad_host[] = { "pondctl", "-H", "-oProxyCommand=sh", "list", NULL };
        char *bad_id[] = { "pondctl", "-H", "worker7", "status", "x;id", NULL };
        char *no_key[] = { "pondctl", "-H", "worker7", "wait", "j-1", NULL };

        EXPECT_EQ(CTL_EXIT_USAGE, ctl_main(ELEMENTSOF(argv) - 1, argv));
        EXPECT_EQ(CTL_EXIT_USAGE, ctl_main(ELEMENTSOF(bad_host) - 1, bad_host));
        /* Refused before any ssh is run (no "ssh" needed here). */
        EXPECT_EQ(CTL_EXIT_USAGE, ctl_main(ELEMENTSOF(bad_id) - 1, bad_id));
        EXPECT_EQ(CTL_EXIT_USAGE, ctl_main(ELEMENTSOF(no_key) - 1, no_key));
}

TEST_MAIN()
