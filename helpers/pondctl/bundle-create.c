/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bundle-create.c: a source tree as a pax (restricted) tar stream, written straight into the bundle's
 * encryption layer: names sorted, permission bits only, no owners, times or devices, symlinks only when
 * they stay inside the tree. It refuses what extraction would refuse, so a bundle that was made extracts. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/jobid.h"
#include "secrets/bundle-crypt.h"
#include "secrets/bundle.h"

#define CREATE_BUF_SIZE (64U * 1024U)

typedef struct Create {
        struct archive *a;
        BundleSealer *sealer;
        const BundleLimits *limits;
        uint64_t entries, bytes;
        uint8_t *buf;
        int sink_error;
        char **ret_error;
} Create;

static void create_done(Create *c) {
        if (c->a)
                archive_write_free(c->a);
        bundle_sealer_free(c->sealer);
        free(c->buf);
}

static la_ssize_t sink_write(struct archive *a, void *userdata, const void *buf, size_t n) {
        Create *c = userdata;
        int r = bundle_sealer_write(c->sealer, buf, n);

        if (r < 0) {
                c->sink_error = r;
                archive_set_error(a, -r, "writing the bundle failed");
                return -1;
        }
        return (la_ssize_t) n;
}

static int create_fail(Create *c, const char *path) {
        if (c->sink_error < 0)
                return error_set(c->ret_error, c->sink_error, "writing the bundle: %s", strerror(-c->sink_error));
        return error_set(c->ret_error, -EIO, "'%s': %s", path, archive_error_string(c->a) ?: "tar writer failed");
}

static int add_header(Create *c, const char *rel, mode_t type, mode_t perm, int64_t size, const char *target) {
        struct archive_entry *e = archive_entry_new();
        int k;

        if (!e)
                return -ENOMEM;
        archive_entry_set_pathname(e, rel);
        archive_entry_set_filetype(e, type);
        archive_entry_set_perm(e, perm & 0777);
        archive_entry_set_size(e, size);
        if (target)
                archive_entry_set_symlink(e, target);
        k = archive_write_header(c->a, e);
        archive_entry_free(e);
        return k == ARCHIVE_OK ? 0 : create_fail(c, rel);
}

static int add_file(Create *c, int dirfd, const char *name, const char *rel) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        uint64_t left;
        int r;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return error_set(c->ret_error, negative_errno(), "'%s': %m", rel);
        if (!S_ISREG(st.st_mode))
                return error_set(c->ret_error, -ESTALE, "'%s': changed while bundling", rel);
        if ((uint64_t) st.st_size > c->limits->max_bytes - c->bytes)
                return error_set(c->ret_error, -E2BIG, "more than %" PRIu64 " bytes of file contents",
                                 c->limits->max_bytes);
        c->bytes += (uint64_t) st.st_size;
        r = add_header(c, rel, AE_IFREG, st.st_mode, st.st_size, NULL);
        if (r < 0)
                return r;
        for (left = (uint64_t) st.st_size;;) {
                ssize_t n = read(fd, c->buf, CREATE_BUF_SIZE);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return error_set(c->ret_error, negative_errno(), "'%s': %m", rel);
                if (n == 0)
                        break;
                if ((uint64_t) n > left)
                        return error_set(c->ret_error, -ESTALE, "'%s': changed while bundling", rel);
                if (archive_write_data(c->a, c->buf, (size_t) n) != n)
                        return create_fail(c, rel);
                left -= (uint64_t) n;
        }
        /* The header promised st_size bytes: a file that grew or shrank meanwhile is not bundled. */
        if (left != 0 || read(fd, c->buf, 1) != 0)
                return error_set(c->ret_error, -ESTALE, "'%s': changed while bundling", rel);
        return 0;
}

static int add_link(Create *c, int dirfd, const char *name, const char *rel) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(dirfd, name, target, sizeof target);
        int r;

        if (n < 0)
                return error_set(c->ret_error, negative_errno(), "'%s': %m", rel);
        if ((size_t) n >= sizeof target)
                return error_set(c->ret_error, -ENAMETOOLONG, "'%s': symlink target too long", rel);
        target[n] = 0;
        r = bundle_link_target_check(rel, target, c->ret_error);
        if (r < 0)
                return r;
        return add_header(c, rel, AE_IFLNK, 0777, 0, target);
}

