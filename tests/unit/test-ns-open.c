/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ns-open: opening a path as another mount namespace sees it (ns-open.c), as the supervisor does for a
 * spec's checkout and bundle from its unit's own namespace. A helper process holds a namespace with a tmpfs
 * of its own: the file there is invisible to a plain open() here (the control) and reached by ns_open(); a
 * clone made there with ns_open_tree() is attached here; a directory opened there is cloned there from its
 * fd with ns_clone_fd() (the kernel refuses that clone here: the control); an error there comes back as its
 * errno. As root, each test in a private mount namespace; without root, SKIP. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "stage/ns-open.h"
#include "tests.h"

TEST_MAIN();

FIXTURE(ns) {
        char dir[64];           /* on the host's /tmp: a plain directory here, a tmpfs in the helper's namespace */
        char file[96];
        char ns_path[64];       /* the helper's /proc/PID/ns/mnt */
        pid_t helper;
};

/* The helper: a mount namespace of its own, a tmpfs at dir with "there" in file; says so, then waits. */
static _noreturn_ void run_helper(const char *dir, const char *file, int ready) {
        int fd;

        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("pond-test", dir, "tmpfs", 0, "size=64k") < 0)
                _exit(1);
        fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || write_all(fd, "there", 5) < 0)
                _exit(1);
        (void) write(ready, "x", 1);
        pause();
        _exit(0);
}

FIXTURE_SETUP(ns) {
        int p[2];
        char c;

        self->helper = -1;
        if (geteuid() != 0)
                TEST_SKIP("needs root (mount namespaces, setns)");
        ASSERT_OK(unshare(CLONE_NEWNS));
        ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
        snprintf(self->dir, sizeof self->dir, "/tmp/pond-ns-open.XXXXXX");
        ASSERT_TRUE(mkdtemp(self->dir) != NULL);
        snprintf(self->file, sizeof self->file, "%s/file", self->dir);
        ASSERT_OK(pipe2(p, O_CLOEXEC));
        self->helper = fork();
        ASSERT_TRUE(self->helper >= 0);
        if (self->helper == 0)
                run_helper(self->dir, self->file, p[1]);
        close(p[1]);
        ASSERT_EQ(1, (int) read(p[0], &c, 1));
        close(p[0]);
        snprintf(self->ns_path, sizeof self->ns_path, "/proc/%d/ns/mnt", (int) self->helper);
}

FIXTURE_TEARDOWN(ns) {
        if (self->helper > 0) {
                kill(self->helper, SIGKILL);
                (void) waitpid(self->helper, NULL, 0);
        }
        if (self->dir[0])
                (void) rmdir(self->dir);
}

static int read_five(int fd, char buf[6]) {
        ssize_t n = pread(fd, buf, 5, 0);

        if (n < 0)
                return -errno;
        buf[n] = 0;
        return 0;
}

TEST_F(ns, opens_what_only_the_other_namespace_sees) {
        _cleanup_close_ int fd = -EBADF;
        char buf[6];

        /* The control: here the directory is empty. */
        ASSERT_TRUE(open(self->file, O_RDONLY | O_CLOEXEC) < 0);
        ASSERT_OK(ns_open(self->ns_path, self->file, O_RDONLY, &fd));
        ASSERT_OK(read_five(fd, buf));
        EXPECT_STREQ("there", buf);
        EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

TEST_F(ns, an_error_there_is_its_errno) {
        _cleanup_free_ char *missing = NULL;
        int fd = -EBADF;

        ASSERT_TRUE(asprintf(&missing, "%s/missing", self->dir) >= 0);
        EXPECT_ERROR(ENOENT, ns_open(self->ns_path, missing, O_RDONLY, &fd));
        EXPECT_ERROR(ENOTDIR, ns_open(self->ns_path, self->file, O_RDONLY | O_DIRECTORY, &fd));
        EXPECT_EQ(-EBADF, fd);
        EXPECT_ERROR(ENOENT, ns_open("/proc/self/ns/no-such-namespace", self->file, O_RDONLY, &fd));
}

TEST_F(ns, a_clone_made_there_is_attached_here) {
        _cleanup_close_ int tree = -EBADF, fd = -EBADF;
        char buf[6];

        ASSERT_OK(ns_open_tree(self->ns_path, self->dir, OPEN_TREE_CLONE, &tree));
        ASSERT_OK((int) syscall(SYS_move_mount, tree, "", AT_FDCWD, self->dir, MOVE_MOUNT_F_EMPTY_PATH));
        fd = open(self->file, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(read_five(fd, buf));
        EXPECT_STREQ("there", buf);
        fd = safe_close(fd);
        ASSERT_OK(umount2(self->dir, MNT_DETACH));
}

TEST_F(ns, our_own_namespace_or_none_opens_here) {
        _cleanup_close_ int a = -EBADF, b = -EBADF;

        /* Here the directory is a plain one: a file made here is what both find. */
        ASSERT_OK(ns_open(NULL, self->dir, O_RDONLY | O_DIRECTORY, &a));
        ASSERT_OK(ns_open("/proc/self/ns/mnt", self->dir, O_RDONLY | O_DIRECTORY, &b));
        EXPECT_ERROR(ENOENT, ns_open(NULL, self->file, O_RDONLY, &a));
}

/* A directory opened there (as acceptance opens a checkout) is cloned from its fd, not its path: open_tree() on
 * it here is refused (EINVAL: the mount is not in our namespace, the control), ns_clone_fd() clones it there
 * and the clone is attached here. */
TEST_F(ns, a_directory_opened_there_is_cloned_there_from_its_fd) {
        _cleanup_close_ int dfd = -EBADF, tree = -EBADF, fd = -EBADF;
        char buf[6];

        ASSERT_OK(ns_open(self->ns_path, self->dir, O_RDONLY | O_DIRECTORY, &dfd));
        EXPECT_EQ(-1, (int) syscall(SYS_open_tree, dfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
        EXPECT_EQ(EINVAL, errno);
        ASSERT_OK(ns_clone_fd(self->ns_path, dfd, 0, &tree));
        EXPECT_TRUE(fcntl(tree, F_GETFD) & FD_CLOEXEC);
        ASSERT_OK((int) syscall(SYS_move_mount, tree, "", AT_FDCWD, self->dir, MOVE_MOUNT_F_EMPTY_PATH));
        fd = open(self->file, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(read_five(fd, buf));
        EXPECT_STREQ("there", buf);
        fd = safe_close(fd);
        ASSERT_OK(umount2(self->dir, MNT_DETACH));
        EXPECT_ERROR(EBADF, ns_clone_fd(self->ns_path, -EBADF, 0, &tree));
}

/* A directory opened here is cloned here (a bundle's extraction: the supervisor's own namespace). */
TEST_F(ns, a_directory_opened_here_is_cloned_here) {
        _cleanup_close_ int dfd = -EBADF, tree = -EBADF;
        struct stat a, b;

        dfd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        ASSERT_OK(ns_clone_fd(NULL, dfd, 0, &tree));
        ASSERT_OK(fstat(dfd, &a));
        ASSERT_OK(fstat(tree, &b));
        EXPECT_TRUE(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}
