/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-result-tar.c: a result directory as a tar stream: `pondctl export ID` writes results/ID (directories
 * and regular files, nothing else is in a result) on the worker, and `pondctl -H` unpacks it on the client
 * into a fresh hidden directory next to its place, where result_verify() checks it against the worker's
 * pinned key before it is renamed into place (on any failure it is removed whole). The stream comes from
 * another machine: only relative paths without "." or ".." components, only directories and regular files,
 * each created new (O_EXCL) below the destination and never through a symlink, and no more bytes, files,
 * directories, depth or path length than a valid result can have (libarchive reads it; nothing here parses
 * tar). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "ctl.h"
#include "result/collect.h"
#include "result/result.h"
#include "result/transcript.h"

#define TAR_BLOCK 65536

/* What one result can hold (docs/result-format.md), so that every valid result unpacks and nothing much
 * larger does. Bytes: the largest artifacts/ a spec may ask for (JOB_SPEC_MAX_ARTIFACT_BYTES), the largest
 * log (JOB_SPEC_MAX_OUTPUT_BYTES, stdout and stderr together) and twice that for its index (a line per chunk
 * read: chunks of 24 bytes on average, or more), the exec transcript's kept bytes (JOB_SPEC_MAX_OUTPUT_BYTES
 * again) and its index, result.json and result.sig. Files: the most artifact files a spec may ask for
 * (JOB_SPEC_MAX_ARTIFACT_FILES), the result's own five and the transcript's (three per exec and its index).
 * Directories: ten per file at that maximum (those artifacts/ mirrors of the workspace). Depth: what
 * collect.c walks (COLLECT_MAX_DEPTH directories), as far as rm_rf_at() can still remove a tree whole (a
 * directory of 256 components; a file in the deepest directory collect.c enters, 258 with artifacts/, is
 * refused). A path as long as result_verify() can open below artifacts/. */
const CtlTarLimits ctl_tar_limits_result = {
        .max_bytes = JOB_SPEC_MAX_ARTIFACT_BYTES + 4 * JOB_SPEC_MAX_OUTPUT_BYTES + TRANSCRIPT_INDEX_MAX +
                     RESULT_JSON_MAX + RESULT_SIG_MAX,
        .max_files = JOB_SPEC_MAX_ARTIFACT_FILES + 5 + 3 * TRANSCRIPT_EXECS_MAX + 1,
        .max_dirs = 10 * JOB_SPEC_MAX_ARTIFACT_FILES,
        .max_depth = COLLECT_MAX_DEPTH,
        .max_path = sizeof(RESULT_ARTIFACTS_DIR "/") - 1 + PATH_MAX - 1,
};

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
                /* As deep as the client takes: an entry of dirfd has depth + 1 components. */
                if (depth + 1 > ctl_tar_limits_result.max_depth)
                        return log_error_errno(ELOOP, "%s: too deep.", path);
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

/* Counts what the stream holds against the limits; the stream itself is bounded too (headers, long-name
 * records), so that a worker cannot make us read forever either. */
typedef struct Import {
        int fd;
        const CtlTarLimits *limits;
        const volatile sig_atomic_t *interrupted;
        uint64_t stream, stream_max;
        uint64_t bytes, files, dirs;
        char buf[TAR_BLOCK];
} Import;

static la_ssize_t import_read(struct archive *a, void *userdata, const void **ret_buf) {
        Import *im = userdata;

        for (;;) {
                ssize_t n = read(im->fd, im->buf, sizeof im->buf);

                if (n < 0 && errno == EINTR && !(im->interrupted && *im->interrupted))
                        continue;
                if (n < 0) {
                        archive_set_error(a, errno, "%s", errno == EINTR ? "interrupted" : strerror(errno));
                        return -1;
                }
                im->stream += (uint64_t) n;
                if (im->stream > im->stream_max) {
                        archive_set_error(a, EFBIG, "the stream is longer than %" PRIu64 " bytes", im->stream_max);
                        return -1;
                }
                *ret_buf = im->buf;
                return n;
        }
}

