/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-stage: staging the checkout at /workspace. As root (each test in a private mount namespace, so a
 * failed test leaves no mount on the host): read-only staging, the overlay whose writes land in the upper
 * layer, the scratch cap, in-place staging for profile none, the idmapping (the checkout's owner appears
 * as the job user), and a teardown that leaves no mount, also after a partial set-up. The checkout itself
 * is never modified outside profile none. Without root, the tests run in a user namespace where they can;
 * those that need an idmapped mount (CAP_SYS_ADMIN over the checkout's file system, which a user
 * namespace does not give) or the job user's uid say SKIP. */
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "oci/oci.h"
#include "stage/stage.h"
#include "tests.h"

TEST_MAIN();

#define OWNER 4242 /* the checkout's owner: appears as JOB_UID in the workspace */

FIXTURE(stage) {
        char dir[64];
        char job[96];           /* the job's runtime directory, as the supervisor makes it */
        char checkout[96];
        bool root;              /* real root: mounts can be made */
        char *before;           /* the checkout as it was, to compare after */
};

static int write_text(const char *dir, const char *name, const char *text) {
        char p[256];
        int fd;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, text, strlen(text));
        close(fd);
        return r;
}

static char *read_text(const char *dir, const char *name) {
        char p[256], *t = NULL;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        return read_full_file(p, 1 << 20, &t, NULL) < 0 ? NULL : t;
}

/* The checkout, byte for byte and with owners and modes, as one string. */
static FILE *snap_;
static size_t snap_root_;
static int snap_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        _cleanup_free_ char *text = NULL;

        (void) flag, (void) f;
        fprintf(snap_, "%s %o %u:%u %jd\n", p + snap_root_, st->st_mode, st->st_uid, st->st_gid,
                (intmax_t) st->st_size);
        if (S_ISREG(st->st_mode) && read_full_file(p, 1 << 20, &text, NULL) >= 0)
                fprintf(snap_, "%s\n", text);
        return 0;
}

static char *snapshot(const char *dir) {
        char *text = NULL;
        size_t len;

        snap_ = open_memstream(&text, &len);
        if (!snap_)
                return NULL;
        snap_root_ = strlen(dir);
        if (nftw(dir, snap_one, 16, FTW_PHYS) < 0) {
                fclose(snap_);
                free(text);
                return NULL;
        }
        fclose(snap_);
        return text;
}

