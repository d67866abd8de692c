/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hash.c: SHA-256 over bytes and fds, hex, the canonical checkout tree digest and input_sha. The record format
 * hashed here is specified in docs/result-format.md: any change to it is a format version bump.
 * SHA-256 is OpenSSL's libcrypto: it uses the CPU's SHA extensions (1.7 GB/s per core here, against
 * 270 MB/s for libsodium's portable code; docs/benchmarks.md). */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "hash/digest-cache.h"
#include "hash/hash.h"

/* Files are hashed by up to this many threads once the walk has listed them. */
#define TREE_HASH_THREADS_MAX 4U
/* Fewer files than this are not worth a thread. */
#define TREE_HASH_THREAD_MIN_FILES 64U
/* Paths longer than this are hashed during the walk from their parent directory, since openat2() from the
 * root would refuse them. */
#define TREE_DEFERRED_PATH_MAX (PATH_MAX - 1)

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* Fetched once: OpenSSL 3's implicit fetch in every EVP_DigestInit takes a global lock. */
static void sha256_fetch(void) {
        sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

typedef EVP_MD_CTX *Sha256Ctx;
static void sha256_ctx_freep(Sha256Ctx *c) {
        EVP_MD_CTX_free(*c);
}

static int sha256_begin(Sha256Ctx *ret) {
        EVP_MD_CTX *c;

        (void) pthread_once(&sha256_once, sha256_fetch);
        if (!sha256_md)
                return -EOPNOTSUPP;
        c = EVP_MD_CTX_new();
        if (!c)
                return -ENOMEM;
        if (EVP_DigestInit_ex2(c, sha256_md, NULL) != 1) {
                EVP_MD_CTX_free(c);
                return -EIO;
        }
        *ret = c;
        return 0;
}

static void sha256_update(Sha256Ctx c, const void *p, size_t n) {
        if (n > 0)
                (void) EVP_DigestUpdate(c, p, n);
}

static void sha256_end(Sha256Ctx c, uint8_t ret[SHA256_SIZE]) {
        unsigned len = SHA256_SIZE;

        (void) EVP_DigestFinal_ex(c, ret, &len);
}

/* The public streaming form: a Sha256 is an EVP_MD_CTX. */
int sha256_new(Sha256 **ret) {
        Sha256Ctx c = NULL;
        int r = sha256_begin(&c);

        if (r < 0)
                return r;
        *ret = (Sha256 *) c;
        return 0;
}

void sha256_feed(Sha256 *s, const void *p, size_t n) {
        sha256_update((Sha256Ctx) s, p, n);
}

int sha256_digest(const Sha256 *s, uint8_t ret[SHA256_SIZE]) {
        _cleanup_(sha256_ctx_freep) Sha256Ctx copy = EVP_MD_CTX_new();

        if (!copy)
                return -ENOMEM;
        if (EVP_MD_CTX_copy_ex(copy, (const EVP_MD_CTX *) s) != 1)
                return -EIO;
        sha256_end(copy, ret);
        return 0;
}

int sha256_digest_hex(const Sha256 *s, char ret_hex[SHA256_HEX_SIZE]) {
        uint8_t d[SHA256_SIZE];
        int r = sha256_digest(s, d);

        if (r < 0)
                return r;
        hex_encode(d, sizeof d, ret_hex);
        return 0;
}

Sha256 *sha256_free(Sha256 *s) {
        EVP_MD_CTX_free((EVP_MD_CTX *) s);
        return NULL;
}

void sha256_bytes(const void *p, size_t n, uint8_t ret[SHA256_SIZE]) {
        unsigned len = SHA256_SIZE;

        (void) pthread_once(&sha256_once, sha256_fetch);
        /* Without a SHA-256 provider nothing in pond can work: fail loudly rather than hand out zeros. */
        if (!sha256_md || EVP_Digest(p, n, ret, &len, sha256_md, NULL) != 1)
                abort();
}

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

        sha256_bytes(p, n, d);
        hex_encode(d, sizeof d, ret_hex);
}

int hash_fd(int fd, int copy_fd, uint64_t max_bytes, uint8_t ret_digest[SHA256_SIZE], uint64_t *ret_size) {
        _cleanup_(sha256_ctx_freep) Sha256Ctx st = NULL;
        uint8_t buf[128 * 1024];
        uint64_t total = 0;
        int r;

        r = sha256_begin(&st);
        if (r < 0)
                return r;
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
                sha256_update(st, buf, (size_t) n);
                if (copy_fd >= 0) {
                        r = write_all(copy_fd, buf, (size_t) n);
                        if (r < 0)
                                return r;
                }
        }
        sha256_end(st, ret_digest);
        if (ret_size)
                *ret_size = total;
        return 0;
}

