/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layer.c: owns layer unpacking: libarchive's disk writer with its SECURE_* checks, pond's own path and
 * hard-link checks before each entry, the bounds, the neutralised entry types and the whiteout
 * conversion. Runs in a forked child that reports back through a pipe. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/process-util.h"
#include "import/layer.h"

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"
#define MSG_MAX 512

typedef struct Unpack {
        int rootfd;
        const LayerLimits *limits;
        LayerStats stats;
        char msg[MSG_MAX];
} Unpack;

static int refuse(Unpack *u, const char *fmt, ...) _printf_(2, 3);
static int refuse(Unpack *u, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(u->msg, sizeof u->msg, fmt, ap);
        va_end(ap);
        return -EPERM;
}

/* In place: drops leading "./" and "/"-runs, refuses absolute paths and any ".." component. Returns the
 * normalised path ("" for the layer root itself) or NULL. */
static const char *path_normalise(char *p) {
        char *w = p;

        if (p[0] == '/')
                return NULL;
        for (const char *s = p; *s;) {
                size_t n = strcspn(s, "/");

                if (n == 2 && s[0] == '.' && s[1] == '.')
                        return NULL;
                if (n > 0 && !(n == 1 && s[0] == '.')) {
                        if (w != p)
                                *w++ = '/';
                        memmove(w, s, n);
                        w += n;
                }
                s += n;
                s += strspn(s, "/");
        }
        *w = 0;
        return p;
}

/* Opens (creating as needed, 0755) the directory path below rootfd, never through a symlink. */
static int mkdir_beneath(int rootfd, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        char comp[NAME_MAX + 1];

        fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        for (const char *s = path; *s;) {
                size_t n = strcspn(s, "/");
                int nfd;

                if (n == 0 || n > NAME_MAX)
                        return -EINVAL;
                memcpy(comp, s, n);
                comp[n] = 0;
                if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST)
                        return -errno;
                nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0)
                        return -errno;
                close(fd);
                fd = nfd;
                s += n;
                s += strspn(s, "/");
        }
        return TAKE_FD(fd);
}

static int whiteout(Unpack *u, const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        _cleanup_close_ int dfd = -EBADF;
        char *slash, *base;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        base = slash ? slash + 1 : dir;
        if (slash)
                *slash = 0;
        dfd = mkdir_beneath(u->rootfd, slash ? dir : "");
        if (dfd < 0)
                return refuse(u, "%s: cannot open its directory: %s", path, strerror(-dfd));
        if (streq(base, WH_OPAQUE)) {
                if (fsetxattr(dfd, "trusted.overlay.opaque", "y", 1, 0) < 0)
                        return refuse(u, "%s: cannot mark the directory opaque: %m", path);
                u->stats.opaques++;
                return 0;
        }
        base += strlen(WH_PREFIX);
        if (base[0] == 0 || streq(base, ".") || streq(base, "..") || strncmp(base, WH_PREFIX, 4) == 0)
                return refuse(u, "%s: not a whiteout pond understands", path);
        if (mknodat(dfd, base, S_IFCHR | 0000, makedev(0, 0)) < 0)
                return refuse(u, "%s: cannot create the whiteout: %m", path);
        u->stats.whiteouts++;
        return 0;
}

/* A hard link may only name a regular file this layer already has, reached without symlinks. */
static int check_hardlink(Unpack *u, struct archive_entry *e, const char *path) {
        _cleanup_free_ char *target = strdup(archive_entry_hardlink(e));
        _cleanup_close_ int fd = -EBADF;
        const char *t;
        struct stat st;

        if (!target)
                return -ENOMEM;
        t = path_normalise(target);
        if (!t || !*t)
                return refuse(u, "%s: hard link to '%s' leaves the layer", path, archive_entry_hardlink(e));
        fd = openat_beneath(u->rootfd, t, O_PATH, 0);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return refuse(u, "%s: hard link to '%s', which is not a regular file of this layer", path, t);
        archive_entry_set_hardlink(e, t);
        return 0;
}

static int copy_data(Unpack *u, struct archive *in, struct archive *out, const char *path) {
        for (;;) {
                const void *buf;
                size_t len;
                la_int64_t off;
                int r = archive_read_data_block(in, &buf, &len, &off);

                if (r == ARCHIVE_EOF)
                        return 0;
                if (r < ARCHIVE_WARN)
                        return refuse(u, "%s: %s", path, archive_error_string(in));
                if ((uint64_t) len > u->limits->max_bytes - u->stats.bytes)
                        return refuse(u, "%s: the layer has more than %llu bytes", path,
                                      (unsigned long long) u->limits->max_bytes);
                u->stats.bytes += len;
                if (archive_write_data_block(out, buf, len, off) < ARCHIVE_WARN)
                        return refuse(u, "%s: %s", path, archive_error_string(out));
        }
}

