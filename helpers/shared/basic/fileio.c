/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fileio.c: bounded reads, atomic writes, mkdir -p and a careful rm -rf. */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "basic/fileio.h"
#include "basic/macro.h"

/* Reads fd to its end, at most max bytes; hint: what it likely holds (a file's size), for the first buffer. */
static int read_full_loop(int fd, size_t hint, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        for (;;) {
                if (len + 1 >= cap) {
                        size_t ncap = cap ? cap * 2 : hint + 4096;
                        char *n;
                        if (ncap > max + 2)
                                ncap = max + 2;
                        if (ncap <= len + 1)
                                return -EFBIG;
                        n = realloc(buf, ncap);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                        cap = ncap;
                }
                ssize_t k = read(fd, buf + len, cap - len - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > max)
                        return -EFBIG;
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return read_full_loop(fd, (size_t) st.st_size, max, ret, ret_len);
}

int read_full_stream(int fd, size_t max, char **ret, size_t *ret_len) {
        return read_full_loop(fd, 0, max, ret, ret_len);
}

int read_full_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);

        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}

int write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;

        while (len > 0) {
                ssize_t k = write(fd, p, len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                len -= (size_t) k;
        }
        return 0;
}

ssize_t loop_read(int fd, void *buf, size_t nbytes) {
        uint8_t *p = buf;
        size_t done = 0;

        while (done < nbytes) {
                ssize_t k = read(fd, p + done, nbytes - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        return (ssize_t) done;
}

int readlinkat_malloc(int dirfd, const char *name, char **ret) {
        char buf[PATH_MAX];
        ssize_t n;

        n = readlinkat(dirfd, name, buf, sizeof buf);
        if (n < 0)
                return negative_errno();
        if ((size_t) n >= sizeof buf)
                return -ENAMETOOLONG;
        *ret = strndup(buf, (size_t) n);
        return *ret ? 0 : -ENOMEM;
}

static int mount_id(int fd, uint64_t *ret) {
        struct statx stx;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
                return -errno;
        if (!(stx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        *ret = stx.stx_mnt_id;
        return 0;
}

/* fd (a fresh open) on the mount of root_mnt: fd then, else closed and -EXDEV, as RESOLVE_NO_XDEV. */
static int on_mount(int fd, uint64_t root_mnt) {
        uint64_t mnt;
        int r = mount_id(fd, &mnt);

        if (r >= 0 && mnt != root_mnt)
                r = -EXDEV;
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        return fd;
}

int openat_beneath_walk(int dirfd, const char *path, int flags, mode_t mode) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_close_ int cur = -EBADF;
        const char *last = ".";
        char *save = NULL;
        uint64_t root_mnt;
        int fd, r;

        if (path[0] == '/')
                return -EXDEV;
        if (!path[0])
                return -ENOENT;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        cur = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return -errno;
        r = mount_id(cur, &root_mnt);
        if (r < 0)
                return r;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (streq(c, "."))
                        continue;
                if (streq(c, ".."))
                        return -EXDEV;  /* openat2() allows one that stays beneath; no caller needs it */
                if (!streq(last, ".")) {
                        /* last is a directory on the way: never a symlink, never another mount */
                        fd = openat(cur, last, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd < 0) {
                                struct stat st;

                                r = -errno;
                                return r == -ENOTDIR && fstatat(cur, last, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                                       S_ISLNK(st.st_mode) ? -ELOOP : r;
                        }
                        fd = on_mount(fd, root_mnt);
                        if (fd < 0)
                                return fd;
                        safe_close(cur);
                        cur = fd;
                }
                last = c;
        }
        /* The last component as openat2() opens it: O_NOFOLLOW (a symlink: ELOOP, or with O_PATH the link) */
        if (!(flags & O_PATH))
                flags |= O_NOCTTY | O_NONBLOCK;
        fd = openat(cur, last, flags | O_CLOEXEC | O_NOFOLLOW, (flags & (O_CREAT | __O_TMPFILE)) ? mode : 0);
        if (fd < 0)
                return -errno;
        return on_mount(fd, root_mnt);
}

int openat_beneath(int dirfd, const char *path, int flags, mode_t mode) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC | O_NOFOLLOW),
                .mode = (flags & (O_CREAT | __O_TMPFILE)) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };

        /* O_PATH admits only O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC beside it; otherwise never block on a fifo
         * and never acquire a controlling terminal. */
        if (!(flags & O_PATH))
                how.flags |= O_NOCTTY | O_NONBLOCK;

        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd < 0 && errno == ENOSYS)
                return openat_beneath_walk(dirfd, path, flags, mode);
        if (fd < 0)
                return negative_errno();
        return (int) fd;
}

int write_file_atomic_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode) {
        char tmp[PATH_MAX];
        _cleanup_close_ int fd = -EBADF;
        int r;

        if ((size_t) snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= sizeof tmp)
                return -ENAMETOOLONG;
        (void) unlinkat(dirfd, tmp, 0);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        /* The mode as given, whatever the umask (pond-job@ has 0077). */
        r = fchmod(fd, mode) < 0 ? -errno : write_all(fd, buf, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(dirfd, tmp, 0);
                return r;
        }
        if (dirfd >= 0)
                (void) fsync(dirfd);
        return 0;
}

int write_file_new_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode) {
        char proc[64];
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat(dirfd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        r = fchmod(fd, mode) < 0 ? -errno : write_all(fd, buf, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0)
                return r;
        /* linkat() of the fd itself (AT_EMPTY_PATH) would need CAP_DAC_READ_SEARCH; through /proc it does not.
         * It fails with EEXIST where the name exists: the one creator wins. */
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) < 0)
                return -errno;
        (void) fsync(dirfd);
        return 0;
}

int opendir_fd(int dirfd, DIR **ret) {
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -ENOMEM;
        }
        *ret = d;
        return 0;
}

int mkdir_p(const char *path, mode_t mode) {
        char buf[PATH_MAX];
        size_t n = strlen(path);

        if (n == 0 || n >= sizeof buf)
                return -EINVAL;
        memcpy(buf, path, n + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = 0;
                if (mkdir(buf, mode) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int rm_rf_children(int fd, dev_t dev, int depth) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r = 0;

        if (depth > 256)
                return -ELOOP;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        while ((de = readdir(d))) {
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (S_ISDIR(st.st_mode)) {
                        if (st.st_dev != dev)
                                return -EBUSY; /* a mount inside: never delete what it shows */
                        int cfd = openat(dirfd(d), de->d_name,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd < 0)
                                return -errno;
                        r = rm_rf_children(cfd, dev, depth + 1);
                        if (r < 0)
                                return r;
                        if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                                return -errno;
                } else if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                        return -errno;
        }
        return 0;
}

int rm_rf_at(int dirfd, const char *name) {
        struct stat st;
        int fd, r;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = rm_rf_children(fd, st.st_dev, 0);
        if (r < 0)
                return r;
        return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int dir_open_locked(const char *dir, int *ret) {
        _cleanup_close_ int dfd = -EBADF;
        int r = mkdir_p(dir, 0700);

        if (r < 0)
                return r;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (flock(dfd, LOCK_EX) < 0)
                return -errno;
        *ret = TAKE_FD(dfd);
        return 0;
}
