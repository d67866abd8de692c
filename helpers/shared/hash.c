/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hash.c: SHA-256 over bytes and fds, hex, the canonical checkout tree digest and input_sha. The record format
 * hashed here is specified in docs/result-format.md: any change to it is a format version bump. */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fileio.h"
#include "hash.h"
#include "macro.h"

void hex_encode(const uint8_t *p, size_t n, char *ret) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                ret[2 * i] = digits[p[i] >> 4];
                ret[2 * i + 1] = digits[p[i] & 15];
        }
        ret[2 * n] = 0;
}

void sha256_hex(const void *p, size_t n, char ret_hex[SHA256_HEX_SIZE]) {
        uint8_t d[SHA256_SIZE];

        crypto_hash_sha256(d, p, n);
        hex_encode(d, sizeof d, ret_hex);
}

int hash_fd(int fd, int copy_fd, uint64_t max_bytes, uint8_t ret_digest[SHA256_SIZE], uint64_t *ret_size) {
        crypto_hash_sha256_state st;
        uint8_t buf[64 * 1024];
        uint64_t total = 0;
        int r;

        crypto_hash_sha256_init(&st);
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno(); /* EAGAIN included: a fifo without data is not waited for */
                }
                if (n == 0)
                        break;
                if ((uint64_t) n > max_bytes - total)
                        return -EFBIG;
                total += (uint64_t) n;
                crypto_hash_sha256_update(&st, buf, (size_t) n);
                if (copy_fd >= 0) {
                        r = write_all(copy_fd, buf, (size_t) n);
                        if (r < 0)
                                return r;
                }
        }
        crypto_hash_sha256_final(&st, ret_digest);
        if (ret_size)
                *ret_size = total;
        return 0;
}

/* One entry of the checkout: kept until the whole tree is read, since the digest is over records sorted by
 * full path, which is not the order of a depth-first walk ("a/b" sorts after "a-b"). */
typedef struct TreeRecord {
        char *path;
        char type; /* f x l d p s c b */
        uint64_t size;
        uint8_t digest[SHA256_SIZE];
        char *target;
} TreeRecord;

typedef struct TreeWalk {
        TreeRecord *records;
        size_t n, allocated;
} TreeWalk;

static void tree_walk_done(TreeWalk *w) {
        for (size_t i = 0; i < w->n; i++) {
                free(w->records[i].path);
                free(w->records[i].target);
        }
        free(w->records);
}

static TreeRecord *tree_walk_add(TreeWalk *w, const char *prefix, const char *name, char type) {
        if (w->n >= TREE_MAX_ENTRIES)
                return NULL;
        if (w->n == w->allocated) {
                size_t a = w->allocated ? w->allocated * 2 : 64;
                TreeRecord *p = reallocarray(w->records, a, sizeof *p);
                if (!p)
                        return NULL;
                w->records = p;
                w->allocated = a;
        }
        TreeRecord *rec = &w->records[w->n];
        *rec = (TreeRecord) { .type = type };
        if (asprintf(&rec->path, "%s%s%s", prefix ?: "", prefix ? "/" : "", name) < 0)
                return NULL;
        w->n++;
        return rec;
}

static char tree_type_of(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFREG:
                return (mode & 0111) ? 'x' : 'f';
        case S_IFLNK:
                return 'l';
        case S_IFDIR:
                return 'd';
        case S_IFIFO:
                return 'p';
        case S_IFSOCK:
                return 's';
        case S_IFCHR:
                return 'c';
        default:
                return 'b';
        }
}

static int tree_hash_file(int dirfd, const char *name, TreeRecord *rec) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = openat_beneath(dirfd, name, O_RDONLY, 0);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode)) /* swapped under us between fstatat() and open: the tree is not stable */
                return -ESTALE;
        return hash_fd(fd, -EBADF, UINT64_MAX, rec->digest, &rec->size);
}

static int tree_read_link(int dirfd, const char *name, TreeRecord *rec) {
        int r = readlinkat_malloc(dirfd, name, &rec->target);

        if (r < 0)
                return r;
        rec->size = strlen(rec->target);
        return 0;
}

static int tree_walk_dir(TreeWalk *w, int dirfd, const char *prefix, unsigned depth);