static int cmp_names(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

/* The names in dirfd other than "." and "..", sorted bytewise, NULL-terminated. */
static int list_sorted(Create *c, int dirfd, char ***ret) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        size_t n = 0;
        int fd;

        fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return negative_errno();
        }
        for (struct dirent *de; (errno = 0, de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (c->entries + n >= c->limits->max_entries)
                        return error_set(c->ret_error, -E2BIG, "more than %" PRIu64 " entries",
                                         c->limits->max_entries);
                char **l = reallocarray(names, n + 2, sizeof *l);
                if (!l)
                        return -ENOMEM;
                names = l;
                names[n] = strdup(de->d_name);
                names[n + 1] = NULL;
                if (!names[n++])
                        return -ENOMEM;
        }
        if (errno > 0)
                return -errno;
        if (n == 0)
                names = calloc(1, sizeof *names); /* an empty directory: an empty list, not NULL */
        else
                qsort(names, n, sizeof *names, cmp_names);
        if (!names)
                return -ENOMEM;
        *ret = TAKE_PTR(names);
        return 0;
}

static int add_dir(Create *c, int dirfd, const char *rel, unsigned depth);

static int add_entry(Create *c, int dirfd, const char *name, const char *rel, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        c->entries++;
        if (strlen(rel) > c->limits->max_path)
                return error_set(c->ret_error, -E2BIG, "'%s': path longer than %zu", rel, c->limits->max_path);
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return error_set(c->ret_error, negative_errno(), "'%s': %m", rel);
        switch (st.st_mode & S_IFMT) {
        case S_IFREG:
                return add_file(c, dirfd, name, rel);
        case S_IFLNK:
                return add_link(c, dirfd, name, rel);
        case S_IFDIR:
                if (depth >= TREE_MAX_DEPTH)
                        return error_set(c->ret_error, -E2BIG, "'%s': deeper than %u", rel, TREE_MAX_DEPTH);
                r = add_header(c, rel, AE_IFDIR, st.st_mode, 0, NULL);
                if (r < 0)
                        return r;
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return error_set(c->ret_error, negative_errno(), "'%s': %m", rel);
                return add_dir(c, fd, rel, depth + 1);
        default:
                return error_set(c->ret_error, -EBADMSG, "'%s': not a regular file, directory or symlink", rel);
        }
}

static int add_dir(Create *c, int dirfd, const char *rel, unsigned depth) {
        _cleanup_strv_free_ char **names = NULL;
        int r;

        r = list_sorted(c, dirfd, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *child = NULL;

                if (asprintf(&child, "%s%s%s", rel, rel[0] ? "/" : "", *n) < 0)
                        return -ENOMEM;
                r = add_entry(c, dirfd, *n, child, depth);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int create_open(Create *c) {
        c->a = archive_write_new();
        c->buf = malloc(CREATE_BUF_SIZE);
        if (!c->a || !c->buf)
                return -ENOMEM;
        /* Names as raw bytes (hdrcharset=BINARY): no locale conversion on either side. The last block is
         * not padded to 10 KiB: there is no tape. */
        if (archive_write_set_format_pax_restricted(c->a) != ARCHIVE_OK ||
            archive_write_set_format_option(c->a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(c->a, 1) != ARCHIVE_OK ||
            archive_write_open(c->a, c, NULL, sink_write, NULL) != ARCHIVE_OK)
                return create_fail(c, "(start)");
        return 0;
}

int bundle_create(const char *dir, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id,
                  int out_fd, const BundleLimits *limits, char ret_sha[SHA256_HEX_SIZE], char **ret_error) {
        static const BundleLimits defaults = BUNDLE_LIMITS_DEFAULT;
        _cleanup_(create_done) Create c = { .limits = limits ?: &defaults, .ret_error = ret_error };
        _cleanup_close_ int root = -EBADF;
        char sha[SHA256_HEX_SIZE];
        int r;

        if (!job_id || !job_id_is_valid(job_id))
                return error_set(ret_error, -EINVAL, "job id '%s': not a valid job id", job_id ?: "");
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return error_set(ret_error, negative_errno(), "'%s': %m", dir);
        r = bundle_sealer_new(out_fd, worker_pk, job_id, &c.sealer);
        if (r < 0)
                return error_set(ret_error, r, "writing the bundle header: %s", strerror(-r));
        r = create_open(&c);
        if (r >= 0)
                r = add_dir(&c, root, "", 0);
        if (r < 0)
                return r;
        if (archive_write_close(c.a) != ARCHIVE_OK)
                return create_fail(&c, "(end)");
        r = bundle_sealer_finish(c.sealer, sha);
        if (r < 0)
                return error_set(ret_error, r, "writing the bundle: %s", strerror(-r));
        memcpy(ret_sha, sha, SHA256_HEX_SIZE);
        return 0;
}