/* A path we create: relative, components neither empty nor "." nor ".." and each at most NAME_MAX bytes, at
 * most max_depth of them, at most max_path bytes; a trailing '/' is allowed. NULL, or what is wrong. */
static const char *tar_path_check(const char *p, const CtlTarLimits *limits) {
        const char *c = p;
        unsigned depth = 0;

        if (!p || !*p)
                return "empty path";
        if (*p == '/')
                return "absolute path";
        if (strlen(p) > limits->max_path)
                return "path too long";
        for (;;) {
                size_t n = strcspn(c, "/");
                if (n == 0)
                        return "empty path component";
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return "'.' or '..' in the path";
                if (n > NAME_MAX)
                        return "a name in the path is too long";
                if (++depth > limits->max_depth)
                        return "path too deep";
                if (!c[n] || !c[n + 1])
                        return NULL; /* "name" or "dir/" */
                c += n + 1;
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

/* Copies the entry's data (size bytes, as its header says) into fd. */
static int copy_data(struct archive *a, Import *im, int fd, const char *name, uint64_t size, char **ret_error) {
        uint64_t done = 0;

        for (;;) {
                const void *buf;
                size_t n;
                la_int64_t offset;
                int r;

                r = archive_read_data_block(a, &buf, &n, &offset);
                if (r == ARCHIVE_EOF)
                        break;
                if (r != ARCHIVE_OK)
                        return error_set(ret_error, -EBADMSG, "'%s': %s", name, archive_error_string(a) ?: "bad data");
                if (offset < 0 || (uint64_t) offset != done || n > size - done)
                        return error_set(ret_error, -EBADMSG, "'%s': data not as its header says", name);
                r = write_all(fd, buf, n);
                if (r < 0)
                        return error_set(ret_error, r, "'%s': %s", name, strerror(-r));
                done += n;
        }
        if (done != size)
                return error_set(ret_error, -EBADMSG, "'%s': %" PRIu64 " bytes of %" PRIu64, name, done, size);
        im->bytes += done;
        return 0;
}

static int import_entry(struct archive *a, struct archive_entry *e, Import *im, int rootfd, char **ret_error) {
        const CtlTarLimits *l = im->limits;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int parent = -EBADF, fd = -EBADF;
        const char *base, *why, *name = archive_entry_pathname(e);
        mode_t type = archive_entry_filetype(e);
        la_int64_t size = archive_entry_size(e);

        why = tar_path_check(name, l);
        if (why)
                return error_set(ret_error, -EBADMSG, "'%s': %s", name ?: "", why);
        if (archive_entry_hardlink(e) || archive_entry_symlink(e) || (type != AE_IFREG && type != AE_IFDIR))
                return error_set(ret_error, -EBADMSG, "'%s' is neither a file nor a directory", name);
        if (type == AE_IFDIR ? ++im->dirs > l->max_dirs : ++im->files > l->max_files)
                return error_set(ret_error, -EBADMSG, "'%s': more than %" PRIu64 " %s", name,
                                 type == AE_IFDIR ? l->max_dirs : l->max_files,
                                 type == AE_IFDIR ? "directories" : "files");
        if (type == AE_IFREG && (!archive_entry_size_is_set(e) || size < 0 || archive_entry_sparse_count(e) > 0))
                return error_set(ret_error, -EBADMSG, "'%s' is not a plain file of a known size", name);
        if (type == AE_IFREG && (uint64_t) size > l->max_bytes - im->bytes)
                return error_set(ret_error, -EBADMSG, "'%s': more than %" PRIu64 " bytes in all", name,
                                 l->max_bytes);
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
        return copy_data(a, im, fd, name, (uint64_t) size, ret_error);
}

static int import(int in_fd, int dest_dirfd, const CtlTarLimits *limits, const volatile sig_atomic_t *interrupted,
                  char **ret_error) {
        _cleanup_(archive_read_freep) struct archive *a = archive_read_new();
        _cleanup_free_ Import *im = NULL;
        struct archive_entry *e;
        int r;

        if (!a)
                return -ENOMEM;
        im = malloc(sizeof *im);
        if (!im)
                return -ENOMEM;
        *im = (Import) { .fd = in_fd, .limits = limits, .interrupted = interrupted };
        /* Every entry has a header, maybe a pax header and a long name, and padding. */
        im->stream_max = limits->max_bytes + (limits->max_files + limits->max_dirs + 1) *
                                             (4 * 512 + 2 * (uint64_t) limits->max_path);
        /* Plain tar only: no filters, no other formats. */
        if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
            archive_read_open(a, im, NULL, import_read, NULL) != ARCHIVE_OK)
                return error_set(ret_error, -EBADMSG, "not a tar stream: %s", archive_error_string(a) ?: "empty");
        for (;;) {
                r = archive_read_next_header(a, &e);
                if (r == ARCHIVE_EOF)
                        return 0;
                if (r != ARCHIVE_OK)
                        return error_set(ret_error, -EBADMSG, "bad tar stream: %s", archive_error_string(a) ?: "?");
                r = import_entry(a, e, im, dest_dirfd, ret_error);
                if (r < 0)
                        return r;
        }
}

int ctl_result_tar_import(int in_fd, int dest_dirfd, const CtlTarLimits *limits, char **ret_error) {
        return import(in_fd, dest_dirfd, limits ?: &ctl_tar_limits_result, NULL, ret_error);
}

int ctl_result_tar_unpack(int in_fd, const char *parent, const char *name, const CtlTarLimits *limits,
                          const volatile sig_atomic_t *interrupted, CtlTarCheck check, void *userdata,
                          char **ret_dir, char **ret_error) {
        _cleanup_free_ char *tmp = NULL, *dir = NULL;
        _cleanup_close_ int parentfd = -EBADF, fd = -EBADF;
        const char *tmp_base;
        int r, k;

        if (!name || !*name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        if (asprintf(&dir, "%s/%s", parent, name) < 0 || asprintf(&tmp, "%s/.%s.XXXXXX", parent, name) < 0)
                return -ENOMEM;
        parentfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (parentfd < 0)
                return error_set(ret_error, -errno, "cannot open %s: %s", parent, strerror(errno));
        if (faccessat(parentfd, name, F_OK, AT_SYMLINK_NOFOLLOW) >= 0)
                return error_set(ret_error, -EEXIST, "%s exists already", dir);
        /* Next to its final place (one rename, no copy), and hidden until it is there. 0700. */
        if (!mkdtemp(tmp))
                return error_set(ret_error, -errno, "cannot create a directory in %s: %s", parent, strerror(errno));
        tmp_base = strrchr(tmp, '/') + 1;
        fd = openat(parentfd, tmp_base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        r = fd < 0 ? error_set(ret_error, -errno, "cannot open %s: %s", tmp, strerror(errno)) :
                     import(in_fd, fd, limits ?: &ctl_tar_limits_result, interrupted, ret_error);
        fd = safe_close(fd);
        if (r >= 0 && check)
                r = check(tmp, userdata, ret_error);
        if (r >= 0 && interrupted && *interrupted)
                r = error_set(ret_error, -EINTR, "interrupted");
        if (r >= 0 && renameat2(parentfd, tmp_base, parentfd, name, RENAME_NOREPLACE) < 0)
                r = error_set(ret_error, -errno, "cannot rename %s to %s: %s", tmp, dir, strerror(errno));
        if (r < 0) {
                /* Whatever came, all of it: nothing unverified stays behind. */
                k = rm_rf_at(parentfd, tmp_base);
                if (k < 0)
                        log_warning_errno(k, "Cannot remove %s: %m", tmp);
                return r;
        }
        if (ret_dir)
                *ret_dir = TAKE_PTR(dir);
        return 0;
}
