/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* digest-cache.c: owns the on-disk cache of file digests: its format (a header with a checksum over sorted
 * fixed-size entries), loading it without trusting it, lookups from many hashing threads, and the locked
 * merge-and-replace that lets concurrent jobs share it. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "hash/digest-cache.h"

#define DIGEST_CACHE_MAGIC "PONDDC\0\1"
/* A hit refreshes an entry's age on disk only when it is older than this: an unchanged checkout then costs
 * no write at all. */
#define DIGEST_CACHE_TOUCH_SEC (3600U)

typedef struct CacheHeader {
        char magic[8];
        uint32_t entry_size;
        uint32_t reserved;
        uint64_t n;
        uint8_t body_sha256[SHA256_SIZE];
} CacheHeader;

typedef struct CacheEntry {
        uint64_t dev, ino, size;
        int64_t mtime_ns, ctime_ns;
        uint32_t mode, reserved;
        uint64_t last_used; /* seconds since the epoch */
        uint8_t digest[SHA256_SIZE];
} CacheEntry;

_Static_assert(sizeof(CacheEntry) == 88, "the on-disk entry is 88 bytes");
_Static_assert(sizeof(CacheHeader) == 56, "the on-disk header is 56 bytes");

struct DigestCache {
        CacheEntry *entries; /* as loaded, sorted by (dev, ino); read-only while threads hash */
        uint8_t *hit;        /* per loaded entry: looked up and found (set by many threads, same value) */
        size_t n;
        pthread_mutex_t lock; /* guards added */
        CacheEntry *added;
        size_t n_added, allocated;
};

static int64_t ts_ns(const struct timespec *ts) {
        return (int64_t) ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static CacheEntry entry_of(const struct stat *st) {
        return (CacheEntry) {
                .dev = st->st_dev,
                .ino = st->st_ino,
                .size = (uint64_t) st->st_size,
                .mtime_ns = ts_ns(&st->st_mtim),
                .ctime_ns = ts_ns(&st->st_ctim),
                .mode = st->st_mode,
        };
}

static int entry_cmp(const void *a, const void *b) {
        const CacheEntry *x = a, *y = b;

        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        if (x->ino != y->ino)
                return x->ino < y->ino ? -1 : 1;
        return 0;
}

static bool entry_same_file_state(const CacheEntry *a, const CacheEntry *b) {
        return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
               a->ctime_ns == b->ctime_ns && a->mode == b->mode;
}

static uint64_t now_sec(void) {
        return (uint64_t) time(NULL);
}

/* The entries of the file at fd, or -EBADMSG for anything not exactly what digest_cache_save() writes. */
static int read_entries(int fd, CacheEntry **ret, size_t *ret_n) {
        _cleanup_free_ CacheEntry *entries = NULL;
        uint8_t digest[SHA256_SIZE];
        CacheHeader h;
        struct stat st;
        ssize_t k;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        /* Written only by pond: anything another user could have written is not a cache but an input. */
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022))
                return -EPERM;
        k = loop_read(fd, &h, sizeof h);
        if (k < 0)
                return (int) k;
        if ((size_t) k != sizeof h || memcmp(h.magic, DIGEST_CACHE_MAGIC, sizeof h.magic) != 0 ||
            h.entry_size != sizeof(CacheEntry) || h.n > DIGEST_CACHE_MAX_ENTRIES ||
            (uint64_t) st.st_size != sizeof h + h.n * sizeof(CacheEntry))
                return -EBADMSG;
        if (h.n > 0) {
                entries = malloc(h.n * sizeof(CacheEntry));
                if (!entries)
                        return -ENOMEM;
                k = loop_read(fd, entries, h.n * sizeof(CacheEntry));
                if (k < 0)
                        return (int) k;
                if ((size_t) k != h.n * sizeof(CacheEntry))
                        return -EBADMSG;
        }
        sha256_bytes(entries, h.n * sizeof(CacheEntry), digest);
        if (memcmp(digest, h.body_sha256, sizeof digest) != 0)
                return -EBADMSG;
        for (size_t i = 1; i < h.n; i++)
                if (entry_cmp(&entries[i - 1], &entries[i]) >= 0)
                        return -EBADMSG;
        *ret = TAKE_PTR(entries);
        *ret_n = h.n;
        return 0;
}

