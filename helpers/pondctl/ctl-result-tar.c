/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-result-tar.c: a result directory as a tar stream: `pondctl export ID` writes results/ID (directories
 * and regular files, nothing else is in a result) on the worker, and `pondctl -H` unpacks it on the client
 * into a fresh directory, where result_verify() then checks it against the worker's pinned key. The stream
 * comes from another machine: only relative paths without "." or ".." components, only directories and
 * regular files, each created new (O_EXCL) below the destination and never through a symlink. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "ctl.h"
#include "result/result.h"

#define TAR_BLOCK 65536
#define TAR_PATH_MAX 4096
#define TAR_DEPTH_MAX 64

DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive *, archive_write_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive *, archive_read_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive_entry *, archive_entry_free);

static int export_file(struct archive *a, int fd, const char *path, const struct stat *st) {
        _cleanup_(archive_entry_freep) struct archive_entry *e = archive_entry_new();
        char buf[TAR_BLOCK];

        if (!e)
                return -ENOMEM;
        archive_entry_set_pathname(e, path);
        archive_entry_set_filetype(e, S_ISDIR(st->st_mode) ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(e, st->st_mode & 0755);
        archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
        if (S_ISREG(st->st_mode))
                archive_entry_set_size(e, st->st_size);
        if (archive_write_header(a, e) != ARCHIVE_OK)
                return log_error_errno(EIO, "Cannot write the tar header of %s: %s", path, archive_error_string(a));
        if (!S_ISREG(st->st_mode))
                return 0;
        for (off_t done = 0; done < st->st_size;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return log_error_errno(errno, "Cannot read %s: %m", path);
                if (n == 0 || done + n > st->st_size)
                        return log_error_errno(EIO, "%s changed size while it was exported.", path);
                if (archive_write_data(a, buf, (size_t) n) != n)
                        return log_error_errno(EIO, "Cannot write %s to the tar: %s", path, archive_error_string(a));
                done += n;
        }
        return 0;
}

/* dirfd's entries, depth first; prefix is their path in the tar ("" at the top). */
static int export_dir(struct archive *a, int dirfd, const char *prefix, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        if (depth > TAR_DEPTH_MAX)
                return log_error_errno(ELOOP, "%s: too deep.", prefix);
        r = opendir_fd(dirfd, &d);
        if (r < 0)
                return log_error_errno(r, "Cannot list %s: %m", *prefix ? prefix : ".");
        while ((errno = 0, de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                _cleanup_close_ int fd = -EBADF;
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (asprintf(&path, "%s%s%s", prefix, *prefix ? "/" : "", de->d_name) < 0)
                        return -ENOMEM;
                fd = openat(dirfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
                if (fd < 0)
                        return log_error_errno(errno, "Cannot open %s: %m", path);
                if (fstat(fd, &st) < 0)
                        return log_error_errno(errno, "Cannot stat %s: %m", path);
                if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
                        return log_error_errno(EBADMSG, "%s is neither a file nor a directory.", path);
                r = export_file(a, fd, path, &st);
                if (r >= 0 && S_ISDIR(st.st_mode))
                        r = export_dir(a, fd, path, depth + 1);
                if (r < 0)
                        return r;
        }
        return errno > 0 ? log_error_errno(errno, "Cannot list %s: %m", *prefix ? prefix : ".") : 0;
}

int ctl_result_tar_export(int result_dirfd, int out_fd) {
        _cleanup_(archive_write_freep) struct archive *a = archive_write_new();
        int r;

        if (!a)
                return -ENOMEM;
        if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
            archive_write_open_fd(a, out_fd) != ARCHIVE_OK)
                return log_error_errno(EIO, "Cannot start the tar stream: %s", archive_error_string(a));
        r = export_dir(a, result_dirfd, "", 0);
        if (r < 0)
                return r;
        if (archive_write_close(a) != ARCHIVE_OK)
                return log_error_errno(EIO, "Cannot finish the tar stream: %s", archive_error_string(a));
        return 0;
}

/* A tar path we create: relative, components neither empty nor "." nor "..", bounded. */
static bool tar_path_ok(const char *p) {
        const char *c = p;

        if (!p || !*p || *p == '/' || strlen(p) > TAR_PATH_MAX)
                return false;
        for (;;) {
                size_t n = strcspn(c, "/");
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[n])
                        return true;
                c += n + 1;
                if (!*c)
                        return true; /* "dir/" */
        }
}

/* Opens the directory that holds path (below rootfd, never through a symlink) and points *ret_base at the
 * last component; a trailing '/' is cut off in place. */
static int open_parent(int rootfd, char *path, const char **ret_base) {
        size_t len = strlen(path);
        char *slash;
        int fd;

        if (len > 1 && path[len - 1] == '/')
                path[len - 1] = 0;
        slash = strrchr(path, '/');
        if (!slash) {
                *ret_base = path;
                fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        *slash = 0;
        *ret_base = slash + 1;
        fd = openat_beneath(rootfd, path, O_RDONLY | O_DIRECTORY, 0);
        *slash = '/';
        return fd;
}

static int copy_data(struct archive *a, int fd, const char *name, char **ret_error) {
        char buf[TAR_BLOCK];

        for (;;) {
                la_ssize_t n = archive_read_data(a, buf, sizeof buf);
                int r;

                if (n == 0)
                        return 0;
                if (n < 0)
                        return error_set(ret_error, -EBADMSG, "'%s': %s", name, archive_error_string(a));
                r = write_all(fd, buf, (size_t) n);
                if (r < 0)
                        return error_set(ret_error, r, "'%s': %s", name, strerror(-r));
        }
}

static int import_entry(struct archive *a, struct archive_entry *e, int rootfd, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int parent = -EBADF, fd = -EBADF;
        const char *base, *name = archive_entry_pathname(e);
        mode_t type = archive_entry_filetype(e);

        if (!tar_path_ok(name))
                return error_set(ret_error, -EBADMSG, "unsafe path '%s'", name ?: "");
        if (archive_entry_hardlink(e) || archive_entry_symlink(e) || (type != AE_IFREG && type != AE_IFDIR))
                return error_set(ret_error, -EBADMSG, "'%s' is neither a file nor a directory", name);
        path = strdup(name);
        if (!path)
                return -ENOMEM;
        parent = open_parent(rootfd, path, &base);
        if (parent < 0)
                return error_set(ret_error, -EBADMSG, "'%s': its directory is not in the stream before it (%s)",
                                 name, strerror(-parent));
        if (type == AE_IFDIR) {
                if (mkdirat(parent, base, 0755) < 0)
                        return error_set(ret_error, errno == EEXIST ? -EBADMSG : -errno, "'%s': %s", name,
                                         strerror(errno));
                return 0;
        }
        fd = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0644 | (archive_entry_perm(e) & 0111));
        if (fd < 0)
                return error_set(ret_error, errno == EEXIST ? -EBADMSG : -errno, "'%s': %s", name,
                                 strerror(errno));
        return copy_data(a, fd, name, ret_error);
}

int ctl_result_tar_import(int in_fd, int dest_dirfd, char **ret_error) {
        _cleanup_(archive_read_freep) struct archive *a = archive_read_new();
        struct archive_entry *e;
        int r;

        if (!a)
                return -ENOMEM;
        /* Plain tar only: no filters, no other formats. */
        if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
            archive_read_open_fd(a, in_fd, TAR_BLOCK) != ARCHIVE_OK) {
                return error_set(ret_error, -EBADMSG, "not a tar stream: %s",
                                 archive_error_string(a) ?: "empty");
        }
        for (;;) {
                r = archive_read_next_header(a, &e);
                if (r == ARCHIVE_EOF)
                        return 0;
                if (r != ARCHIVE_OK)
                        return error_set(ret_error, -EBADMSG, "bad tar stream: %s", archive_error_string(a) ?: "?");
                r = import_entry(a, e, dest_dirfd, ret_error);
                if (r < 0)
                        return r;
        }
}
