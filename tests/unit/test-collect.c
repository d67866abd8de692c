/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-collect.c: collection from a hostile workspace: a hand-built overlay upper/lower (whiteouts, opaque dirs,
 * symlinks out of the tree, fifos), the same through a real overlayfs mount when possible, declared outputs
 * (symlinks, fifos, missing, escapes), merging of outputs with changes, the caps, and the canonical manifest. */
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "policy/spec.h"
#include "result/collect.h"
#include "result/result.h"
#include "tests.h"

/* Bound on the peak RSS of collecting JOB_SPEC_MAX_ARTIFACT_FILES files (pond-run has MemoryMax=256M). */
#define COLLECT_TEST_RSS_MAX_KIB (96 * 1024)

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

static char *read_at(int dirfd, const char *path) {
        static char buf[256];
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return NULL;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n < 0)
                return NULL;
        buf[n] = 0;
        return buf;
}

/* tmp/{lower,upper,merged,artifacts}: returns their fds (and the tmp dir path in tmpl). */
typedef struct Dirs {
        char tmpl[64];
        int lower, upper, merged, art;
} Dirs;

static int dirs_make(Dirs *d) {
        strcpy(d->tmpl, "/tmp/pond-test-collect-XXXXXX");
        if (!mkdtemp(d->tmpl))
                return -errno;
        int *fds[] = { &d->lower, &d->upper, &d->merged, &d->art };
        const char *names[] = { "lower", "upper", "merged", "artifacts" };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                char p[128];
                snprintf(p, sizeof p, "%s/%s", d->tmpl, names[i]);
                if (mkdir(p, 0755) < 0)
                        return -errno;
                *fds[i] = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (*fds[i] < 0)
                        return -errno;
        }
        return 0;
}

static void dirs_done(Dirs *d) {
        safe_close(d->lower);
        safe_close(d->upper);
        safe_close(d->merged);
        safe_close(d->art);
        rm_rf(d->tmpl);
}

static const Artifact *find(const Manifest *m, const char *path) {
        for (size_t i = 0; i < m->n_artifacts; i++)
                if (streq(m->artifacts[i].path, path))
                        return &m->artifacts[i];
        return NULL;
}

/* "kind/change[+output]" of path, or "absent". */
static const char *kc(const Manifest *m, const char *path) {
        static char buf[64];
        const Artifact *a = find(m, path);
        if (!a)
                return "absent";
        snprintf(buf, sizeof buf, "%s/%s%s", artifact_kind_to_string(a->kind), artifact_change_to_string(a->change),
                 a->output && a->change != CHANGE_OUTPUT ? "+output" : "");
        return buf;
}

static const CollectLimits big = { .max_bytes = 1 << 20, .max_entries = 1000 };

