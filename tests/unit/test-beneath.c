/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-beneath: openat_beneath()'s fallback without openat2() (openat_beneath_walk(), what pond-job@'s
 * RestrictSUIDSGID= makes every open below a job's tree take) against openat2() itself, case by case on one
 * tree: plain files and directories, a symlink on the way and at the end, "." components, an absolute path,
 * "..", a fifo (never blocks), O_CREAT, and another mount on the way (as root, in a mount namespace of the
 * test's own). Each case must give the same fd kind or the same errno both ways; ".." is the one stricter
 * case, and says so. */
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "tests.h"

TEST_MAIN();

FIXTURE(tree) {
        char dir[64];
        int fd;
        bool mounted;
};

static int touch_at(int dfd, const char *name) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

FIXTURE_SETUP(tree) {
        bool ns;

        self->fd = -EBADF;
        /* First: the tree's fd must be on this namespace's mounts to see the one made below it. */
        ns = geteuid() == 0 && unshare(CLONE_NEWNS) >= 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) >= 0;
        snprintf(self->dir, sizeof self->dir, "/tmp/pond-beneath.XXXXXX");
        ASSERT_TRUE(mkdtemp(self->dir) != NULL);
        self->fd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(self->fd >= 0);
        ASSERT_OK(mkdirat(self->fd, "d", 0755));
        ASSERT_OK(mkdirat(self->fd, "d/e", 0755));
        ASSERT_OK(touch_at(self->fd, "d/e/f"));
        ASSERT_OK(symlinkat("d", self->fd, "ld"));              /* a symlink to a directory inside */
        ASSERT_OK(symlinkat("/etc", self->fd, "out"));          /* and one pointing out */
        ASSERT_OK(symlinkat("e/f", self->fd, "d/lf"));           /* a symlink to a file */
        ASSERT_OK(mkfifoat(self->fd, "d/fifo", 0644));
        ASSERT_OK(mkdirat(self->fd, "m", 0755));
        /* Another mount below the tree, where it can be made. */
        if (ns) {
                char m[96];

                snprintf(m, sizeof m, "%s/m", self->dir);
                self->mounted = mount("pond-test", m, "tmpfs", 0, "size=64k") >= 0;
                if (self->mounted)
                        ASSERT_OK(touch_at(self->fd, "m/g"));
        }
}

FIXTURE_TEARDOWN(tree) {
        if (self->mounted) {
                char m[96];

                snprintf(m, sizeof m, "%s/m", self->dir);
                (void) umount2(m, MNT_DETACH);
        }
        if (self->fd >= 0)
                close(self->fd);
        if (self->dir[0])
                (void) rm_rf_at(AT_FDCWD, self->dir);
}

/* What an open gave, comparable: "ERRNO n" or the file's type. */
static void outcome(int fd, char *buf, size_t n) {
        struct stat st;

        if (fd < 0) {
                snprintf(buf, n, "errno %d", -fd);
                return;
        }
        if (fstat(fd, &st) < 0)
                snprintf(buf, n, "fstat failed");
        else
                snprintf(buf, n, "type %o", (unsigned) (st.st_mode & S_IFMT));
        close(fd);
}

static bool same(int dfd, const char *path, int flags) {
        char a[64], b[64];

        mode_t mode = (flags & O_CREAT) ? 0644 : 0;

        outcome(openat_beneath(dfd, path, flags, mode), a, sizeof a);
        outcome(openat_beneath_walk(dfd, path, flags, mode), b, sizeof b);
        if (!streq(a, b))
                TEST_LOG("%s (flags %#x): openat2 %s, walk %s", path, (unsigned) flags, a, b);
        return streq(a, b);
}

TEST_F(tree, the_walk_answers_as_openat2) {
        static const struct { const char *path; int flags; } cases[] = {
                { "d/e/f", O_RDONLY },
                { "d/e", O_RDONLY | O_DIRECTORY },
                { "./d/./e/f", O_RDONLY },
                { "d//e/f", O_RDONLY },
                { ".", O_PATH | O_DIRECTORY },
                { "d/e/f", O_PATH },
                { "ld/e/f", O_RDONLY },                 /* symlink on the way: ELOOP */
                { "ld/e", O_PATH | O_DIRECTORY },
                { "out/passwd", O_RDONLY },
                { "d/lf", O_RDONLY },                   /* symlink at the end: ELOOP */
                { "d/lf", O_PATH },                     /* ... or with O_PATH, the link itself */
                { "d/lf", O_RDONLY | O_DIRECTORY },
                { "out", O_RDONLY | O_DIRECTORY },
                { "/etc/passwd", O_RDONLY },            /* absolute: EXDEV */
                { "d/missing", O_RDONLY },
                { "d/e/f/x", O_RDONLY },                /* a file on the way: ENOTDIR */
                { "d/fifo", O_RDONLY },                 /* never blocks */
                { "", O_RDONLY },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                EXPECT_TRUE(same(self->fd, cases[i].path, cases[i].flags));
}

TEST_F(tree, creates_as_openat2) {
        EXPECT_TRUE(same(self->fd, "d/new", O_WRONLY | O_CREAT));
        EXPECT_TRUE(same(self->fd, "d/e/f", O_WRONLY | O_CREAT | O_EXCL));    /* EEXIST both times */
        EXPECT_TRUE(same(self->fd, "d/lf", O_WRONLY | O_CREAT));              /* not through the link */
        EXPECT_TRUE(same(self->fd, "ld/new2", O_WRONLY | O_CREAT));
}

TEST_F(tree, another_mount_is_refused) {
        if (!self->mounted)
                TEST_SKIP("no mount below the tree (needs root)");
        EXPECT_ERROR(EXDEV, openat_beneath_walk(self->fd, "m/g", O_RDONLY, 0));
        EXPECT_ERROR(EXDEV, openat_beneath_walk(self->fd, "m", O_PATH | O_DIRECTORY, 0));
        EXPECT_TRUE(same(self->fd, "m/g", O_RDONLY));
        EXPECT_TRUE(same(self->fd, "m", O_RDONLY | O_DIRECTORY));
}

TEST_F(tree, dotdot_is_refused_even_beneath) {
        int fd;

        EXPECT_ERROR(EXDEV, openat_beneath_walk(self->fd, "d/../d/e/f", O_RDONLY, 0));
        EXPECT_ERROR(EXDEV, openat_beneath_walk(self->fd, "../x", O_RDONLY, 0));
        /* openat2() too refuses the one that leaves */
        EXPECT_ERROR(EXDEV, openat_beneath(self->fd, "../x", O_RDONLY, 0));
        fd = openat_beneath(self->fd, "d/../d/e/f", O_RDONLY, 0);
        EXPECT_TRUE(fd >= 0);   /* the stricter case: openat2() allows it */
        if (fd >= 0)
                close(fd);
}