/* One entry of the checkout: kept until the whole tree is read, since the digest is over records sorted by
 * full path, which is not the order of a depth-first walk ("a/b" sorts after "a-b"). Regular files are
 * listed by the walk and hashed afterwards by several threads; dev and ino say which file the walk saw. */
typedef struct TreeRecord {
        char *path;
        char type; /* f x l d p s c b */
        bool hashed;
        uint64_t size;
        dev_t dev;
        ino_t ino;
        uint8_t digest[SHA256_SIZE];
        char *target;
} TreeRecord;

typedef struct TreeWalk {
        TreeRecord *records;
        size_t n, allocated, n_files;
        DigestCache *cache;
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

static uint64_t realtime_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static bool same_file_state(const struct stat *a, const struct stat *b) {
        return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
               a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
               a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Hashes the file at path below dirfd, which must still be the file the walk saw: a swap under us means
 * the tree is not stable. Called only for files the cache did not answer at the walk's fstatat(); the
 * cache learns the digest of one that did not change while it was read. */
static int tree_hash_file(int dirfd, const char *path, TreeRecord *rec, DigestCache *cache) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st, after;
        int r;

        fd = openat_beneath(dirfd, path, O_RDONLY, 0);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_dev != rec->dev || st.st_ino != rec->ino)
                return -ESTALE;
        r = hash_fd(fd, -EBADF, UINT64_MAX, rec->digest, &rec->size);
        if (r < 0)
                return r;
        rec->hashed = true;
        if (cache && fstat(fd, &after) >= 0 && same_file_state(&st, &after) && rec->size == (uint64_t) st.st_size)
                return digest_cache_add(cache, &st, rec->digest, realtime_ns());
        return 0;
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
                rec->dev = st.st_dev;
                rec->ino = st.st_ino;
                /* Unchanged since it was hashed: not even opened (what git's index does with a stat). */
                if (digest_cache_lookup(w->cache, &st, rec->digest)) {
                        rec->size = (uint64_t) st.st_size;
                        rec->hashed = true;
                        return 0;
                }
                if (strlen(rec->path) > TREE_DEFERRED_PATH_MAX)
                        return tree_hash_file(dirfd, name, rec, w->cache);
                w->n_files++;
                return 0; /* hashed by tree_hash_files() */
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

/* The files the walk listed, shared by the hashing threads: each takes the next index. */
typedef struct TreeHashPool {
        TreeWalk *walk;
        int rootfd;
        atomic_size_t next;
        atomic_int error;
} TreeHashPool;

static void *tree_hash_worker(void *p) {
        TreeHashPool *pool = p;

        for (;;) {
                size_t i = atomic_fetch_add(&pool->next, 1);
                if (i >= pool->walk->n || atomic_load(&pool->error) < 0)
                        return NULL;
                TreeRecord *rec = &pool->walk->records[i];
                if ((rec->type != 'f' && rec->type != 'x') || rec->hashed)
                        continue;
                int r = tree_hash_file(pool->rootfd, rec->path, rec, pool->walk->cache);
                if (r < 0) {
                        int expected = 0;
                        (void) atomic_compare_exchange_strong(&pool->error, &expected, r);
                        return NULL;
                }
        }
}

static unsigned tree_hash_threads(size_t n_files) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);

        if (n_files < TREE_HASH_THREAD_MIN_FILES || cpus <= 1)
                return 1;
        return (unsigned) MIN((unsigned long) cpus, (unsigned long) TREE_HASH_THREADS_MAX);
}