/* Reads path into *ret; a missing file is empty, anything unusable is empty and *ret_discarded. */
static int load_entries(const char *path, CacheEntry **ret, size_t *ret_n, bool *ret_discarded) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int r;

        *ret = NULL;
        *ret_n = 0;
        *ret_discarded = false;
        if (fd < 0) {
                *ret_discarded = errno != ENOENT;
                return 0;
        }
        r = read_entries(fd, ret, ret_n);
        if (r == -ENOMEM)
                return r;
        *ret_discarded = r < 0;
        return 0;
}

int digest_cache_load(const char *path, DigestCache **ret, bool *ret_discarded) {
        _cleanup_(digest_cache_freep) DigestCache *c = calloc(1, sizeof *c);
        bool discarded;
        int r;

        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        r = load_entries(path, &c->entries, &c->n, &discarded);
        if (r < 0)
                return r;
        c->hit = calloc(c->n ?: 1, 1);
        if (!c->hit)
                return -ENOMEM;
        if (ret_discarded)
                *ret_discarded = discarded;
        *ret = TAKE_PTR(c);
        return 0;
}

DigestCache *digest_cache_free(DigestCache *c) {
        if (!c)
                return NULL;
        pthread_mutex_destroy(&c->lock);
        free(c->entries);
        free(c->hit);
        free(c->added);
        free(c);
        return NULL;
}

size_t digest_cache_size(const DigestCache *c) {
        return c ? c->n : 0;
}

bool digest_cache_lookup(DigestCache *c, const struct stat *st, uint8_t ret_digest[SHA256_SIZE]) {
        CacheEntry key = entry_of(st);
        const CacheEntry *e;

        if (!c || c->n == 0)
                return false;
        e = bsearch(&key, c->entries, c->n, sizeof *c->entries, entry_cmp);
        if (!e || !entry_same_file_state(e, &key))
                return false;
        memcpy(ret_digest, e->digest, SHA256_SIZE);
        __atomic_store_n(&c->hit[e - c->entries], 1, __ATOMIC_RELAXED);
        return true;
}

int digest_cache_add(DigestCache *c, const struct stat *st, const uint8_t digest[SHA256_SIZE], uint64_t now_ns) {
        CacheEntry e = entry_of(st);
        int r = 0;

        if (!c)
                return 0;
        /* Racy: a write within the same tick after hashing would leave every key field as it is now. */
        if ((uint64_t) MAX(e.mtime_ns, e.ctime_ns) + DIGEST_CACHE_RACY_NSEC > now_ns)
                return 0;
        e.last_used = now_sec();
        memcpy(e.digest, digest, SHA256_SIZE);
        pthread_mutex_lock(&c->lock);
        if (c->n_added >= DIGEST_CACHE_MAX_ENTRIES)
                goto unlock; /* more than can be kept: the rest stays uncached */
        if (c->n_added == c->allocated) {
                size_t a = c->allocated ? c->allocated * 2 : 256;
                CacheEntry *p = reallocarray(c->added, a, sizeof *p);
                if (!p) {
                        r = -ENOMEM;
                        goto unlock;
                }
                c->added = p;
                c->allocated = a;
        }
        c->added[c->n_added++] = e;
unlock:
        pthread_mutex_unlock(&c->lock);
        return r;
}

static int last_used_newest_first(const void *a, const void *b) {
        const CacheEntry *x = a, *y = b;

        if (x->last_used != y->last_used)
                return x->last_used > y->last_used ? -1 : 1;
        return entry_cmp(a, b);
}

/* Sorts and deduplicates by (dev, ino), the later of two equal keys winning. */
static size_t sort_unique(CacheEntry *v, size_t n) {
        size_t out = 0;

        /* Stable order among equal keys is not needed: equal keys added by one run describe one file,
         * and the last one hashed is as good as any. */
        qsort(v, n, sizeof *v, entry_cmp);
        for (size_t i = 0; i < n; i++) {
                if (out > 0 && entry_cmp(&v[out - 1], &v[i]) == 0)
                        v[out - 1] = v[i];
                else
                        v[out++] = v[i];
        }
        return out;
}

