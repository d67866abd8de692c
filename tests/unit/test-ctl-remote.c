/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ctl-remote.c: what `pondctl -H` sends and takes: the hosts it accepts (nothing ssh or the remote shell
 * could read as more than a host), the remote command line (each argument arrives as itself through a real
 * sh, hostile ones included; the control shows the same words unquoted run what they carry), the result tar
 * stream (a directory round-trips byte for byte, deep ones too; paths that leave the destination, links,
 * devices, and one file, directory, byte, component or path byte past the limits are refused with the entry
 * named, nothing is written outside the destination and nothing stays in it: a stream exactly at the limits
 * is the control), the staged unpack (checked where it was unpacked, renamed into place only if the check
 * passed, never over what exists, removed whole when interrupted), and -H result and status through a fake
 * ssh: only a result that verified is kept at --into DIR/ID, and what the worker says comes escaped (but
 * --json). The real thing over ssh is tests/integration/test-fleet.sh. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/strv.h"
#include "ctl.h"
#include "result/collect.h"
#include "result/result.h"
#include "secrets/keys.h"
#include "tests.h"

static char *mfree_test(char *p) {
        free(p);
        return NULL;
}

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
        ASSERT_OK(ctl_result_tar_import(tar, d.dst, NULL, &err));
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
                r = ctl_result_tar_import(tar, d.dst, NULL, &err);
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
        EXPECT_TRUE(ctl_result_tar_import(tar, d.dst, NULL, &err) < 0);
        EXPECT_TRUE(faccessat(d.src, "x", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
}

/* One entry of a tar made with libarchive, as a hostile worker could send it. */
typedef struct TarEntry {
        const char *path;
        mode_t type;       /* 0: AE_IFREG */
        const char *link;  /* symlink target, or a hard link's (type AE_IFREG) */
        size_t size;       /* a file's bytes ('x's) */
        const char *uname; /* a pax record of its own, if long */
} TarEntry;

static int tar_of(int fd, const TarEntry *entries, size_t n) {
        struct archive *a = archive_write_new();
        char buf[4096];
        int r = -EIO;

        memset(buf, 'x', sizeof buf);
        if (!a || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK || archive_write_open_fd(a, fd) != ARCHIVE_OK)
                goto out;
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *e = archive_entry_new();
                mode_t type = entries[i].type ?: AE_IFREG;
                bool data = type == AE_IFREG && !entries[i].link;
                int k;

                if (!e)
                        goto out;
                archive_entry_set_pathname(e, entries[i].path);
                archive_entry_set_filetype(e, type);
                archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
                if (type == AE_IFLNK)
                        archive_entry_set_symlink(e, entries[i].link);
                else if (entries[i].link)
                        archive_entry_set_hardlink(e, entries[i].link);
                if (entries[i].uname)
                        archive_entry_set_uname(e, entries[i].uname);
                archive_entry_set_size(e, data ? (la_int64_t) entries[i].size : 0);
                k = archive_write_header(a, e);
                archive_entry_free(e);
                if (k != ARCHIVE_OK)
                        goto out;
                for (size_t done = 0; data && done < entries[i].size;) {
                        size_t c = MIN(sizeof buf, entries[i].size - done);
                        if (archive_write_data(a, buf, c) != (la_ssize_t) c)
                                goto out;
                        done += c;
                }
        }
        r = archive_write_close(a) == ARCHIVE_OK ? 0 : -EIO;
out:
        archive_write_free(a);
        return r;
}

/* The entries of dir but "." and "..", or -errno. */
static int count_entries(const char *dir) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        int n = 0;

        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));)
                n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
        return n;
}

static int tmp_tar(const TarEntry *entries, size_t n) {
        int fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);

        if (fd < 0)
                return -errno;
        if (tar_of(fd, entries, n) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
                safe_close(fd);
                return -EIO;
        }
        return fd;
}

/* Small limits, so that the refusals are cheap to reach; result_tar_unpack_takes_what_fits_the_limits is
 * their control: a stream exactly at every limit is taken. */
static const CtlTarLimits small = { .max_bytes = 1000, .max_files = 4, .max_dirs = 4, .max_depth = 4,
                                    .max_path = 64 };

/* What comes first in every hostile stream: a start that is unpacked, so that there is something to remove. */
#define GOOD_START                                              \
        { .path = "result.json", .size = 10 },                  \
        { .path = "artifacts", .type = AE_IFDIR },              \
        { .path = "artifacts/a", .size = 5 }