/* How many mounts have their mount point at or below path (in this test's mount namespace). */
static int mounts_below(const char *path) {
        _cleanup_free_ char *info = NULL;
        size_t n = strlen(path);
        int count = 0;

        if (read_full_file("/proc/self/mountinfo", 1 << 22, &info, NULL) < 0)
                return -1;
        for (char *save = NULL, *l = strtok_r(info, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                char point[4096];
                /* id parent major:minor root mount-point ... */
                if (sscanf(l, "%*s %*s %*s %*s %4095s", point) == 1 && strncmp(point, path, n) == 0 &&
                    (point[n] == 0 || point[n] == '/'))
                        count++;
        }
        return count;
}

static int write_map(const char *file, const char *map) {
        int fd = open(file, O_WRONLY | O_CLOEXEC), r;

        if (fd < 0)
                return -errno;
        r = write_all(fd, map, strlen(map));
        close(fd);
        return r;
}

/* Root: a private mount namespace. Otherwise: a user namespace in which we are root, with one. */
static const char *enter_namespaces(bool root) {
        char map[64];
        uid_t uid = getuid();
        gid_t gid = getgid();

        if (!root) {
                if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        return "no user namespace here (unprivileged user namespaces disabled?)";
                snprintf(map, sizeof map, "0 %u 1\n", (unsigned) uid);
                if (write_map("/proc/self/uid_map", map) < 0 || write_map("/proc/self/setgroups", "deny") < 0)
                        return "cannot map our uid in the user namespace";
                snprintf(map, sizeof map, "0 %u 1\n", (unsigned) gid);
                if (write_map("/proc/self/gid_map", map) < 0)
                        return "cannot map our gid in the user namespace";
        } else if (unshare(CLONE_NEWNS) < 0)
                return "cannot unshare a mount namespace";
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return "cannot make the mounts private";
        return NULL;
}

FIXTURE_SETUP(stage) {
        const char *why;
        char sub[128];

        self->root = geteuid() == 0;
        why = enter_namespaces(self->root);
        if (why)
                TEST_SKIP(why);
        snprintf(self->dir, sizeof self->dir, "/tmp/test-stage.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        ASSERT_EQ(0, chmod(self->dir, 0755)); /* the job user walks down to its workspace */
        snprintf(self->job, sizeof self->job, "%s/job", self->dir);
        snprintf(self->checkout, sizeof self->checkout, "%s/checkout", self->dir);
        ASSERT_EQ(0, mkdir(self->job, 0755));
        ASSERT_EQ(0, mkdir(self->checkout, 0755));
        snprintf(sub, sizeof sub, "%s/sub", self->checkout);
        ASSERT_EQ(0, mkdir(sub, 0755));
        ASSERT_OK(write_text(self->checkout, "a.txt", "original\n"));
        ASSERT_OK(write_text(self->checkout, "sub/b.txt", "bee\n"));
        ASSERT_OK(write_text(self->checkout, "other.txt", "not the owner's\n"));
        if (self->root) {
                ASSERT_EQ(0, lchown(self->checkout, OWNER, OWNER));
                ASSERT_EQ(0, lchown(sub, OWNER, OWNER));
                snprintf(sub, sizeof sub, "%s/a.txt", self->checkout);
                ASSERT_EQ(0, lchown(sub, OWNER, OWNER));
                snprintf(sub, sizeof sub, "%s/sub/b.txt", self->checkout);
                ASSERT_EQ(0, lchown(sub, OWNER, OWNER));
                /* other.txt stays root's: it must appear as the overflow id, not as root */
        }
        self->before = snapshot(self->checkout);
        ASSERT_TRUE(self->before != NULL);
}

FIXTURE_TEARDOWN(stage) {
        free(self->before);
        if (!self->dir[0])
                return;
        (void) stage_teardown(self->job);
        if (!getenv("POND_TEST_KEEP"))
                ASSERT_OK(rm_rf_at(AT_FDCWD, self->dir));
}

#define NEEDS_ROOT(why)                                                                                 \
        do {                                                                                            \
                if (!self->root)                                                                        \
                        TEST_SKIP("needs root: " why);                                                  \
        } while (0)
#define IDMAP "an idmapped mount needs CAP_SYS_ADMIN over the checkout's file system, which a user " \
        "namespace does not give"

/* The checkout is as it was: nothing written through the workspace reached it. */
#define ASSERT_CHECKOUT_UNCHANGED()                                                                     \
        do {                                                                                            \
                _cleanup_free_ char *_now = snapshot(self->checkout);                                   \
                ASSERT_STREQ(self->before, _now);                                                       \
        } while (0)

/* Teardown unmounts all of it, and a second teardown finds nothing to do. */
#define ASSERT_TEARDOWN_CLEAN()                                                                         \
        do {                                                                                            \
                ASSERT_OK(stage_teardown(self->job));                                                   \
                ASSERT_EQ(0, mounts_below(self->job));                                                  \
                ASSERT_OK(stage_teardown(self->job));                                                   \
        } while (0)

static int open_error(const char *dir, const char *name, int flags) {
        char p[256];
        int fd;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        fd = open(p, flags | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

static uid_t owner_of(const char *dir, const char *name) {
        char p[256];
        struct stat st;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        return lstat(p, &st) < 0 ? (uid_t) -1 : st.st_uid;
}

/* The checkout as acceptance opens it (the path, symlinks followed), staged from that fd. */
static int stage_at_owned(const char *job, const char *path, uid_t owner, FsPosture fs, uint64_t bytes, uid_t uid,
                          gid_t gid, Stage *s) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        return stage_setup_owned(job, NULL, fd, owner, fs, bytes, uid, gid, s);
}

static int stage_at(const char *job, const char *path, FsPosture fs, uint64_t bytes, uid_t uid, gid_t gid, Stage *s) {
        return stage_at_owned(job, path, STAGE_ANY_OWNER, fs, bytes, uid, gid, s);
}

/* Needs no mount: runs as any user. */

TEST_F(stage, unknown_posture_refused) {
        Stage s = { .workspace = (char *) "untouched" };

        ASSERT_ERROR(EINVAL, stage_setup(self->job, NULL, -EBADF, _FS_POSTURE_MAX, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_STREQ("untouched", s.workspace);
        ASSERT_EQ(0, mounts_below(self->job));
}

TEST_F(stage, readonly_without_checkout_is_an_empty_workspace) {
        Stage s = {};
        struct stat st;

        ASSERT_OK(stage_setup(self->job, NULL, -EBADF, FS_READONLY, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_TRUE(s.readonly);
        ASSERT_TRUE(s.lower == NULL && s.upper == NULL);
        ASSERT_TRUE(s.workspace && strncmp(s.workspace, self->job, strlen(self->job)) == 0);
        ASSERT_EQ(0, stat(s.workspace, &st));
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        ASSERT_EQ(0, mounts_below(self->job));
        stage_done(&s);
        ASSERT_TRUE(s.workspace == NULL);
        stage_done(&s); /* twice: harmless */
        ASSERT_TEARDOWN_CLEAN();
}

TEST_F(stage, checkout_fd_not_open_refused) {
        Stage s = {};

        ASSERT_ERROR(EBADF, stage_setup(self->job, NULL, 1000, FS_READONLY, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_ERROR(EBADF, stage_setup(self->job, NULL, 1000, FS_OVERLAY, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_TRUE(s.workspace == NULL);
        ASSERT_EQ(0, mounts_below(self->job));
}

TEST_F(stage, checkout_that_is_a_file_refused) {
        char file[160];
        Stage s = {};

        snprintf(file, sizeof file, "%s/a.txt", self->checkout);
        ASSERT_ERROR(ENOTDIR, stage_at(self->job, file, FS_READONLY, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_ERROR(ENOTDIR, stage_at(self->job, file, FS_HOST, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_EQ(0, mounts_below(self->job));
        ASSERT_CHECKOUT_UNCHANGED();
}

TEST_F(stage, teardown_of_nothing) {
        char missing[160];

        ASSERT_OK(stage_teardown(self->job));
        snprintf(missing, sizeof missing, "%s/no-such-job", self->dir);
        ASSERT_OK(stage_teardown(missing));
}

/* Needs root. */

TEST_F(stage, readonly) {
        _cleanup_free_ char *a = NULL;
        struct statvfs sv;
        Stage s = {};

        NEEDS_ROOT(IDMAP);
        ASSERT_OK(stage_at(self->job, self->checkout, FS_READONLY, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_TRUE(s.readonly);
        ASSERT_STREQ(s.workspace, s.lower);
        ASSERT_TRUE(s.upper == NULL);
        ASSERT_EQ(1, mounts_below(self->job));
        a = read_text(s.workspace, "a.txt");
        ASSERT_STREQ("original\n", a);
        /* The owner appears as the job user, anyone else as the overflow id (never as root). */
        ASSERT_EQ(JOB_UID, owner_of(s.workspace, "a.txt"));
        ASSERT_EQ(JOB_UID, owner_of(s.workspace, "."));
        ASSERT_EQ(65534, owner_of(s.workspace, "other.txt"));
        ASSERT_ERROR(EROFS, open_error(s.workspace, "a.txt", O_WRONLY));
        ASSERT_ERROR(EROFS, open_error(s.workspace, "new.txt", O_WRONLY | O_CREAT));
        ASSERT_EQ(0, statvfs(s.workspace, &sv));
        ASSERT_EQ(ST_RDONLY | ST_NOSUID | ST_NODEV, sv.f_flag & (ST_RDONLY | ST_NOSUID | ST_NODEV));
        stage_done(&s);
        ASSERT_TEARDOWN_CLEAN();
        ASSERT_CHECKOUT_UNCHANGED();
}

/* Runs edit(workspace) as the job user (in the container's user namespace the checkout's owner maps to
 * it); its exit status. */
static int as_job_user(int (*edit)(const char *), const char *workspace) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(JOB_GID, JOB_GID, JOB_GID) < 0 ||
                    setresuid(JOB_UID, JOB_UID, JOB_UID) < 0)
                        _exit(10);
                _exit(edit(workspace));
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Create, modify and delete through the workspace. */
static int edit_all(const char *workspace) {
        char p[256];

        if (write_text(workspace, "new.txt", "new\n") < 0)
                return 11;
        if (write_text(workspace, "a.txt", "changed\n") < 0)
                return 12;
        snprintf(p, sizeof p, "%s/sub/b.txt", workspace);
        return unlink(p) < 0 ? 13 : 0;
}

static int create_in_place(const char *workspace) {
        return write_text(workspace, "in-place.txt", "here\n") < 0 ? 11 : 0;
}

TEST_F(stage, overlay_writes_land_in_the_upper_layer) {
        _cleanup_free_ char *a = NULL, *up_a = NULL, *up_new = NULL;
        char whiteout[256];
        struct stat st;
        Stage s = {};

        NEEDS_ROOT(IDMAP);
        ASSERT_OK(stage_at(self->job, self->checkout, FS_OVERLAY, 8 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_FALSE(s.readonly);
        ASSERT_TRUE(s.lower && s.upper);
        ASSERT_EQ(3, mounts_below(self->job)); /* lower, scratch, workspace */
        a = read_text(s.workspace, "a.txt");
        ASSERT_STREQ("original\n", a);
        ASSERT_EQ(JOB_UID, owner_of(s.workspace, "a.txt"));
        ASSERT_EQ(JOB_UID, owner_of(s.upper, "."));

        ASSERT_EQ(0, as_job_user(edit_all, s.workspace));
        up_new = read_text(s.upper, "new.txt");
        ASSERT_STREQ("new\n", up_new);
        up_a = read_text(s.upper, "a.txt");
        ASSERT_STREQ("changed\n", up_a);
        ASSERT_EQ(JOB_UID, owner_of(s.upper, "new.txt"));
        snprintf(whiteout, sizeof whiteout, "%s/sub/b.txt", s.upper);
        ASSERT_EQ(0, lstat(whiteout, &st));
        ASSERT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        /* The lower view stays read-only, and the checkout as it was. */
        ASSERT_ERROR(EROFS, open_error(s.lower, "a.txt", O_WRONLY));
        ASSERT_CHECKOUT_UNCHANGED();
        stage_done(&s);
        ASSERT_TEARDOWN_CLEAN();
        ASSERT_CHECKOUT_UNCHANGED();
}

TEST_F(stage, overlay_scratch_is_capped) {
        char p[256], buf[65536];
        ssize_t n = 0, total = 0;
        Stage s = {};
        int fd, err = 0;

        NEEDS_ROOT(IDMAP);
        ASSERT_OK(stage_at(self->job, self->checkout, FS_OVERLAY, 1 << 20, JOB_UID, JOB_GID, &s));
        snprintf(p, sizeof p, "%s/big", s.workspace);
        fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        memset(buf, 'x', sizeof buf);
        while (total < (4 << 20) && (n = write(fd, buf, sizeof buf)) > 0)
                total += n;
        err = n < 0 ? errno : 0;
        close(fd);
        ASSERT_EQ(ENOSPC, err);
        ASSERT_TRUE(total <= 1 << 20);
        stage_done(&s);
        ASSERT_TEARDOWN_CLEAN();
        ASSERT_CHECKOUT_UNCHANGED();
}

TEST_F(stage, overlay_without_checkout) {
        _cleanup_free_ char *t = NULL;
        Stage s = {};

        NEEDS_ROOT("the upper directory is given to the job user, who has no uid in a user namespace");
        ASSERT_OK(stage_setup(self->job, NULL, -EBADF, FS_OVERLAY, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_TRUE(s.lower && s.upper);
        ASSERT_EQ(2, mounts_below(self->job)); /* scratch, workspace */
        ASSERT_OK(write_text(s.workspace, "f", "x"));
        t = read_text(s.upper, "f");
        ASSERT_STREQ("x", t);
        stage_done(&s);
        ASSERT_TEARDOWN_CLEAN();
}

/* Profile none: the explicit opt-out edits the checkout in place (still nosuid, nodev, idmapped). */
TEST_F(stage, host_edits_in_place) {
        _cleanup_free_ char *t = NULL;
        struct statvfs sv;
        Stage s = {};

        NEEDS_ROOT(IDMAP);
        ASSERT_OK(stage_at(self->job, self->checkout, FS_HOST, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_FALSE(s.readonly);
        ASSERT_TRUE(s.upper == NULL);
        ASSERT_EQ(JOB_UID, owner_of(s.workspace, "a.txt"));
        ASSERT_EQ(0, statvfs(s.workspace, &sv));
        ASSERT_EQ(ST_NOSUID | ST_NODEV, sv.f_flag & (ST_RDONLY | ST_NOSUID | ST_NODEV));
        /* Root has no mapping on the idmapped mount, so it cannot create files there; the job user's files
         * belong to the checkout's owner. */
        ASSERT_ERROR(EOVERFLOW, open_error(s.workspace, "by-root.txt", O_WRONLY | O_CREAT));
        ASSERT_EQ(0, as_job_user(create_in_place, s.workspace));
        t = read_text(self->checkout, "in-place.txt");
        ASSERT_STREQ("here\n", t);
        ASSERT_EQ(OWNER, owner_of(self->checkout, "in-place.txt"));
        stage_done(&s);
        ASSERT_TEARDOWN_CLEAN();
}

/* A set-up that fails half-way unmounts what it had mounted: here the lower view is mounted, then the
 * scratch mount point is a file. */
TEST_F(stage, failed_setup_leaves_no_mount) {
        Stage s = { .workspace = (char *) "untouched" };

        NEEDS_ROOT(IDMAP);
        ASSERT_OK(write_text(self->job, "scratch", "in the way\n"));
        ASSERT_TRUE(stage_at(self->job, self->checkout, FS_OVERLAY, 1 << 20, JOB_UID, JOB_GID, &s) < 0);
        ASSERT_STREQ("untouched", s.workspace);
        ASSERT_EQ(0, mounts_below(self->job));
        ASSERT_CHECKOUT_UNCHANGED();
}

/* Teardown after a crash between mounts, with mounts stacked by a repeated partial run (tmpfs mounts: this
 * runs in a user namespace too). */
TEST_F(stage, teardown_of_partial_and_stacked_mounts) {
        const char *names[] = { "workspace", "workspace", "lower", "scratch" };
        char p[160];

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                snprintf(p, sizeof p, "%s/%s", self->job, names[i]);
                (void) mkdir(p, 0755);
                ASSERT_EQ(0, mount("test-stage", p, "tmpfs", 0, "size=64k"));
        }
        ASSERT_EQ(4, mounts_below(self->job));
        ASSERT_TEARDOWN_CLEAN();
}

/* Re-points path (a symlink) at target in one step, as a member may do to their checkout's path. */
static int repoint(const char *path, const char *target) {
        char tmp[256];

        snprintf(tmp, sizeof tmp, "%s.new", path);
        if (symlink(target, tmp) < 0 || rename(tmp, path) < 0)
                return -errno;
        return 0;
}

/* The workspace is the tree acceptance opened, whatever the checkout's path leads to by the time it is staged:
 * the path is a symlink, opened (as acceptance does), then re-pointed at another directory of the same owner
 * (so no owner check can tell them apart) before staging. The control: the path opened again now leads to
 * the other tree, which is what staging by path showed. */
TEST_F(stage, staged_tree_is_the_one_opened_not_the_path_now) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        char link[160], other[160];
        const FsPosture postures[] = { FS_READONLY, FS_OVERLAY, FS_HOST };

        NEEDS_ROOT(IDMAP);
        snprintf(other, sizeof other, "%s/other", self->dir);
        ASSERT_EQ(0, mkdir(other, 0755));
        ASSERT_OK(write_text(other, "a.txt", "swapped in\n"));
        ASSERT_EQ(0, chown(other, OWNER, OWNER));
        snprintf(link, sizeof link, "%s/co", self->dir);
        ASSERT_EQ(0, symlink(self->checkout, link));
        fd = open(link, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(repoint(link, other));

        for (size_t i = 0; i < ELEMENTSOF(postures); i++) {
                Stage s = {};

                ASSERT_OK(stage_setup_owned(self->job, NULL, fd, OWNER, postures[i], 1 << 20, JOB_UID, JOB_GID,
                                            &s));
                a = read_text(s.workspace, "a.txt");
                ASSERT_STREQ("original\n", a);
                free(a), a = NULL;
                if (s.lower) {
                        b = read_text(s.lower, "a.txt");
                        ASSERT_STREQ("original\n", b);
                        free(b), b = NULL;
                }
                stage_done(&s);
                ASSERT_TEARDOWN_CLEAN();
        }
        /* The control: the path, resolved again, is the other tree now. */
        {
                Stage s = {};

                ASSERT_OK(stage_at(self->job, link, FS_READONLY, 1 << 20, JOB_UID, JOB_GID, &s));
                c = read_text(s.workspace, "a.txt");
                ASSERT_STREQ("swapped in\n", c);
                stage_done(&s);
                ASSERT_TEARDOWN_CLEAN();
        }
        ASSERT_CHECKOUT_UNCHANGED();
}

/* A member's checkout: the owner is checked on the clone of the fd, i.e. the tree mounted. A path swapped after
 * acceptance for a directory the member does not own changes nothing (the accepted tree is staged); a fd
 * whose directory is not the submitter's is refused (EPERM), and nothing stays mounted. */
TEST_F(stage, owner_is_checked_on_the_tree_mounted) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *a = NULL;
        char link[160], roots[160];
        Stage s = {};

        NEEDS_ROOT(IDMAP);
        snprintf(roots, sizeof roots, "%s/roots", self->dir);
        ASSERT_EQ(0, mkdir(roots, 0700));
        ASSERT_OK(write_text(roots, "a.txt", "root's secret\n"));
        snprintf(link, sizeof link, "%s/co", self->dir);
        ASSERT_EQ(0, symlink(self->checkout, link));
        fd = open(link, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(repoint(link, roots));
        ASSERT_OK(stage_setup_owned(self->job, NULL, fd, OWNER, FS_OVERLAY, 1 << 20, JOB_UID, JOB_GID, &s));
        a = read_text(s.workspace, "a.txt");
        ASSERT_STREQ("original\n", a);
        stage_done(&s);
        ASSERT_TEARDOWN_CLEAN();
        /* The control: root's directory, opened as the tree, is refused for the member. */
        ASSERT_ERROR(EPERM, stage_at_owned(self->job, link, OWNER, FS_OVERLAY, 1 << 20, JOB_UID, JOB_GID, &s));
        ASSERT_EQ(0, mounts_below(self->job));
}
