/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bundle-extract.c: the validated extraction of a bundle's tar stream into a fresh directory. libarchive only
 * parses; every file system change is made here, relative to the destination's fd, each path resolved with
 * openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) so that neither a crafted name nor a symlink planted by an
 * earlier entry can reach outside it. Only regular files, directories and symlinks that stay inside the tree
 * are made; anything else refuses the whole bundle (never skipped silently). */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "secrets/bundle-crypt.h"
#include "secrets/bundle.h"

#define EXTRACT_BUF_SIZE (64U * 1024U)

/* A directory whose own mode would stop us from filling it (no u+rwx) gets that mode at the end. */
typedef struct DeferredMode {
        char *path;
        mode_t mode;
} DeferredMode;

typedef struct Extract {
        struct archive *a;
        int dest;
        const BundleLimits *limits;
        uint64_t entries, bytes;
        DeferredMode *deferred;
        size_t n_deferred;
        uint8_t *buf;
        BundleReadFn read;
        void *userdata;
        int source_error;           /* the source's own refusal, message already in *ret_error */
        char **ret_error;
} Extract;

static void extract_done(Extract *x) {
        for (size_t i = 0; i < x->n_deferred; i++)
                free(x->deferred[i].path);
        free(x->deferred);
        free(x->buf);
        if (x->a)
                archive_read_free(x->a);
}

static la_ssize_t source_read(struct archive *a, void *userdata, const void **ret_buf) {
        Extract *x = userdata;
        ssize_t n = x->read(x->userdata, ret_buf, x->ret_error);

        if (n < 0) {
                x->source_error = (int) n;
                archive_set_error(a, EBADMSG, "source refused");
                return -1;
        }
        return n;
}

/* A libarchive failure: the source's own reason if it had one, else libarchive's. */
static int archive_fail(Extract *x, const char *what) {
        if (x->source_error < 0)
                return x->source_error;
        return error_set(x->ret_error, -EBADMSG, "bundle: malformed tar (%s): %s", what,
                         archive_error_string(x->a) ?: "unknown error");
}

static int fs_fail(Extract *x, int r, const char *path) {
        switch (r) {
        case -ELOOP:
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': below a symlink", path);
        case -EEXIST:
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': duplicate entry", path);
        case -ENOENT:
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': its directory does not come "
                                 "before it", path);
        case -ENOTDIR:
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': below a symlink or a file", path);
        case -EXDEV:
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': leaves the destination", path);
        default:
                return error_set(x->ret_error, r, "bundle entry '%s': %s", path, strerror(-r));
        }
}

/* An O_PATH fd of path's directory (resolved beneath dest, no symlinks) and its last component. */
static int open_parent(Extract *x, char *path, const char **ret_leaf) {
        char *slash = strrchr(path, '/');
        int fd;

        if (!slash) {
                *ret_leaf = path;
                return openat_beneath(x->dest, ".", O_PATH | O_DIRECTORY, 0);
        }
        *slash = 0;
        fd = openat_beneath(x->dest, path, O_PATH | O_DIRECTORY, 0);
        *slash = '/';
        if (fd >= 0)
                *ret_leaf = slash + 1;
        return fd;
}

static int set_mode(Extract *x, const char *path, mode_t mode) {
        _cleanup_close_ int fd = openat_beneath(x->dest, path, O_RDONLY | O_DIRECTORY, 0);

        if (fd < 0)
                return fs_fail(x, fd, path);
        if (fchmod(fd, mode) < 0)
                return fs_fail(x, negative_errno(), path);
        return 0;
}

static int extract_dir(Extract *x, char *path, mode_t perm) {
        _cleanup_close_ int parent = -EBADF;
        const char *leaf;
        int r;

        parent = open_parent(x, path, &leaf);
        if (parent < 0)
                return fs_fail(x, parent, path);
        if (mkdirat(parent, leaf, 0700) < 0)
                return fs_fail(x, negative_errno(), path);
        /* Whatever the umask: we must be able to fill it; a mode without u+rwx is set at the end. */
        r = set_mode(x, path, perm | 0700);
        if (r < 0 || (perm & 0700) == 0700)
                return r;
        DeferredMode *d = reallocarray(x->deferred, x->n_deferred + 1, sizeof *d);
        if (!d)
                return -ENOMEM;
        x->deferred = d;
        d[x->n_deferred].path = strdup(path);
        if (!d[x->n_deferred].path)
                return -ENOMEM;
        d[x->n_deferred++].mode = perm;
        return 0;
}

static int extract_link(Extract *x, struct archive_entry *e, char *path) {
        _cleanup_close_ int parent = -EBADF;
        const char *target = archive_entry_symlink(e), *leaf;
        int r;

        if (!target)
                return error_set(x->ret_error, -EBADMSG, "symlink '%s': no target", path);
        r = bundle_link_target_check(path, target, x->ret_error);
        if (r < 0)
                return r;
        parent = open_parent(x, path, &leaf);
        if (parent < 0)
                return fs_fail(x, parent, path);
        if (symlinkat(target, parent, leaf) < 0)
                return fs_fail(x, negative_errno(), path);
        return 0;
}

static int bytes_fail(Extract *x) {
        return error_set(x->ret_error, -E2BIG, "bundle: more than %" PRIu64 " bytes of file contents",
                         x->limits->max_bytes);
}