static int entry(Unpack *u, struct archive *in, struct archive *out, struct archive_entry *e) {
        _cleanup_free_ char *copy = strdup(archive_entry_pathname(e) ?: "");
        const char *path, *base;
        mode_t type = archive_entry_filetype(e), perm = archive_entry_perm(e);
        int r;

        if (!copy)
                return -ENOMEM;
        if (++u->stats.entries > u->limits->max_entries)
                return refuse(u, "the layer has more than %llu entries",
                              (unsigned long long) u->limits->max_entries);
        path = path_normalise(copy);
        if (!path)
                return refuse(u, "%s: leaves the layer (absolute or \"..\")", archive_entry_pathname(e));
        if (!*path)
                return 0;       /* the layer's root itself: the store's directory keeps its own mode */
        base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0)
                return whiteout(u, path);
        archive_entry_set_pathname(e, path);
        if (archive_entry_hardlink(e)) {        /* of any type in the header: what it names decides */
                r = check_hardlink(u, e, path);
                if (r < 0)
                        return r;
                type = AE_IFREG;
        } else if (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFIFO || type == AE_IFSOCK) {
                u->stats.skipped_special++;
                return 0;
        } else if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
                return refuse(u, "%s: unknown entry type", path);
        if (perm & (S_ISUID | S_ISGID)) {
                archive_entry_set_perm(e, perm & ~(mode_t) (S_ISUID | S_ISGID));
                u->stats.stripped_setid++;
        }
        archive_entry_xattr_clear(e);
        archive_entry_acl_clear(e);
        if (archive_write_header(out, e) < ARCHIVE_WARN)
                return refuse(u, "%s: %s", path, archive_error_string(out));
        if (type == AE_IFREG && !archive_entry_hardlink(e) && archive_entry_size(e) > 0) {
                r = copy_data(u, in, out, path);
                if (r < 0)
                        return r;
        }
        if (archive_write_finish_entry(out) < ARCHIVE_WARN)
                return refuse(u, "%s: %s", path, archive_error_string(out));
        return 0;
}

static int unpack_here(Unpack *u, int blob_fd) {
        struct archive *in = archive_read_new(), *out = archive_write_disk_new();
        struct archive_entry *e;
        int flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                    ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;
        int r = 0;

        if (!in || !out) {
                r = -ENOMEM;
                goto finish;
        }
        if (geteuid() == 0)
                flags |= ARCHIVE_EXTRACT_OWNER;
        archive_read_support_filter_gzip(in);
        archive_read_support_filter_zstd(in);
        archive_read_support_format_tar(in);
        archive_write_disk_set_options(out, flags);
        /* numeric ids only: the image's /etc/passwd is not the host's */
        if (archive_read_open_fd(in, blob_fd, 128 * 1024) != ARCHIVE_OK) {
                r = refuse(u, "not a tar: %s", archive_error_string(in));
                goto finish;
        }
        for (;;) {
                int k = archive_read_next_header(in, &e);
                if (k == ARCHIVE_EOF)
                        break;
                if (k < ARCHIVE_WARN) {
                        r = refuse(u, "bad tar: %s", archive_error_string(in));
                        break;
                }
                r = entry(u, in, out, e);
                if (r < 0)
                        break;
        }
        if (r >= 0 && archive_write_close(out) != ARCHIVE_OK)
                r = refuse(u, "cannot finish the layer: %s", archive_error_string(out));
finish:
        archive_read_free(in);
        archive_write_free(out);
        return r;
}

static _noreturn_ void child(int blob_fd, int dest_fd, const LayerLimits *limits, int report_fd) {
        Unpack u = { .rootfd = dest_fd, .limits = limits };
        int r;

        if (fchdir(dest_fd) < 0)
                r = refuse(&u, "cannot enter the layer directory: %m");
        else
                r = unpack_here(&u, blob_fd);
        if (r >= 0 && syncfs(dest_fd) < 0)
                r = refuse(&u, "cannot sync the layer: %m");
        if (r < 0 && !u.msg[0])
                snprintf(u.msg, sizeof u.msg, "%s", strerror(-r));
        (void) write_all(report_fd, &r, sizeof r);
        (void) write_all(report_fd, &u.stats, sizeof u.stats);
        (void) write_all(report_fd, u.msg, strlen(u.msg));
        _exit(r < 0 ? 1 : 0);
}

int layer_unpack(int blob_fd, int dest_fd, const LayerLimits *limits, LayerStats *ret_stats, char **ret_error) {
        _cleanup_(sigkill_waitp) PidRef pid = PIDREF_NULL;
        _cleanup_close_ int rfd = -EBADF, wfd = -EBADF;
        const LayerLimits def = LAYER_LIMITS_DEFAULT;
        char msg[MSG_MAX + 1] = {};
        LayerStats stats = {};
        siginfo_t si = {};
        int fds[2], r, rc = -EIO;
        ssize_t n;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        rfd = fds[0];
        wfd = fds[1];
        r = safe_fork("(pond-unpack)", FORK_RESET_SIGNALS | FORK_DEATHSIG, &pid);
        if (r < 0)
                return r;
        if (r == 0) {
                rfd = safe_close(rfd);
                child(blob_fd, dest_fd, limits ?: &def, wfd);
        }
        wfd = safe_close(wfd);
        if (loop_read(rfd, &rc, sizeof rc) != sizeof rc || loop_read(rfd, &stats, sizeof stats) != sizeof stats)
                rc = -EIO;
        n = loop_read(rfd, msg, MSG_MAX);
        if (n < 0)
                n = 0;
        msg[n] = 0;
        r = pidref_wait(&pid, USEC_INFINITY, &si);
        if (r < 0)
                return r;
        if (rc >= 0 && (si.si_code != CLD_EXITED || si.si_status != 0))
                rc = -EIO;
        if (rc < 0)
                return error_set(ret_error, rc, "%s", msg[0] ? msg : "the unpacking child died");
        if (ret_stats)
                *ret_stats = stats;
        return 0;
}