/* Hashes every listed file, in this thread and up to TREE_HASH_THREADS_MAX - 1 more; a thread that cannot be
 * started only means fewer. */
static int tree_hash_files(TreeWalk *w, int rootfd) {
        TreeHashPool pool = { .walk = w, .rootfd = rootfd };
        pthread_t threads[TREE_HASH_THREADS_MAX];
        unsigned n_threads = 0, want = tree_hash_threads(w->n_files);

        atomic_init(&pool.next, 0);
        atomic_init(&pool.error, 0);
        for (unsigned i = 1; i < want; i++)
                if (pthread_create(&threads[n_threads], NULL, tree_hash_worker, &pool) == 0)
                        n_threads++;
        (void) tree_hash_worker(&pool);
        for (unsigned i = 0; i < n_threads; i++)
                (void) pthread_join(threads[i], NULL);
        return atomic_load(&pool.error);
}

static int tree_record_cmp(const void *a, const void *b) {
        /* strcmp() compares as unsigned char: the bytewise order the format promises. */
        return strcmp(((const TreeRecord *) a)->path, ((const TreeRecord *) b)->path);
}

/* Records are many and small: they are gathered into one buffer so the hash sees few large updates. */
typedef struct RecordSink {
        Sha256Ctx st;
        size_t n;
        char buf[64 * 1024];
} RecordSink;

static void sink_put(RecordSink *s, const void *p, size_t n) {
        if (n > sizeof s->buf - s->n) {
                sha256_update(s->st, s->buf, s->n);
                s->n = 0;
                if (n > sizeof s->buf) {
                        sha256_update(s->st, p, n);
                        return;
                }
        }
        memcpy(s->buf + s->n, p, n);
        s->n += n;
}

static void tree_hash_record(RecordSink *s, const TreeRecord *rec) {
        char head[64], hex[SHA256_HEX_SIZE];
        size_t plen = strlen(rec->path);

        snprintf(head, sizeof head, "%c %zu:", rec->type, plen);
        sink_put(s, head, strlen(head));
        sink_put(s, rec->path, plen);
        snprintf(head, sizeof head, " %" PRIu64 " ", rec->size);
        sink_put(s, head, strlen(head));
        if (rec->type == 'f' || rec->type == 'x') {
                hex_encode(rec->digest, SHA256_SIZE, hex);
                sink_put(s, hex, 2 * SHA256_SIZE);
        } else if (rec->type == 'l') {
                snprintf(head, sizeof head, "%zu:", strlen(rec->target));
                sink_put(s, head, strlen(head));
                sink_put(s, rec->target, strlen(rec->target));
        } else
                sink_put(s, "-", 1);
        sink_put(s, "\n", 1);
}

int tree_digest_cached(int dirfd, DigestCache *cache, uint8_t ret_digest[SHA256_SIZE]) {
        _cleanup_(tree_walk_done) TreeWalk w = { .cache = cache };
        _cleanup_(sha256_ctx_freep) Sha256Ctx st = NULL;
        _cleanup_free_ RecordSink *sink = NULL;
        int r;

        r = tree_walk_dir(&w, dirfd, NULL, 0);
        if (r < 0)
                return r;
        r = tree_hash_files(&w, dirfd);
        if (r < 0)
                return r;
        if (w.n > 0)
                qsort(w.records, w.n, sizeof *w.records, tree_record_cmp);

        r = sha256_begin(&st);
        if (r < 0)
                return r;
        sink = malloc(sizeof *sink);
        if (!sink)
                return -ENOMEM;
        sink->st = st;
        sink->n = 0;
        for (size_t i = 0; i < w.n; i++)
                tree_hash_record(sink, &w.records[i]);
        sha256_update(st, sink->buf, sink->n);
        sha256_end(st, ret_digest);
        return 0;
}