static int tree_walk_entry(TreeWalk *w, int dirfd, const char *prefix, const char *name, unsigned depth) {
        _cleanup_close_ int subfd = -EBADF;
        struct stat st;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();

        TreeRecord *rec = tree_walk_add(w, prefix, name, tree_type_of(st.st_mode));
        if (!rec)
                return w->n >= TREE_MAX_ENTRIES ? -E2BIG : -ENOMEM;

        switch (rec->type) {
        case 'f':
        case 'x':
                return tree_hash_file(dirfd, name, rec);
        case 'l':
                return tree_read_link(dirfd, name, rec);
        case 'd':
                if (depth >= TREE_MAX_DEPTH)
                        return -ELOOP;
                subfd = openat_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
                if (subfd < 0)
                        return subfd;
                return tree_walk_dir(w, subfd, rec->path, depth + 1);
        default:
                return 0; /* fifo, socket, device: the type only, never opened */
        }
}

static int tree_walk_dir(TreeWalk *w, int dirfd, const char *prefix, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *pfx = prefix ? strdup(prefix) : NULL; /* w->records may move under us */
        int r;

        if (prefix && !pfx)
                return -ENOMEM;
        r = opendir_fd(dirfd, &d);
        if (r < 0)
                return r;
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de)
                        return errno > 0 ? -errno : 0;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                r = tree_walk_entry(w, dirfd, pfx, de->d_name, depth);
                if (r < 0)
                        return r;
        }
}

static int tree_record_cmp(const void *a, const void *b) {
        /* strcmp() compares as unsigned char: the bytewise order the format promises. */
        return strcmp(((const TreeRecord *) a)->path, ((const TreeRecord *) b)->path);
}

static void tree_hash_record(crypto_hash_sha256_state *st, const TreeRecord *rec) {
        char head[64], hex[SHA256_HEX_SIZE];
        size_t plen = strlen(rec->path);

        snprintf(head, sizeof head, "%c %zu:", rec->type, plen);
        crypto_hash_sha256_update(st, (const uint8_t *) head, strlen(head));
        crypto_hash_sha256_update(st, (const uint8_t *) rec->path, plen);
        snprintf(head, sizeof head, " %" PRIu64 " ", rec->size);
        crypto_hash_sha256_update(st, (const uint8_t *) head, strlen(head));
        if (rec->type == 'f' || rec->type == 'x') {
                hex_encode(rec->digest, SHA256_SIZE, hex);
                crypto_hash_sha256_update(st, (const uint8_t *) hex, 2 * SHA256_SIZE);
        } else if (rec->type == 'l') {
                snprintf(head, sizeof head, "%zu:", strlen(rec->target));
                crypto_hash_sha256_update(st, (const uint8_t *) head, strlen(head));
                crypto_hash_sha256_update(st, (const uint8_t *) rec->target, strlen(rec->target));
        } else
                crypto_hash_sha256_update(st, (const uint8_t *) "-", 1);
        crypto_hash_sha256_update(st, (const uint8_t *) "\n", 1);
}

int tree_digest(int dirfd, uint8_t ret_digest[SHA256_SIZE]) {
        _cleanup_(tree_walk_done) TreeWalk w = {};
        crypto_hash_sha256_state st;
        int r;

        r = tree_walk_dir(&w, dirfd, NULL, 0);
        if (r < 0)
                return r;
        if (w.n > 0)
                qsort(w.records, w.n, sizeof *w.records, tree_record_cmp);

        crypto_hash_sha256_init(&st);
        for (size_t i = 0; i < w.n; i++)
                tree_hash_record(&st, &w.records[i]);
        crypto_hash_sha256_final(&st, ret_digest);
        return 0;
}

int input_sha_compute(const void *spec, size_t spec_len, int checkout_dirfd, char ret_hex[SHA256_HEX_SIZE]) {
        uint8_t spec_digest[SHA256_SIZE], tree[SHA256_SIZE], d[SHA256_SIZE];
        crypto_hash_sha256_state st;
        int r;

        if (!spec && spec_len > 0)
                return -EINVAL;
        crypto_hash_sha256(spec_digest, spec ?: (const void *) "", spec_len);
        if (checkout_dirfd >= 0) {
                r = tree_digest(checkout_dirfd, tree);
                if (r < 0)
                        return r;
        } else
                crypto_hash_sha256(tree, (const uint8_t *) "", 0);

        crypto_hash_sha256_init(&st);
        crypto_hash_sha256_update(&st, (const uint8_t *) INPUT_SHA_DOMAIN, strlen(INPUT_SHA_DOMAIN));
        crypto_hash_sha256_update(&st, spec_digest, sizeof spec_digest);
        crypto_hash_sha256_update(&st, tree, sizeof tree);
        crypto_hash_sha256_final(&st, d);
        hex_encode(d, sizeof d, ret_hex);
        return 0;
}
