/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fileio.h: bounded whole-file reads, full reads and writes, atomic writes, symlink targets, directory
 * helpers, and the one "open beneath a dirfd, never follow anything" primitive that every walker over hostile
 * trees uses. */
#pragma once

#include <stddef.h>
#include <dirent.h>
#include <sys/types.h>

/* Reads a regular file (anything else: -EBADFD; a symlink as the last component is not followed) of at
 * most max bytes; a longer file is -EFBIG. The buffer is NUL-terminated (not counted). */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);
/* The same for any fd (a pipe, a socket, a terminal; a file from its offset): read to its end, at most max
 * bytes (-EFBIG beyond), NUL-terminated. The fd stays the caller's. */
int read_full_stream(int fd, size_t max, char **ret, size_t *ret_len);
int read_full_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
static inline int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        return read_full_file_at(-100 /* AT_FDCWD */, path, max, ret, ret_len);
}

/* tmp + fsync + rename + fsync(dir): readers see the old content or the new, never half. */
int write_file_atomic_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);
/* Creates name in dirfd whole or not at all, and never over an existing one (-EEXIST): an unnamed file
 * (O_TMPFILE) written, fsync'ed and linked in, then the directory fsync'ed. Nothing is left by a crash. */
int write_file_new_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);

int write_all(int fd, const void *buf, size_t len);
/* Reads until nbytes are read or EOF (retrying EINTR): fewer than nbytes only at EOF. Returns the byte count
 * or -errno. */
ssize_t loop_read(int fd, void *buf, size_t nbytes);

/* The target of the symlink name below dirfd (never followed), malloc'd; -ENAMETOOLONG past PATH_MAX. */
int readlinkat_malloc(int dirfd, const char *name, char **ret);

/* openat2() of path below dirfd with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV,
 * always adding O_CLOEXEC|O_NOFOLLOW, and O_NOCTTY|O_NONBLOCK unless flags has O_PATH (which allows neither).
 * With O_PATH a trailing symlink yields an fd to the link itself. Returns the fd or -errno. */
int openat_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* The same without openat2(), which openat_beneath() falls back to when openat2() says ENOSYS: a seccomp
 * filter that cannot look into struct open_how answers so (systemd's RestrictSUIDSGID=, which pond-job@
 * sets). One component at a time, each opened O_PATH|O_NOFOLLOW below the one before and checked to be on
 * dirfd's mount; refuses what openat2() refuses, with its errors: an absolute path (EXDEV), a symlink on
 * the way (ELOOP), another mount (EXDEV); and any ".." (EXDEV), which openat2() allows when it stays
 * beneath. */
int openat_beneath_walk(int dirfd, const char *path, int flags, mode_t mode);

/* A directory stream of its own on the directory dirfd refers to (a fresh open of ".", so reading it
 * moves no offset of dirfd's); dirfd stays the caller's. */
int opendir_fd(int dirfd, DIR **ret);
int mkdir_p(const char *path, mode_t mode);
/* Creates dir (0700) if need be, opens it and takes an exclusive flock on it: the lock of a lease
 * directory, held until the fd is closed. */
int dir_open_locked(const char *dir, int *ret);

/* Removes a tree below dirfd's entry name without following symlinks and without crossing into another
 * file system (a mount left inside is an error, never a reason to delete what it shows). */
int rm_rf_at(int dirfd, const char *name);