static bool changed_since(const struct stat *st, const struct timespec *since) {
        if (st->st_ctim.tv_sec != since->tv_sec)
                return st->st_ctim.tv_sec > since->tv_sec;
        /* The same second: at or after since, or stamped by a file system with whole seconds only. */
        return st->st_ctim.tv_nsec >= since->tv_nsec || st->st_ctim.tv_nsec == 0;
}

typedef struct ChangeWalk {
        const struct timespec *since;
        size_t n;
        bool changed;
} ChangeWalk;

static int change_walk_dir(ChangeWalk *w, int dirfd, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        r = opendir_fd(dirfd, &d);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_close_ int subfd = -EBADF;
                struct stat st;

                errno = 0;
                struct dirent *de = readdir(d);
                if (!de)
                        return errno > 0 ? -errno : 0;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (++w->n > TREE_MAX_ENTRIES)
                        return -E2BIG;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT) {  /* listed, then gone: removed under us */
                                w->changed = true;
                                return 0;
                        }
                        return negative_errno();
                }
                if (changed_since(&st, w->since)) {
                        w->changed = true;
                        return 0;
                }
                if (!S_ISDIR(st.st_mode))
                        continue;
                if (depth >= TREE_MAX_DEPTH)
                        return -ELOOP;
                subfd = openat_beneath(dirfd, de->d_name, O_RDONLY | O_DIRECTORY, 0);
                if (subfd == -ENOENT || subfd == -ENOTDIR) {
                        w->changed = true;
                        return 0;
                }
                if (subfd < 0)
                        return subfd;
                r = change_walk_dir(w, subfd, depth + 1);
                if (r < 0 || w->changed)
                        return r;
        }
}

int tree_changed_since(int dirfd, const struct timespec *since, bool *ret_changed) {
        ChangeWalk w = { .since = since };
        struct stat st;
        int r;

        if (fstat(dirfd, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (changed_since(&st, since))
                w.changed = true;
        else {
                r = change_walk_dir(&w, dirfd, 0);
                if (r < 0)
                        return r;
        }
        *ret_changed = w.changed;
        return 0;
}

int tree_digest(int dirfd, uint8_t ret_digest[SHA256_SIZE]) {
        return tree_digest_cached(dirfd, NULL, ret_digest);
}

int input_sha_compute_cached(const void *spec, size_t spec_len, int checkout_dirfd, DigestCache *cache,
                             char ret_hex[SHA256_HEX_SIZE], uint8_t ret_tree[SHA256_SIZE]) {
        uint8_t spec_digest[SHA256_SIZE], tree[SHA256_SIZE], d[SHA256_SIZE];
        uint8_t buf[sizeof INPUT_SHA_DOMAIN - 1 + 2 * SHA256_SIZE];
        int r;

        if (!spec && spec_len > 0)
                return -EINVAL;
        sha256_bytes(spec ?: (const void *) "", spec_len, spec_digest);
        if (checkout_dirfd >= 0) {
                r = tree_digest_cached(checkout_dirfd, cache, tree);
                if (r < 0)
                        return r;
        } else
                sha256_bytes("", 0, tree);

        memcpy(buf, INPUT_SHA_DOMAIN, sizeof INPUT_SHA_DOMAIN - 1);
        memcpy(buf + sizeof INPUT_SHA_DOMAIN - 1, spec_digest, SHA256_SIZE);
        memcpy(buf + sizeof INPUT_SHA_DOMAIN - 1 + SHA256_SIZE, tree, SHA256_SIZE);
        sha256_bytes(buf, sizeof buf, d);
        hex_encode(d, sizeof d, ret_hex);
        if (ret_tree)
                memcpy(ret_tree, tree, SHA256_SIZE);
        return 0;
}

int input_sha_compute(const void *spec, size_t spec_len, int checkout_dirfd, char ret_hex[SHA256_HEX_SIZE]) {
        return input_sha_compute_cached(spec, spec_len, checkout_dirfd, NULL, ret_hex, NULL);
}