static int extract_file(Extract *x, struct archive_entry *e, const char *path, mode_t perm) {
        _cleanup_close_ int fd = -EBADF;
        int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
        int r;

        /* The declared size first, so an oversized entry is refused before a byte is written. */
        if (size < 0 || (uint64_t) size > x->limits->max_bytes - x->bytes)
                return bytes_fail(x);
        fd = openat_beneath(x->dest, path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
                return fs_fail(x, fd, path);
        for (;;) {
                la_ssize_t n = archive_read_data(x->a, x->buf, EXTRACT_BUF_SIZE);
                if (n < 0)
                        return archive_fail(x, path);
                if (n == 0)
                        break;
                if ((uint64_t) n > x->limits->max_bytes - x->bytes)
                        return bytes_fail(x);
                x->bytes += (uint64_t) n;
                r = write_all(fd, x->buf, (size_t) n);
                if (r < 0)
                        return fs_fail(x, r, path);
        }
        if (fchmod(fd, perm) < 0)
                return fs_fail(x, negative_errno(), path);
        return 0;
}

static const char *type_name(mode_t type) {
        switch (type) {
        case AE_IFCHR:
                return "character device";
        case AE_IFBLK:
                return "block device";
        case AE_IFIFO:
                return "fifo";
        case AE_IFSOCK:
                return "socket";
        default:
                return "entry of unknown type";
        }
}

static int extract_entry(Extract *x, struct archive_entry *e) {
        _cleanup_free_ char *path = NULL;
        const char *raw = archive_entry_pathname(e);
        mode_t type = archive_entry_filetype(e), perm = archive_entry_perm(e);
        int r;

        if (++x->entries > x->limits->max_entries)
                return error_set(x->ret_error, -E2BIG, "bundle: more than %" PRIu64 " entries",
                                 x->limits->max_entries);
        if (!raw)
                return error_set(x->ret_error, -EBADMSG, "bundle: entry without a path");
        r = bundle_path_normalize(raw, x->limits->max_path, &path, x->ret_error);
        if (r < 0)
                return r;
        if (archive_entry_hardlink(e))
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': hard link (refused)", path);
        if (perm & 07000)
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': mode %04o has setuid, setgid or "
                                 "sticky bits (refused, not stripped)", path, (unsigned) perm);
        if (path[0] == 0)
                /* The root itself ("./"): dest is already there and keeps its own mode. */
                return type == AE_IFDIR ? 0 : error_set(x->ret_error, -EBADMSG, "bundle: root entry is not "
                                                        "a directory");
        switch (type) {
        case AE_IFREG:
                return extract_file(x, e, path, perm);
        case AE_IFDIR:
                return extract_dir(x, path, perm);
        case AE_IFLNK:
                return extract_link(x, e, path);
        default:
                return error_set(x->ret_error, -EBADMSG, "bundle entry '%s': %s (refused)", path,
                                 type_name(type));
        }
}

static int apply_deferred(Extract *x) {
        /* Deepest last created first: a parent's restrictive mode never blocks a child's chmod. */
        for (size_t i = x->n_deferred; i > 0; i--) {
                int r = set_mode(x, x->deferred[i - 1].path, x->deferred[i - 1].mode);
                if (r < 0)
                        return r;
        }
        return 0;
}

int bundle_extract_stream(BundleReadFn read_fn, void *userdata, int dest_dirfd, const BundleLimits *limits,
                          char **ret_error) {
        static const BundleLimits defaults = BUNDLE_LIMITS_DEFAULT;
        _cleanup_(extract_done) Extract x = {
                .dest = dest_dirfd, .limits = limits ?: &defaults, .read = read_fn, .userdata = userdata,
                .ret_error = ret_error,
        };
        struct archive_entry *e;
        int k, r;

        x.a = archive_read_new();
        x.buf = malloc(EXTRACT_BUF_SIZE);
        if (!x.a || !x.buf)
                return -ENOMEM;
        /* tar only (ustar, pax, gnu), no compression filters: nothing inflates behind the byte caps. */
        if (archive_read_support_format_tar(x.a) != ARCHIVE_OK)
                return -EIO;
        if (archive_read_open(x.a, &x, NULL, source_read, NULL) != ARCHIVE_OK)
                return archive_fail(&x, "start");
        while ((k = archive_read_next_header(x.a, &e)) != ARCHIVE_EOF) {
                /* ARCHIVE_WARN too: a header libarchive had to guess at is not one we extract. */
                if (k != ARCHIVE_OK)
                        return archive_fail(&x, "header");
                r = extract_entry(&x, e);
                if (r < 0)
                        return r;
        }
        return apply_deferred(&x);
}

int bundle_extract(int bundle_fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk,
                   const char *job_id, int dest_dirfd, const BundleLimits *limits,
                   char ret_input_sha[SHA256_HEX_SIZE], char **ret_error) {
        static const BundleLimits defaults = BUNDLE_LIMITS_DEFAULT;
        _cleanup_(bundle_opener_freep) BundleOpener *o = NULL;
        char sha[SHA256_HEX_SIZE];
        int r;

        if (!limits)
                limits = &defaults;
        r = bundle_opener_new(bundle_fd, worker_pk, worker_sk, job_id, limits->max_bundle_bytes, &o, ret_error);
        if (r < 0)
                return r;
        r = bundle_extract_stream(bundle_opener_read, o, dest_dirfd, limits, ret_error);
        if (r < 0)
                return r;
        /* The tar stream ended; the bundle must still end with its FINAL chunk and nothing after it. */
        r = bundle_opener_finish(o, sha, ret_error);
        if (r < 0)
                return r;
        memcpy(ret_input_sha, sha, SHA256_HEX_SIZE);
        return 0;
}