#define F(p, n) { .path = (p), .size = (n) }
#define D(p) { .path = (p), .type = AE_IFDIR }
#define N16 "nnnnnnnnnnnnnnnn"
#define N256 N16 N16 N16 N16 N16 N16 N16 N16 N16 N16 N16 N16 N16 N16 N16 N16 /* one past NAME_MAX */

static char long_uname[20000];

TEST(result_tar_unpack_refuses_and_leaves_nothing) {
        static const CtlTarLimits tiny = { .max_bytes = 15, .max_files = 3, .max_dirs = 1, .max_depth = 2,
                                           .max_path = 16 };
        static const struct {
                const char *what;
                const CtlTarLimits *limits; /* NULL: small */
                TarEntry entries[8];        /* up to the first without a path */
        } cases[] = {
                { "too many files", NULL, { GOOD_START, F("b", 1), F("c", 1), F("d", 1) } },
                { "too many dirs", NULL, { GOOD_START, D("d1"), D("d2"), D("d3"), D("d4") } },
                { "too many bytes", NULL, { GOOD_START, F("big", 986) } },
                { "one file too big", NULL, { F("big", 1001) } },
                { "too deep", NULL, { GOOD_START, D("artifacts/b"), D("artifacts/b/c"), F("artifacts/b/c/d", 1),
                                      D("artifacts/b/c/d2"), F("artifacts/b/c/d2/e", 1) } },
                { "path too long", NULL, { GOOD_START, F("artifacts/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                                         "aaaaaaaaaaaaaaaaa", 1) } },
                { "name too long", &ctl_tar_limits_result, { GOOD_START, F("artifacts/" N256, 1) } },
                /* within every count, but the stream is longer than such a content can take */
                { "a long pax record", &tiny, { GOOD_START, { .path = "artifacts/u", .uname = long_uname } } },
                { "..", NULL, { GOOD_START, F("../outside", 1) } },
                { "a/../..", NULL, { GOOD_START, F("artifacts/../../outside", 1) } },
                { "absolute", NULL, { GOOD_START, F("/tmp/pond-test-tar-abs", 1) } },
                { "symlink", NULL, { GOOD_START, { .path = "artifacts/l", .type = AE_IFLNK, .link = "/etc/passwd" } } },
                { "symlinked dir", NULL, { GOOD_START, { .path = "artifacts/l", .type = AE_IFLNK, .link = ".." },
                                           F("artifacts/l/outside", 1) } },
                { "hard link", NULL, { GOOD_START, { .path = "artifacts/h", .link = "../outside" } } },
                { "device", NULL, { GOOD_START, { .path = "artifacts/dev", .type = AE_IFCHR } } },
                { "fifo", NULL, { GOOD_START, { .path = "artifacts/fifo", .type = AE_IFIFO } } },
                { "twice", NULL, { GOOD_START, F("artifacts/a", 5) } },
                { "no parent", NULL, { GOOD_START, F("missing/x", 1) } },
        };

        memset(long_uname, 'u', sizeof long_uname - 1);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(dirs_done) Dirs d = DIRS_NULL;
                _cleanup_close_ int tar = -EBADF;
                _cleanup_free_ char *err = NULL, *dir = NULL, *parent = NULL;
                int r;

                ASSERT_OK(dirs_make(&d));
                ASSERT_TRUE(asprintf(&parent, "%s/dst", d.tmpl) > 0);
                size_t n = 0;

                while (n < ELEMENTSOF(cases[i].entries) && cases[i].entries[n].path)
                        n++;
                tar = tmp_tar(cases[i].entries, n);
                ASSERT_OK(tar);
                r = ctl_result_tar_unpack(tar, parent, "j-1", cases[i].limits ?: &small, NULL, NULL, NULL, &dir,
                                          &err);
                TEST_LOG("%s: %s", cases[i].what, err ?: "(accepted)");
                EXPECT_TRUE(r < 0);
                EXPECT_TRUE(err != NULL);
                EXPECT_TRUE(dir == NULL);
                EXPECT_EQ(0, count_entries(parent)); /* nothing, hidden or not */
                EXPECT_TRUE(faccessat(d.top, "outside", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
                EXPECT_TRUE(access("/tmp/pond-test-tar-abs", F_OK) < 0);
        }
}

TEST(result_tar_unpack_takes_what_fits_the_limits) {
        /* The control of the refusals: 4 files, 4 directories, 4 components, 1000 bytes, 64-byte paths. */
        static const TarEntry entries[] = {
                F("result.json", 10), D("artifacts"), D("artifacts/b"), D("artifacts/b/c"), F("artifacts/b/c/d", 1),
                D("log"), F("log/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 489), /* 64 bytes */
                F("result.sig", 500),
        };
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_close_ int tar = -EBADF;
        _cleanup_free_ char *err = NULL, *dir = NULL, *parent = NULL, *want = NULL;
        struct stat st;

        ASSERT_OK(dirs_make(&d));
        ASSERT_TRUE(asprintf(&parent, "%s/dst", d.tmpl) > 0);
        ASSERT_TRUE(asprintf(&want, "%s/j-1", parent) > 0);
        tar = tmp_tar(entries, ELEMENTSOF(entries));
        ASSERT_OK(tar);
        ASSERT_OK(ctl_result_tar_unpack(tar, parent, "j-1", &small, NULL, NULL, NULL, &dir, &err));
        EXPECT_STREQ(want, dir);
        EXPECT_EQ(1, count_entries(parent)); /* j-1 and nothing else */
        ASSERT_EQ(0, fstatat(d.dst, "j-1/artifacts/b/c/d", &st, AT_SYMLINK_NOFOLLOW));
        EXPECT_TRUE(S_ISREG(st.st_mode) && st.st_size == 1);
        ASSERT_EQ(0, fstatat(d.dst, "j-1", &st, AT_SYMLINK_NOFOLLOW));
        EXPECT_EQ(0700, st.st_mode & 07777);
}

static int refuse_check(const char *dir, void *userdata, char **ret_error) {
        char *seen = userdata;

        snprintf(seen, 256, "%s", dir);
        return error_set(ret_error, -EBADMSG, "signature does not verify");
}

TEST(result_tar_unpack_keeps_nothing_that_fails_the_check) {
        static const TarEntry entries[] = { GOOD_START };
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_close_ int tar = -EBADF;
        _cleanup_free_ char *err = NULL, *dir = NULL, *parent = NULL, *hidden = NULL;
        char seen[256] = "";

        ASSERT_OK(dirs_make(&d));
        ASSERT_TRUE(asprintf(&parent, "%s/dst", d.tmpl) > 0);
        ASSERT_TRUE(asprintf(&hidden, "%s/.j-1.", parent) > 0);
        tar = tmp_tar(entries, ELEMENTSOF(entries));
        ASSERT_OK(tar);
        EXPECT_ERROR(EBADMSG, ctl_result_tar_unpack(tar, parent, "j-1", &small, NULL, refuse_check, seen, &dir,
                                                    &err));
        EXPECT_STREQ("signature does not verify", err);
        /* It was checked where it was unpacked, whole, next to its place and hidden; and it is gone. */
        EXPECT_TRUE(strncmp(seen, hidden, strlen(hidden)) == 0);
        EXPECT_EQ(0, count_entries(parent));
}

TEST(result_tar_unpack_never_replaces) {
        static const TarEntry entries[] = { GOOD_START };
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_close_ int tar = -EBADF;
        _cleanup_free_ char *err = NULL, *parent = NULL, *mine = NULL;

        ASSERT_OK(dirs_make(&d));
        ASSERT_TRUE(asprintf(&parent, "%s/dst", d.tmpl) > 0);
        ASSERT_EQ(0, mkdirat(d.dst, "j-1", 0755));
        ASSERT_OK(write_at(d.dst, "j-1/mine", "kept"));
        tar = tmp_tar(entries, ELEMENTSOF(entries));
        ASSERT_OK(tar);
        EXPECT_ERROR(EEXIST, ctl_result_tar_unpack(tar, parent, "j-1", &small, NULL, NULL, NULL, NULL, &err));
        ASSERT_OK(read_at(d.dst, "j-1/mine", &mine));
        EXPECT_STREQ("kept", mine);
        EXPECT_EQ(1, count_entries(parent));
}

TEST(result_tar_unpack_interrupted_keeps_nothing) {
        static const TarEntry entries[] = { GOOD_START };
        static volatile sig_atomic_t interrupted = SIGINT;
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_close_ int tar = -EBADF;
        _cleanup_free_ char *err = NULL, *parent = NULL;

        ASSERT_OK(dirs_make(&d));
        ASSERT_TRUE(asprintf(&parent, "%s/dst", d.tmpl) > 0);
        tar = tmp_tar(entries, ELEMENTSOF(entries));
        ASSERT_OK(tar);
        EXPECT_ERROR(EINTR, ctl_result_tar_unpack(tar, parent, "j-1", &small, &interrupted, NULL, NULL, NULL, &err));
        EXPECT_EQ(0, count_entries(parent));
}

TEST(result_tar_deeper_than_64_round_trips) {
        /* A result as deep as collect.c records (it walks 256 directories down) is exported and taken whole;
         * the export stopped at 64 before. */
        _cleanup_(dirs_done) Dirs d = DIRS_NULL;
        _cleanup_close_ int tar = -EBADF;
        _cleanup_free_ char *err = NULL, *parent = NULL, *path = NULL, *got = NULL;
        char rel[512] = "artifacts";

        ASSERT_OK(dirs_make(&d));
        ASSERT_TRUE(asprintf(&parent, "%s/dst", d.tmpl) > 0);
        ASSERT_EQ(0, mkdirat(d.src, rel, 0755));
        for (int i = 0; i < 200; i++) {
                strcat(rel, "/d");
                ASSERT_EQ(0, mkdirat(d.src, rel, 0755));
        }
        strcat(rel, "/f");
        ASSERT_OK(write_at(d.src, rel, "deep"));
        tar = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ASSERT_TRUE(tar >= 0);
        ASSERT_OK(ctl_result_tar_export(d.src, tar));
        ASSERT_EQ(0, lseek(tar, 0, SEEK_SET));
        ASSERT_OK(ctl_result_tar_unpack(tar, parent, "j-1", NULL, NULL, NULL, NULL, NULL, &err));
        ASSERT_TRUE(asprintf(&path, "j-1/%s", rel) > 0);
        ASSERT_OK(read_at(d.dst, path, &got));
        EXPECT_STREQ("deep", got);
}

/* A worker behind a fake ssh (it runs the remote command line with sh), whose pondctl is a script that sends
 * the tar at w->tar for `export` (exit 4, "no such job", if there is none); and a result signed with a key of
 * its own, exported to that tar. */
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

/* Signs a result of job_id with one artifact, out/patch.diff, and exports it to w->tar; tamper: its bytes
 * are changed after signing; extra: a file is put beside result.json (which result_verify() does not look
 * at). */
static int fake_worker_result(FakeWorker *w, const char *job_id, bool tamper, bool extra) {
        _cleanup_secret_ uint8_t *sk = NULL;
        _cleanup_manifest_ Manifest *m = NULL;
        _cleanup_json_ json_object *r = NULL;
        _cleanup_close_ int results = -EBADF, staged = -EBADF, art = -EBADF, ws = -EBADF, dir = -EBADF, tar = -EBADF;
        CollectLimits limits = { .max_bytes = 1 << 20, .max_entries = 100 };
        char *outputs[] = { "out", NULL }, sha[SHA256_HEX_SIZE], wsdir[128];
        json_object *manifest = NULL;
        int k;

        snprintf(wsdir, sizeof wsdir, "%s/ws-%s", w->top, job_id);
        if ((k = keys_load_sign_secret(w->keys, &sk)) < 0)
                return k;
        results = open(w->results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (results < 0)
                return -errno;
        /* the worker's result of an earlier call goes: this one replaces it */
        if ((k = rm_rf_at(AT_FDCWD, wsdir)) < 0 || (k = rm_rf_at(results, job_id)) < 0)
                return k;
        if (mkdir(wsdir, 0755) < 0 || (ws = open(wsdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
            mkdirat(ws, "out", 0755) < 0 || write_at(ws, "out/patch.diff", "--- a\n+++ b\n") < 0)
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
        json_object_object_add(r, "status", json_object_new_string("completed"));
        json_object_object_add(r, "input_sha", NULL);
        json_object_object_add(r, "output_sha", json_object_new_string(sha));
        json_object_object_add(r, "artifacts", manifest);
        if ((k = result_write_signed(results, job_id, r, sk, staged)) < 0)
                return k;
        dir = openat(results, job_id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        if (extra && write_at(dir, "run-me.sh", "#!/bin/sh\n") < 0)
                return -EIO;
        if (tamper) {
                (void) unlinkat(dir, "artifacts/out/patch.diff", 0);
                if (write_at(dir, "artifacts/out/patch.diff", "--- a\n+++ B\n") < 0)
                        return -EIO;
        }
        (void) unlink(w->tar);
        tar = open(w->tar, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (tar < 0)
                return -errno;
        return ctl_result_tar_export(dir, tar);
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

static int run_captured(char **argv, char **ret) {
        return run_captured_full(argv, ret, NULL);
}

static int lines_of(const char *path) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int n = 0;

        if (read_full_file(path, 1 << 20, &text, &len) < 0)
                return 0;
        for (size_t i = 0; i < len; i++)
                n += text[i] == '\n';
        return n;
}

TEST(host_result_into_keeps_only_what_verified) {
        _cleanup_(fake_worker_done) FakeWorker w = {};
        _cleanup_free_ char *out = NULL, *json = NULL, *signed_json = NULL, *path = NULL, *said = NULL;
        size_t len;
        int calls;

        ASSERT_OK(fake_worker_make(&w));
        char *argv[] = { "pondctl", "-H", "worker7", "result", "--pubkey", w.pub, "--into", w.into, "j-1", NULL };

        /* No result on the worker: 4, and nothing here; what the worker said about it comes escaped. */
        EXPECT_EQ(CTL_EXIT_NOT_FOUND, run_captured_full(argv, &out, &said));
        EXPECT_EQ(0, count_entries(w.into));
        TEST_LOG("%s", said ?: "");
        ASSERT_CONTAINS("No result of j-1.\\x1b]52;c;eA==\\x07\n", said);
        EXPECT_TRUE(strchr(said, 0x1b) == NULL);

        /* A result that does not verify: "FAILED", 1, and nothing of it here (it used to stay at INTO/ID). */
        ASSERT_OK(fake_worker_result(&w, "j-1", true, false));
        out = mfree_test(out);
        EXPECT_EQ(CTL_EXIT_ERROR, run_captured(argv, &out));
        TEST_LOG("%s", out ?: "");
        ASSERT_CONTAINS("FAILED: artifact 'out/patch.diff' sha256 mismatch", out);
        EXPECT_EQ(0, count_entries(w.into));

        /* A stream that leaves the destination: refused, nothing here, nothing outside. */
        {
                static const TarEntry hostile[] = { F("result.json", 3), F("../escaped", 3) };
                _cleanup_close_ int fd = open(w.tar, O_WRONLY | O_TRUNC | O_CLOEXEC);
                ASSERT_TRUE(fd >= 0);
                ASSERT_OK(tar_of(fd, hostile, ELEMENTSOF(hostile)));
        }
        out = mfree_test(out);
        EXPECT_EQ(CTL_EXIT_ERROR, run_captured(argv, &out));
        EXPECT_EQ(0, count_entries(w.into));
        EXPECT_TRUE(access("/tmp/escaped", F_OK) < 0);
        ASSERT_TRUE(asprintf(&path, "%s/escaped", w.top) > 0);
        EXPECT_TRUE(access(path, F_OK) < 0);

        /* A result that verifies, with an unsigned file beside it: nothing of it here either. */
        ASSERT_OK(fake_worker_result(&w, "j-1", false, true));
        out = mfree_test(out);
        EXPECT_EQ(CTL_EXIT_ERROR, run_captured(argv, &out));
        ASSERT_CONTAINS("FAILED: 'run-me.sh' is beside result.json", out);
        EXPECT_EQ(0, count_entries(w.into));
        {
                /* The control: result_verify() itself does not look beside result.json. */
                _cleanup_free_ char *dir = NULL, *e = NULL;
                uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
                ASSERT_TRUE(asprintf(&dir, "%s/j-1", w.results) > 0);
                ASSERT_OK(keys_load_sign_public(w.keys, pk));
                EXPECT_OK(result_verify(dir, pk, "j-1", NULL, NULL, &e));
        }

        /* The control: a result that verifies is put at INTO/ID, and only it. */
        ASSERT_OK(fake_worker_result(&w, "j-1", false, false));
        out = mfree_test(out);
        EXPECT_EQ(0, run_captured(argv, &out));
        TEST_LOG("%s", out ?: "");
        ASSERT_TRUE(out && strncmp(out, "OK\n", 3) == 0);
        EXPECT_EQ(1, count_entries(w.into));
        free(path);
        ASSERT_TRUE(asprintf(&path, "%s/j-1/artifacts/out/patch.diff", w.into) > 0);
        EXPECT_TRUE(access(path, F_OK) >= 0);

        /* Never replaced: refused before ssh is run at all. */
        calls = lines_of(w.ssh_log);
        out = mfree_test(out);
        EXPECT_EQ(CTL_EXIT_USAGE, run_captured(argv, &out));
        EXPECT_EQ(calls, lines_of(w.ssh_log));
        EXPECT_EQ(1, count_entries(w.into));

        /* --json: result.json as signed, byte for byte. */
        char *json_argv[] = { "pondctl", "-H", "worker7", "result", "--json", "--pubkey", w.pub, "j-1", NULL };
        EXPECT_EQ(0, run_captured(json_argv, &json));
        free(path);
        ASSERT_TRUE(asprintf(&path, "%s/j-1/%s", w.results, RESULT_JSON_FILE) > 0);
        ASSERT_OK(read_full_file(path, RESULT_JSON_MAX, &signed_json, &len));
        EXPECT_STREQ(signed_json, json);
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