/* What this process learnt, merged into disk (both sorted and unique): added entries replace equal keys,
 * hit entries get their age refreshed. Returns the number of entries in *ret. */
static int merge(DigestCache *c, const CacheEntry *disk, size_t n_disk, CacheEntry **ret, size_t *ret_n) {
        _cleanup_free_ CacheEntry *out = NULL;
        size_t i = 0, j = 0, n = 0, n_added = sort_unique(c->added, c->n_added);
        uint64_t now = now_sec();

        out = malloc((n_disk + n_added + 1) * sizeof *out);
        if (!out)
                return -ENOMEM;
        while (i < n_disk || j < n_added) {
                int d = i >= n_disk ? 1 : j >= n_added ? -1 : entry_cmp(&disk[i], &c->added[j]);
                if (d < 0) {
                        CacheEntry e = disk[i++];
                        const CacheEntry *mine = c->n ? bsearch(&e, c->entries, c->n, sizeof e, entry_cmp) : NULL;
                        if (mine && c->hit[mine - c->entries] && entry_same_file_state(mine, &e))
                                e.last_used = now;
                        out[n++] = e;
                } else {
                        out[n++] = c->added[j++];
                        i += d == 0;
                }
        }
        if (n > DIGEST_CACHE_MAX_ENTRIES) {
                qsort(out, n, sizeof *out, last_used_newest_first);
                n = DIGEST_CACHE_MAX_ENTRIES;
                qsort(out, n, sizeof *out, entry_cmp);
        }
        *ret = TAKE_PTR(out);
        *ret_n = n;
        return 0;
}

static bool has_news(DigestCache *c) {
        uint64_t now = now_sec();

        if (c->n_added > 0)
                return true;
        for (size_t i = 0; i < c->n; i++)
                if (c->hit[i] && c->entries[i].last_used + DIGEST_CACHE_TOUCH_SEC < now)
                        return true;
        return false;
}

static int write_entries(const char *path, const CacheEntry *v, size_t n) {
        _cleanup_free_ char *tmp = strdupf("%s.XXXXXX", path);
        _cleanup_close_ int fd = -EBADF;
        CacheHeader h = { .entry_size = sizeof(CacheEntry), .n = n };
        int r;

        if (!tmp)
                return -ENOMEM;
        memcpy(h.magic, DIGEST_CACHE_MAGIC, sizeof h.magic);
        sha256_bytes(v, n * sizeof *v, h.body_sha256);
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        /* No fsync: a file torn by a crash fails its checksum and is discarded, which costs only time. */
        r = write_all(fd, &h, sizeof h);
        if (r >= 0 && n > 0)
                r = write_all(fd, v, n * sizeof *v);
        if (r >= 0)
                r = RET_NERRNO(fchmod(fd, 0600));
        if (r >= 0)
                r = RET_NERRNO(rename(tmp, path));
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

int digest_cache_save(DigestCache *c, const char *path) {
        _cleanup_free_ CacheEntry *disk = NULL, *merged = NULL;
        _cleanup_free_ char *lock_path = strdupf("%s.lock", path);
        _cleanup_close_ int lock_fd = -EBADF;
        size_t n_disk, n_merged;
        bool discarded;
        int r;

        if (!c || !has_news(c))
                return 0;
        if (!lock_path)
                return -ENOMEM;
        lock_fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (lock_fd < 0)
                return negative_errno();
        if (flock(lock_fd, LOCK_EX) < 0)
                return negative_errno();
        /* Another job may have saved since this one loaded: merge into what is there now. */
        r = load_entries(path, &disk, &n_disk, &discarded);
        if (r < 0)
                return r;
        r = merge(c, disk, n_disk, &merged, &n_merged);
        if (r < 0)
                return r;
        return write_entries(path, merged, n_merged);
}
