/* fileio.h: bounded whole-file reads, atomic writes, directory helpers. */
#pragma once

#include <stddef.h>
#include <dirent.h>
#include <sys/types.h>

/* Reads a regular file (anything else: -EBADFD; a symlink as the last component is not followed) of at
 * most max bytes; a longer file is -EFBIG. The buffer is NUL-terminated (not counted). */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);
int read_full_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
static inline int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        return read_full_file_at(-100 /* AT_FDCWD */, path, max, ret, ret_len);
}

/* tmp + fsync + rename + fsync(dir): readers see the old content or the new, never half. */
int write_file_atomic_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);

int write_all(int fd, const void *buf, size_t len);

/* A directory stream of its own on the directory dirfd refers to (a fresh open of ".", so reading it
 * moves no offset of dirfd's); dirfd stays the caller's. */
int opendir_fd(int dirfd, DIR **ret);
int mkdir_p(const char *path, mode_t mode);

/* Removes a tree below dirfd's entry name without following symlinks and without crossing into another
 * file system (a mount left inside is an error, never a reason to delete what it shows). */
int rm_rf_at(int dirfd, const char *name);
