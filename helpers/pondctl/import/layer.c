/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layer.c: owns layer unpacking: libarchive's disk writer with its SECURE_* checks, pond's own path and
 * hard-link checks before each entry, the bounds, the neutralised entry types and the whiteout
 * conversion. Runs in a forked child that reports back through a pipe. Two readers: one decompresses the
 * blob into a raw stream, the other parses tar from that stream through a callback, so every byte the
 * decompressor produces (the data of entries that are skipped, not copied, included) and every byte of
 * the blob are counted against the bounds, and the clock is checked, as they are read. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/process-util.h"
#include "import/layer.h"

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"
#define MSG_MAX 512
#define STREAM_BLOCK (128 * 1024)
/* The parent's own bound: the child's time, and this long to report before it is killed. */
#define REPORT_GRACE_USEC (5ULL * 1000000ULL)

typedef struct Unpack {
        int rootfd;
        const LayerLimits *limits;
        LayerStats stats;
        struct archive *stream;         /* the blob, decompressed: read as one raw entry */
        uint64_t stream_bytes;
        uint64_t deadline;              /* CLOCK_MONOTONIC, usec */
        bool bound_hit;                 /* a bound on the stream was hit: msg says which */
        char last[256];                 /* the last entry seen, for the refusal */
        char *buf;
        char msg[MSG_MAX];
} Unpack;

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int refuse(Unpack *u, const char *fmt, ...) _printf_(2, 3);
static int refuse(Unpack *u, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(u->msg, sizeof u->msg, fmt, ap);
        va_end(ap);
        return -EPERM;
}

/* The tar reader's source: the next block of the decompressed stream, counted. A bound hit is refused with
 * pond's reason (kept in msg, which what libarchive then reports does not overwrite). */
static la_ssize_t stream_read(struct archive *a, void *userdata, const void **ret_buf) {
        Unpack *u = userdata;
        la_ssize_t n;
        la_int64_t blob;

        if (u->bound_hit)
                return -1;
        if (now_usec() > u->deadline) {
                refuse(u, "unpacking the layer took longer than %llu s (at %s)",
                       (unsigned long long) (u->limits->max_usec / 1000000ULL), u->last[0] ? u->last : "its start");
                goto bound;
        }
        n = archive_read_data(u->stream, u->buf, STREAM_BLOCK);
        if (n < 0) {
                archive_set_error(a, EIO, "%s", archive_error_string(u->stream) ?: "cannot decompress");
                return -1;
        }
        blob = archive_filter_bytes(u->stream, -1);
        if (blob < 0 || (uint64_t) blob > u->limits->max_stream_bytes) {
                refuse(u, "the layer's blob has more than %llu bytes",
                       (unsigned long long) u->limits->max_stream_bytes);
                goto bound;
        }
        if ((uint64_t) n > u->limits->max_stream_bytes - u->stream_bytes) {
                refuse(u, "the layer's tar stream has more than %llu bytes (at %s)",
                       (unsigned long long) u->limits->max_stream_bytes, u->last[0] ? u->last : "its start");
                goto bound;
        }
        u->stream_bytes += (uint64_t) n;
        *ret_buf = u->buf;
        return n;
bound:
        u->bound_hit = true;
        archive_set_error(a, EFBIG, "%s", u->msg);
        return -1;
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
                        return u->bound_hit ? -EPERM : refuse(u, "%s: %s", path, archive_error_string(in));
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
        snprintf(u->last, sizeof u->last, "%s", copy);
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

/* The blob, decompressed (gzip, zstd, or as it is), as one raw entry to read from. */
static int stream_open(Unpack *u, int blob_fd) {
        struct archive_entry *e;

        u->stream = archive_read_new();
        if (!u->stream)
                return -ENOMEM;
        archive_read_support_filter_gzip(u->stream);
        archive_read_support_filter_zstd(u->stream);
        archive_read_support_format_raw(u->stream);
        if (archive_read_open_fd(u->stream, blob_fd, STREAM_BLOCK) != ARCHIVE_OK ||
            archive_read_next_header(u->stream, &e) != ARCHIVE_OK)
                return refuse(u, "not a layer: %s", archive_error_string(u->stream) ?: "empty");
        return 0;
}

static int unpack_here(Unpack *u, int blob_fd) {
        struct archive *in = archive_read_new(), *out = archive_write_disk_new();
        struct archive_entry *e;
        int flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                    ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;
        int r = 0;

        u->buf = malloc(STREAM_BLOCK);
        if (!in || !out || !u->buf) {
                r = -ENOMEM;
                goto finish;
        }
        r = stream_open(u, blob_fd);
        if (r < 0)
                goto finish;
        if (geteuid() == 0)
                flags |= ARCHIVE_EXTRACT_OWNER;
        archive_read_support_format_tar(in);
        archive_write_disk_set_options(out, flags);
        /* numeric ids only: the image's /etc/passwd is not the host's */
        if (archive_read_open(in, u, NULL, stream_read, NULL) != ARCHIVE_OK) {
                r = u->bound_hit ? -EPERM : refuse(u, "not a tar: %s", archive_error_string(in));
                goto finish;
        }
        for (;;) {
                int k = archive_read_next_header(in, &e);
                if (k == ARCHIVE_EOF)
                        break;
                if (k < ARCHIVE_WARN) {
                        r = u->bound_hit ? -EPERM : refuse(u, "bad tar: %s", archive_error_string(in));
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
        archive_read_free(u->stream);
        u->stream = NULL;
        free(u->buf);
        u->buf = NULL;
        return r;
}

static _noreturn_ void child(int blob_fd, int dest_fd, const LayerLimits *limits, uint64_t deadline, int report_fd) {
        Unpack u = { .rootfd = dest_fd, .limits = limits, .deadline = deadline };
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

/* Until the child has reported (or closed the pipe), at most until deadline: -ETIMEDOUT past it. */
static int wait_report(int fd, uint64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                uint64_t now = now_usec();
                int n;

                if (now >= deadline)
                        return -ETIMEDOUT;
                n = poll(&p, 1, (int) MIN((deadline - now + 999) / 1000, (uint64_t) INT_MAX));
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

int layer_unpack(int blob_fd, int dest_fd, const LayerLimits *limits, LayerStats *ret_stats, char **ret_error) {
        _cleanup_(sigkill_waitp) PidRef pid = PIDREF_NULL;
        _cleanup_close_ int rfd = -EBADF, wfd = -EBADF;
        const LayerLimits def = LAYER_LIMITS_DEFAULT;
        char msg[MSG_MAX + 1] = {};
        LayerStats stats = {};
        siginfo_t si = {};
        uint64_t deadline;
        int fds[2], r, rc = -EIO;
        ssize_t n;

        if (!limits)
                limits = &def;
        deadline = now_usec() + limits->max_usec;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        rfd = fds[0];
        wfd = fds[1];
        r = safe_fork("(pond-unpack)", FORK_RESET_SIGNALS | FORK_DEATHSIG, &pid);
        if (r < 0)
                return r;
        if (r == 0) {
                rfd = safe_close(rfd);
                child(blob_fd, dest_fd, limits, deadline, wfd);
        }
        wfd = safe_close(wfd);
        /* The child checks the clock between blocks; one stuck elsewhere (a write, the sync) is killed. */
        r = wait_report(rfd, deadline + REPORT_GRACE_USEC);
        if (r == -ETIMEDOUT)
                return error_set(ret_error, -EPERM, "unpacking the layer took longer than %llu s: stopped",
                                 (unsigned long long) (limits->max_usec / 1000000ULL));
        if (r < 0)
                return r;
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
