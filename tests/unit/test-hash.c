/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-hash.c: sha256 vectors, hash_fd() bounds, the tree digest format as documented, input_sha stability and
 * sensitivity, and that a fifo in the checkout never blocks the walk. */
#include <fcntl.h>
#include <ftw.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "hash/hash.h"
#include "job.h"
#include "record/task-sha.h"
#include "tests.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static void rm_rf(const char *p) {
        nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_at(int dirfd, const char *path, const char *content, mode_t mode) {
        _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t) strlen(content) || fchmod(fd, mode) < 0)
                return -errno;
        return 0;
}

/* A checkout with a file, an executable, a symlink out of the tree, a subdirectory and a fifo. */
static int make_tree(char *tmpl, int *ret_fd) {
        if (!mkdtemp(tmpl))
                return -errno;
        int fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || mkdirat(fd, "d", 0755) < 0 || write_at(fd, "a", "hi\n", 0644) < 0 ||
            write_at(fd, "d/run", "#!/bin/sh\n", 0755) < 0 || symlinkat("/etc/passwd", fd, "l") < 0 ||
            mkfifoat(fd, "d/pipe", 0644) < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

static void input_of(int dirfd, const char *spec, char ret[SHA256_HEX_SIZE]) {
        if (input_sha_compute(spec, strlen(spec), dirfd, ret) < 0)
                strcpy(ret, "error");
}

TEST(sha256_vectors) {
        char hex[SHA256_HEX_SIZE];

        sha256_hex("", 0, hex);
        ASSERT_STREQ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", hex);
        sha256_hex("abc", 3, hex);
        ASSERT_STREQ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", hex);
        sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
        ASSERT_STREQ("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", hex);
}

TEST(hash_fd_bounded) {
        char path[] = "/tmp/pond-test-hash-XXXXXX", hex[SHA256_HEX_SIZE];
        uint8_t d[SHA256_SIZE];
        uint64_t size = 0;
        _cleanup_close_ int fd = mkostemp(path, O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        unlink(path);
        ASSERT_EQ(3, write(fd, "abc", 3));
        ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
        ASSERT_OK(hash_fd(fd, -EBADF, 3, d, &size));
        ASSERT_EQ(3, size);
        hex_encode(d, sizeof d, hex);
        ASSERT_STREQ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", hex);
        ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
        ASSERT_ERROR(EFBIG, hash_fd(fd, -EBADF, 2, d, &size));
}

/* Recomputes the digest from docs/result-format.md by hand: the format, not just the code, is what is tested. */
TEST(tree_digest_matches_documented_format) {
        char tmpl[] = "/tmp/pond-test-tree-XXXXXX", a_hex[SHA256_HEX_SIZE], run_hex[SHA256_HEX_SIZE];
        char records[1024], expect_hex[SHA256_HEX_SIZE], got_hex[SHA256_HEX_SIZE];
        uint8_t got[SHA256_SIZE];
        int fd = -EBADF;

        ASSERT_OK(make_tree(tmpl, &fd));
        sha256_hex("hi\n", 3, a_hex);
        sha256_hex("#!/bin/sh\n", 10, run_hex);
        /* Sorted bytewise by path: "a" < "d" < "d/pipe" < "d/run" < "l". */
        snprintf(records, sizeof records,
                 "f 1:a 3 %s\n"
                 "d 1:d 0 -\n"
                 "p 6:d/pipe 0 -\n"
                 "x 5:d/run 10 %s\n"
                 "l 1:l 11 11:/etc/passwd\n",
                 a_hex, run_hex);
        sha256_hex(records, strlen(records), expect_hex);
        ASSERT_OK(tree_digest(fd, got));
        hex_encode(got, sizeof got, got_hex);
        ASSERT_STREQ(expect_hex, got_hex);
        safe_close(fd);
        rm_rf(tmpl);
}

TEST(input_sha_without_checkout) {
        uint8_t buf[sizeof INPUT_SHA_DOMAIN - 1 + 2 * SHA256_SIZE];
        char expect[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE];
        const char *spec = "{\"job_id\":\"j1\"}\n";

        memcpy(buf, INPUT_SHA_DOMAIN, sizeof INPUT_SHA_DOMAIN - 1);
        crypto_hash_sha256(buf + sizeof INPUT_SHA_DOMAIN - 1, (const uint8_t *) spec, strlen(spec));
        crypto_hash_sha256(buf + sizeof INPUT_SHA_DOMAIN - 1 + SHA256_SIZE, (const uint8_t *) "", 0);
        sha256_hex(buf, sizeof buf, expect);
        ASSERT_OK(input_sha_compute(spec, strlen(spec), -EBADF, got));
        ASSERT_STREQ(expect, got);
}

TEST(input_sha_stable_and_sensitive) {
        char tmpl[] = "/tmp/pond-test-input-XXXXXX", base[SHA256_HEX_SIZE], h[SHA256_HEX_SIZE];
        const char *spec = "{\"job_id\":\"j1\"}";
        int fd = -EBADF;

        ASSERT_OK(make_tree(tmpl, &fd));
        input_of(fd, spec, base);
        input_of(fd, spec, h);
        ASSERT_STREQ(base, h);

        input_of(fd, "{\"job_id\":\"j2\"}", h); /* one spec byte */
        ASSERT_FALSE(streq(base, h));
        input_of(fd, "{\"job_id\":\"j1\"} ", h); /* the spec exactly as issued, whitespace included */
        ASSERT_FALSE(streq(base, h));

        ASSERT_OK(write_at(fd, "a", "ho\n", 0644)); /* content */
        input_of(fd, spec, h);
        ASSERT_FALSE(streq(base, h));
        ASSERT_OK(write_at(fd, "a", "hi\n", 0644));
        input_of(fd, spec, h);
        ASSERT_STREQ(base, h); /* back to the same bytes: same digest (mtime is not part of it) */

        ASSERT_OK(fchmodat(fd, "a", 0755, 0)); /* mode */
        input_of(fd, spec, h);
        ASSERT_FALSE(streq(base, h));
        ASSERT_OK(fchmodat(fd, "a", 0644, 0));

        ASSERT_OK(unlinkat(fd, "l", 0)); /* symlink target */
        ASSERT_OK(symlinkat("/etc/shadow", fd, "l"));
        input_of(fd, spec, h);
        ASSERT_FALSE(streq(base, h));
        ASSERT_OK(unlinkat(fd, "l", 0));
        ASSERT_OK(symlinkat("/etc/passwd", fd, "l"));
        input_of(fd, spec, h);
        ASSERT_STREQ(base, h);

        ASSERT_OK(renameat(fd, "a", fd, "b")); /* rename */
        input_of(fd, spec, h);
        ASSERT_FALSE(streq(base, h));
        safe_close(fd);
        rm_rf(tmpl);
}

TEST(fifo_never_blocks) {
        char tmpl[] = "/tmp/pond-test-fifo-XXXXXX", h[SHA256_HEX_SIZE];
        int fd = -EBADF;

        ASSERT_OK(make_tree(tmpl, &fd));
        alarm(20); /* a walk that opened the fifo would hang here: fail loudly instead */
        ASSERT_OK(input_sha_compute("x", 1, fd, h));
        alarm(0);
        safe_close(fd);
        rm_rf(tmpl);
}

TEST(openat_beneath_refuses_escapes) {
        char tmpl[] = "/tmp/pond-test-beneath-XXXXXX";
        int fd = -EBADF;

        ASSERT_OK(make_tree(tmpl, &fd));
        ASSERT_ERROR(ELOOP, openat_beneath(fd, "l", O_RDONLY, 0));
        ASSERT_ERROR(EXDEV, openat_beneath(fd, "../etc/passwd", O_RDONLY, 0));
        ASSERT_ERROR(EXDEV, openat_beneath(fd, "/etc/passwd", O_RDONLY, 0));
        int p = openat_beneath(fd, "l", O_PATH, 0);
        ASSERT_TRUE(p >= 0);
        safe_close(p);
        safe_close(fd);
        rm_rf(tmpl);
}

TEST_MAIN();

/* task_sha: the same task under another id, from another checkout path, with other sealed credentials, is
 * the same task; another command or another tree is not. */
TEST(task_sha_ignores_what_is_per_run) {
        const char *a = "{\"job_id\":\"j-1\",\"tenant\":\"t\",\"command\":[\"make\"],\"checkout\":\"/src/a\"}";
        const char *b = "{\"job_id\":\"j-2\",\"tenant\":\"t\",\"command\":[\"make\"],\"checkout\":\"/other/b\","
                        "\"credentials\":[{\"name\":\"k\",\"sealed\":\"xyz\"}]}";
        const char *c = "{\"job_id\":\"j-3\",\"tenant\":\"t\",\"command\":[\"make\",\"-j2\"],\"checkout\":\"/src/a\"}";
        uint8_t tree[SHA256_SIZE] = { 1 }, other[SHA256_SIZE] = { 2 };
        char ha[SHA256_HEX_SIZE], hb[SHA256_HEX_SIZE], hc[SHA256_HEX_SIZE], ht[SHA256_HEX_SIZE];

        ASSERT_OK(task_sha_compute(a, strlen(a), tree, ha));
        ASSERT_OK(task_sha_compute(b, strlen(b), tree, hb));
        ASSERT_OK(task_sha_compute(c, strlen(c), tree, hc));
        ASSERT_OK(task_sha_compute(a, strlen(a), other, ht));
        EXPECT_STREQ(ha, hb);
        EXPECT_TRUE(strcmp(ha, hc) != 0);
        EXPECT_TRUE(strcmp(ha, ht) != 0);
        EXPECT_ERROR(EINVAL, task_sha_compute("[1]", 3, tree, ha));
        EXPECT_TRUE(task_sha_compute("{\"a\":", 5, tree, ha) < 0);
}

/* A job that never started hashing (it failed after acceptance) gets input_sha from the tree acceptance
 * opened, never from its path resolved again: the path, re-pointed at another tree since, changes nothing.
 * A checkout that acceptance did not open leaves input_sha not computed. */
TEST(late_input_sha_is_the_accepted_tree) {
        static const char spec[] = "{\"checkout\":\"co\"}";
        char dir[] = "/tmp/test-hash-late.XXXXXX", p[128], q[128], expected[SHA256_HEX_SIZE];
        const char *hex = NULL;
        int fd;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        ASSERT_EQ(0, setenv("POND_STATEDIR", dir, 1));
        snprintf(p, sizeof p, "%s/a", dir);
        ASSERT_EQ(0, mkdir(p, 0755));
        snprintf(p, sizeof p, "%s/b", dir);
        ASSERT_EQ(0, mkdir(p, 0755));
        snprintf(p, sizeof p, "%s/b/secret", dir);
        fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(6, write(fd, "secret", 6));
        close(fd);
        snprintf(p, sizeof p, "%s/co", dir);
        ASSERT_EQ(0, symlink("a", p));
        usleep(50 * 1000); /* made a clock tick or more before it is read: not a change under the job */

        {
                _cleanup_(job_done) Job j = JOB_NULL;

                j.input.spec_buf = strdup(spec);
                j.input.spec_len = strlen(spec);
                j.input.spec = calloc(1, sizeof *j.input.spec);
                ASSERT_TRUE(j.input.spec_buf && j.input.spec);
                j.input.spec->checkout = strdup(p);
                /* acceptance opens the checkout; then the path is re-pointed at another tree */
                j.input.checkout_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ASSERT_TRUE(j.input.checkout_fd >= 0);
                ASSERT_OK(input_sha_compute(spec, strlen(spec), j.input.checkout_fd, expected));
                ASSERT_EQ(0, unlink(p));
                ASSERT_EQ(0, symlink("b", p));
                ASSERT_OK(job_input_hash_result(&j, &hex));
                ASSERT_TRUE(hex != NULL);
                ASSERT_STREQ(expected, hex);
        }
        {
                _cleanup_(job_done) Job j = JOB_NULL;

                j.input.spec_buf = strdup(spec);
                j.input.spec_len = strlen(spec);
                j.input.spec = calloc(1, sizeof *j.input.spec);
                ASSERT_TRUE(j.input.spec_buf && j.input.spec);
                j.input.spec->checkout = strdup(p);
                ASSERT_OK(job_input_hash_result(&j, &hex));
                ASSERT_TRUE(hex == NULL);
        }
        snprintf(q, sizeof q, "%s", dir);
        ASSERT_OK(rm_rf_at(AT_FDCWD, q));
}

static int write_file(const char *dir, const char *name, const char *text) {
        char p[256];
        int fd, r;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        r = write(fd, text, strlen(text)) == (ssize_t) strlen(text) ? 0 : -EIO;
        close(fd);
        return r;
}

/* A tree: "f", "d/g"; made, then a clock tick or more passes. */
static int make_changing_tree(char dir[]) {
        char p[256];
        int r;

        if (!mkdtemp(dir))
                return -errno;
        snprintf(p, sizeof p, "%s/d", dir);
        if (mkdir(p, 0755) < 0)
                return -errno;
        r = write_file(dir, "f", "one\n");
        if (r >= 0)
                r = write_file(dir, "d/g", "two\n");
        usleep(50 * 1000);
        return r;
}

static int changed_since(const char *dir, const struct timespec *since) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bool changed = false;
        int r;

        if (fd < 0)
                return -errno;
        r = tree_changed_since(fd, since, &changed);
        return r < 0 ? r : changed;
}

/* tree_changed_since(): nothing touched is unchanged (the control); a write deep in the tree, the same bytes
 * written back (the tree digest is the same: the control), a chmod, a removal, a rename within the tree each
 * count as a change. */
TEST(tree_changed_since_sees_every_change) {
        char dir[] = "/tmp/test-hash-changed.XXXXXX", p[256], q[256];
        uint8_t before[SHA256_SIZE], after[SHA256_SIZE];
        struct timespec since;
        int fd;

        ASSERT_OK(make_changing_tree(dir));
        ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME_COARSE, &since));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(tree_digest(fd, before));
        ASSERT_EQ(0, changed_since(dir, &since));
        /* The same bytes written back: the digest cannot tell, the ctime can. */
        ASSERT_OK(write_file(dir, "d/g", "two\n"));
        ASSERT_OK(tree_digest(fd, after));
        EXPECT_TRUE(memcmp(before, after, SHA256_SIZE) == 0);
        EXPECT_EQ(1, changed_since(dir, &since));
        close(fd);

        usleep(50 * 1000);
        ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME_COARSE, &since));
        EXPECT_EQ(0, changed_since(dir, &since));
        snprintf(p, sizeof p, "%s/f", dir);
        ASSERT_EQ(0, chmod(p, 0755));
        EXPECT_EQ(1, changed_since(dir, &since));

        usleep(50 * 1000);
        ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME_COARSE, &since));
        EXPECT_EQ(0, changed_since(dir, &since));
        ASSERT_EQ(0, unlink(p));
        EXPECT_EQ(1, changed_since(dir, &since));

        usleep(50 * 1000);
        ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME_COARSE, &since));
        EXPECT_EQ(0, changed_since(dir, &since));
        snprintf(p, sizeof p, "%s/d/g", dir);
        snprintf(q, sizeof q, "%s/d/h", dir);
        ASSERT_EQ(0, rename(p, q));
        EXPECT_EQ(1, changed_since(dir, &since));

        fd = open(p, O_RDONLY | O_CLOEXEC);
        EXPECT_TRUE(fd < 0);
        fd = open(q, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        bool changed;
        EXPECT_ERROR(ENOTDIR, tree_changed_since(fd, &since, &changed));
        close(fd);
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

/* A job's input hashed from its read-only view while it runs: the owner edits the checkout meanwhile (and puts
 * the bytes back), so the result gives no input_sha and says input_changed. The control: the same job with
 * nobody touching the checkout gets the input_sha of the tree. */
TEST(input_changed_under_a_running_job_gives_no_input_sha) {
        static const char spec[] = "{\"checkout\":\"co\"}";
        char dir[] = "/tmp/test-hash-running.XXXXXX", expected[SHA256_HEX_SIZE];
        const char *hex = NULL;

        ASSERT_OK(make_changing_tree(dir));
        ASSERT_EQ(0, setenv("POND_STATEDIR", dir, 1));
        for (int edit = 0; edit < 2; edit++) {
                _cleanup_(job_done) Job j = JOB_NULL;
                int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                ASSERT_TRUE(fd >= 0);
                ASSERT_OK(input_sha_compute(spec, strlen(spec), fd, expected));
                j.input.spec_buf = strdup(spec);
                j.input.spec_len = strlen(spec);
                ASSERT_TRUE(j.input.spec_buf != NULL);
                ASSERT_OK(job_input_hash_start(&j.input_hash, j.input.spec_buf, j.input.spec_len, fd, true));
                /* the payload runs; its owner edits the checkout and puts it back */
                if (edit) {
                        ASSERT_OK(write_file(dir, "d/g", "edited\n"));
                        ASSERT_OK(write_file(dir, "d/g", "two\n"));
                }
                ASSERT_OK(job_input_hash_result(&j, &hex));
                if (edit) {
                        EXPECT_TRUE(hex == NULL);
                        EXPECT_TRUE(j.input_hash.changed);
                        EXPECT_FALSE(j.input_hash.have_tree);
                } else {
                        ASSERT_TRUE(hex != NULL);
                        EXPECT_STREQ(expected, hex);
                        EXPECT_FALSE(j.input_hash.changed);
                }
        }
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}