static int build_lower(int lower) {
        if (mkdirat(lower, "dir", 0755) < 0 || mkdirat(lower, "opq", 0755) < 0 || mkdirat(lower, "opq/sub", 0755) < 0)
                return -errno;
        const char *files[] = { "keep.txt", "mod.txt", "del.txt", "dir/sub.txt", "opq/a", "opq/b", "opq/sub/c" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (write_at(lower, files[i], "old\n") < 0)
                        return -errno;
        return 0;
}

TEST(overlay_change_set) {
        _cleanup_manifest_ Manifest *m = NULL;
        Dirs d;

        if (geteuid() != 0) {
                TEST_SKIP("mknod of a whiteout and trusted.* xattrs need root");
        }
        ASSERT_OK(dirs_make(&d));
        ASSERT_OK(build_lower(d.lower));
        /* What overlayfs leaves in upper after the job: modified, added, deleted (whiteout), an opaque dir
         * (rm -r opq; mkdir opq; echo > opq/a), a copied-up but unchanged dir, hostile links, a fifo. */
        ASSERT_OK(write_at(d.upper, "mod.txt", "new\n"));
        ASSERT_OK(write_at(d.upper, "new.txt", "added\n"));
        ASSERT_OK(mkdirat(d.upper, "newdir", 0755));
        ASSERT_OK(write_at(d.upper, "newdir/f", "f\n"));
        ASSERT_OK(mkdirat(d.upper, "emptydir", 0755));
        ASSERT_OK(mkdirat(d.upper, "dir", 0755));
        ASSERT_OK(mknodat(d.upper, "del.txt", S_IFCHR | 0000, makedev(0, 0)));
        ASSERT_OK(mkdirat(d.upper, "opq", 0755));
        ASSERT_OK(write_at(d.upper, "opq/a", "replaced\n"));
        _cleanup_close_ int opq = openat(d.upper, "opq", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_OK(fsetxattr(opq, "trusted.overlay.opaque", "y", 1, 0));
        /* A copy-up with nothing changed but times (git "freshening" an object): not a change. */
        ASSERT_OK(write_at(d.upper, "keep.txt", "old\n"));
        ASSERT_OK(symlinkat("/etc/passwd", d.upper, "evil1"));
        ASSERT_OK(symlinkat("../../x", d.upper, "evil2"));
        ASSERT_OK(mkfifoat(d.upper, "pipe", 0644));

        alarm(20);
        ASSERT_OK(collect_artifacts(d.upper, d.lower, -EBADF, NULL, d.art, &big, &m));
        alarm(0);
        ASSERT_EQ(11, m->n_artifacts);
        ASSERT_STREQ("deleted/deleted", kc(m, "del.txt"));
        ASSERT_STREQ("dir/added", kc(m, "emptydir"));
        ASSERT_STREQ("link/added", kc(m, "evil1"));
        ASSERT_STREQ("/etc/passwd", find(m, "evil1")->target);
        ASSERT_STREQ("../../x", find(m, "evil2")->target);
        ASSERT_STREQ("file/modified", kc(m, "mod.txt"));
        ASSERT_STREQ("file/added", kc(m, "new.txt"));
        ASSERT_STREQ("file/added", kc(m, "newdir/f"));
        ASSERT_STREQ("file/modified", kc(m, "opq/a"));
        ASSERT_STREQ("deleted/deleted", kc(m, "opq/b"));
        ASSERT_STREQ("deleted/deleted", kc(m, "opq/sub"));
        ASSERT_STREQ("special/added", kc(m, "pipe"));
        ASSERT_STREQ("absent", kc(m, "dir"));
        ASSERT_STREQ("absent", kc(m, "keep.txt"));
        ASSERT_FALSE(m->truncated);
        for (size_t i = 1; i < m->n_artifacts; i++)
                ASSERT_TRUE(strcmp(m->artifacts[i - 1].path, m->artifacts[i].path) < 0);

        /* Bytes from upper, and links never followed: nothing of /etc/passwd lands in artifacts/. */
        ASSERT_STREQ("new\n", read_at(d.art, "mod.txt"));
        ASSERT_STREQ("f\n", read_at(d.art, "newdir/f"));
        ASSERT_TRUE(faccessat(d.art, "evil1", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT_TRUE(faccessat(d.art, "pipe", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT_EQ(4 + 6 + 2 + 9, m->total_bytes);
        dirs_done(&d);
}

/* The same scenario produced by the kernel: mount a real overlay in a private mount namespace (child process),
 * act as the job would in merged, then collect from upper/lower. */
static int real_overlay_child(Dirs *d) {
        _cleanup_manifest_ Manifest *m = NULL;
        char opts[512], merged[128];

        snprintf(opts, sizeof opts, "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", d->tmpl, d->tmpl, d->tmpl);
        snprintf(merged, sizeof merged, "%s/merged", d->tmpl);
        if (mount("overlay", merged, "overlay", 0, opts) < 0)
                return 77;
        _cleanup_close_ int mfd = open(merged, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mfd < 0 || write_at(mfd, "mod.txt", "new\n") < 0 || unlinkat(mfd, "del.txt", 0) < 0 ||
            unlinkat(mfd, "opq/sub/c", 0) < 0 || unlinkat(mfd, "opq/sub", AT_REMOVEDIR) < 0 ||
            unlinkat(mfd, "opq/a", 0) < 0 || unlinkat(mfd, "opq/b", 0) < 0 ||
            unlinkat(mfd, "opq", AT_REMOVEDIR) < 0 || mkdirat(mfd, "opq", 0755) < 0 ||
            write_at(mfd, "opq/a", "replaced\n") < 0 || symlinkat("/etc/passwd", mfd, "evil1") < 0)
                return 2;
        char *outs[] = { (char *) "mod.txt", (char *) "evil1", NULL };
        if (collect_artifacts(d->upper, d->lower, mfd, outs, d->art, &big, &m) < 0)
                return 3;
        if (!streq(kc(m, "del.txt"), "deleted/deleted") || !streq(kc(m, "mod.txt"), "file/modified+output") ||
            !streq(kc(m, "opq/a"), "file/modified") || !streq(kc(m, "opq/b"), "deleted/deleted") ||
            !streq(kc(m, "opq/sub"), "deleted/deleted") || !streq(kc(m, "evil1"), "link/added+output") ||
            m->n_artifacts != 6)
                return 4;
        return 0;
}

TEST(real_overlayfs_change_set) {
        Dirs d;
        int status;

        if (geteuid() != 0) {
                TEST_SKIP("mounting overlayfs needs root");
        }
        ASSERT_OK(dirs_make(&d));
        ASSERT_OK(build_lower(d.lower));
        char work[128];
        snprintf(work, sizeof work, "%s/work", d.tmpl);
        ASSERT_OK(mkdir(work, 0700));
        pid_t pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                        _exit(77);
                _exit(real_overlay_child(&d));
        }
        ASSERT_EQ(pid, waitpid(pid, &status, 0));
        dirs_done(&d);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                TEST_SKIP("cannot mount overlayfs here");
        ASSERT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

TEST(outputs_hostile) {
        _cleanup_manifest_ Manifest *m = NULL;
        Dirs d;
        char *outs[] = { "out", "single.txt", "outpipe", "escape", "via/passwd", "nope.txt", "out/report.txt", NULL };

        ASSERT_OK(dirs_make(&d));
        ASSERT_OK(mkdirat(d.merged, "out", 0755));
        ASSERT_OK(mkdirat(d.merged, "out/nested", 0755));
        ASSERT_OK(mkdirat(d.merged, "out/empty", 0755));
        ASSERT_OK(write_at(d.merged, "out/report.txt", "report\n"));
        ASSERT_OK(write_at(d.merged, "out/nested/x", "x\n"));
        ASSERT_OK(symlinkat("/etc/shadow", d.merged, "out/shadow"));
        ASSERT_OK(write_at(d.merged, "single.txt", "single\n"));
        ASSERT_OK(mkfifoat(d.merged, "outpipe", 0644));
        ASSERT_OK(symlinkat("/etc/passwd", d.merged, "escape"));
        ASSERT_OK(symlinkat("/etc", d.merged, "via"));

        alarm(20); /* a fifo that was opened for reading would block here */
        ASSERT_OK(collect_artifacts(-EBADF, -EBADF, d.merged, outs, d.art, &big, &m));
        alarm(0);
        ASSERT_EQ(8, m->n_artifacts);
        ASSERT_STREQ("link/output", kc(m, "escape"));
        ASSERT_STREQ("/etc/passwd", find(m, "escape")->target);
        ASSERT_STREQ("missing/output", kc(m, "nope.txt"));
        ASSERT_STREQ("file/output", kc(m, "out/nested/x"));
        ASSERT_STREQ("file/output", kc(m, "out/report.txt")); /* declared twice, recorded once */
        ASSERT_STREQ("link/output", kc(m, "out/shadow"));
        ASSERT_STREQ("special/output", kc(m, "outpipe"));
        ASSERT_STREQ("file/output", kc(m, "single.txt"));
        ASSERT_STREQ("missing/output", kc(m, "via/passwd")); /* resolving it would follow a symlink */
        ASSERT_STREQ("absent", kc(m, "out/empty"));
        ASSERT_STREQ("report\n", read_at(d.art, "out/report.txt"));
        ASSERT_TRUE(faccessat(d.art, "escape", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT_TRUE(faccessat(d.art, "via", F_OK, AT_SYMLINK_NOFOLLOW) < 0);

        char *bad[] = { "../etc/passwd", NULL };
        manifest_free(TAKE_PTR(m));
        ASSERT_ERROR(EINVAL, collect_artifacts(-EBADF, -EBADF, d.merged, bad, d.art, &big, &m));
        dirs_done(&d);
}

TEST(output_that_is_also_a_change) {
        _cleanup_manifest_ Manifest *m = NULL;
        char *outs[] = { "new.txt", NULL };
        Dirs d;

        ASSERT_OK(dirs_make(&d));
        ASSERT_OK(write_at(d.upper, "new.txt", "n\n"));
        ASSERT_OK(write_at(d.merged, "new.txt", "n\n"));
        ASSERT_OK(collect_artifacts(d.upper, d.lower, d.merged, outs, d.art, &big, &m));
        ASSERT_EQ(1, m->n_artifacts);
        ASSERT_STREQ("file/added+output", kc(m, "new.txt"));
        ASSERT_TRUE(find(m, "new.txt")->output);
        dirs_done(&d);
}

TEST(caps_truncate) {
        _cleanup_manifest_ Manifest *m = NULL;
        const char *names[] = { "a", "b", "c", "d", "e" };
        Dirs d;

        ASSERT_OK(dirs_make(&d));
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                ASSERT_OK(write_at(d.upper, names[i], "0123456789"));

        CollectLimits entries = { .max_bytes = 1 << 20, .max_entries = 2 };
        ASSERT_OK(collect_artifacts(d.upper, d.lower, -EBADF, NULL, d.art, &entries, &m));
        ASSERT_EQ(2, m->n_artifacts);
        ASSERT_TRUE(m->truncated);
        ASSERT_EQ(3, m->skipped);
        manifest_free(TAKE_PTR(m));
        dirs_done(&d);

        ASSERT_OK(dirs_make(&d));
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                ASSERT_OK(write_at(d.upper, names[i], "0123456789"));
        ASSERT_OK(symlinkat("t", d.upper, "z"));
        CollectLimits bytes = { .max_bytes = 25, .max_entries = 100 };
        ASSERT_OK(collect_artifacts(d.upper, d.lower, -EBADF, NULL, d.art, &bytes, &m));
        /* Sorted order: a and b fit, c does not, so nothing after it is copied; the link costs no bytes. */
        ASSERT_EQ(3, m->n_artifacts);
        ASSERT_STREQ("a", m->artifacts[0].path);
        ASSERT_STREQ("b", m->artifacts[1].path);
        ASSERT_STREQ("z", m->artifacts[2].path);
        ASSERT_EQ(20, m->total_bytes);
        ASSERT_TRUE(m->truncated);
        ASSERT_EQ(3, m->skipped);
        ASSERT_TRUE(faccessat(d.art, "c", F_OK, 0) < 0);
        dirs_done(&d);
}

TEST(names_not_utf8_are_skipped) {
        _cleanup_manifest_ Manifest *m = NULL;
        Dirs d;

        ASSERT_OK(dirs_make(&d));
        ASSERT_OK(write_at(d.upper, "bad\xff", "x"));
        ASSERT_OK(write_at(d.upper, "caf\xc3\xa9", "x"));
        ASSERT_OK(collect_artifacts(d.upper, d.lower, -EBADF, NULL, d.art, &big, &m));
        ASSERT_EQ(1, m->n_artifacts);
        ASSERT_STREQ("caf\xc3\xa9", m->artifacts[0].path);
        ASSERT_EQ(1, m->skipped);
        ASSERT_TRUE(m->truncated);
        dirs_done(&d);
}

TEST(manifest_canonical_serialization) {
        _cleanup_manifest_ Manifest *m = NULL;
        _cleanup_json_ json_object *j = NULL;
        char expect_sha[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE];
        Dirs d;

        ASSERT_OK(dirs_make(&d));
        ASSERT_OK(mkdirat(d.merged, "a", 0755));
        ASSERT_OK(write_at(d.merged, "a/b.txt", "abc"));
        ASSERT_OK(symlinkat("x/\"y\"", d.merged, "l"));
        char *outs2[] = { "a/b.txt", "l", NULL };
        ASSERT_OK(collect_artifacts(-EBADF, -EBADF, d.merged, outs2, d.art, &big, &m));
        ASSERT_OK(manifest_to_json(m, &j));
        const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        const char *expect =
                "[{\"path\":\"a/b.txt\",\"kind\":\"file\",\"change\":\"output\",\"output\":true,\"size\":3,"
                "\"sha256\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"},"
                "{\"path\":\"l\",\"kind\":\"link\",\"change\":\"output\",\"output\":true,\"size\":5,"
                "\"target\":\"x/\\\"y\\\"\"}]";
        ASSERT_STREQ(expect, s);
        sha256_hex(expect, strlen(expect), expect_sha);
        ASSERT_OK(manifest_sha(m, got));
        ASSERT_STREQ(expect_sha, got);

        /* A parsed copy (what a verifier has) digests the same. */
        _cleanup_json_ json_object *parsed = json_tokener_parse(expect);
        ASSERT_OK(manifest_json_sha(parsed, got));
        ASSERT_STREQ(expect_sha, got);

        Manifest empty = {};
        ASSERT_OK(manifest_sha(&empty, got));
        sha256_hex("[]", 2, expect_sha);
        ASSERT_STREQ(expect_sha, got);
        dirs_done(&d);
}

/* The supervisor collects under its unit's MemoryMax: the spec's largest artifact_files, one-byte files in
 * 100 directories, collected, hashed and serialized as the signed result holds them, in bounded memory
 * (peak RSS measured with getrusage; the forked test starts small). */
TEST(collect_spec_maximum_in_bounded_memory) {
        _cleanup_manifest_ Manifest *m = NULL;
        _cleanup_json_ json_object *result = json_object_new_object(), *arr = NULL;
        CollectLimits lim = { .max_bytes = JOB_SPEC_MAX_ARTIFACT_BYTES, .max_entries = JOB_SPEC_MAX_ARTIFACT_FILES };
        char sha[SHA256_HEX_SIZE], name[32];
        struct rusage ru;
        const char *text;
        size_t len;
        Dirs d;

        ASSERT_OK(dirs_make(&d));
        for (unsigned i = 0; i < JOB_SPEC_MAX_ARTIFACT_FILES; i++) {
                if (i % 1000 == 0) {
                        snprintf(name, sizeof name, "d%03u", i / 1000);
                        ASSERT_OK(mkdirat(d.upper, name, 0755));
                }
                snprintf(name, sizeof name, "d%03u/f%06u", i / 1000, i);
                _cleanup_close_ int fd = openat(d.upper, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                ASSERT_TRUE(fd >= 0 && write(fd, "x", 1) == 1);
        }
        ASSERT_OK(collect_artifacts(d.upper, -EBADF, -EBADF, NULL, d.art, &lim, &m));
        ASSERT_EQ(JOB_SPEC_MAX_ARTIFACT_FILES, m->n_artifacts);
        ASSERT_FALSE(m->truncated);
        ASSERT_OK(manifest_sha(m, sha));
        ASSERT_OK(manifest_to_json_streamed(&m, &arr));
        json_object_object_add(result, "artifacts", TAKE_PTR(arr));
        text = json_object_to_json_string_length(result, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        ASSERT_TRUE(text != NULL);
        ASSERT_TRUE(len < RESULT_JSON_MAX);
        ASSERT_OK(getrusage(RUSAGE_SELF, &ru));
        log_info("collected %u files: peak RSS %ld KiB, result.json %zu bytes", JOB_SPEC_MAX_ARTIFACT_FILES,
                 ru.ru_maxrss, len);
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow and quarantine are not the collector's */
        ASSERT_TRUE(ru.ru_maxrss < COLLECT_TEST_RSS_MAX_KIB);
#endif

        /* What is serialized parses back into the manifest that was hashed. */
        _cleanup_json_ json_object *parsed = json_tokener_parse(text);
        ASSERT_TRUE(parsed != NULL);
        char again[SHA256_HEX_SIZE];
        ASSERT_OK(manifest_json_sha(json_object_object_get(parsed, "artifacts"), again));
        ASSERT_STREQ(sha, again);
        dirs_done(&d);
}

TEST_MAIN();
