/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bundle.c: encrypted source bundles. A round trip reproduces the tree exactly; every malicious archive
 * (made here with libarchive, then encrypted with the bundle's own encryption layer) is refused with nothing
 * written outside the destination; a bundle for another worker or job, altered, reordered, truncated or
 * extended is refused; input_sha is the sha256 of the bundle file. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <ftw.h>
#include <sodium.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "hash/hash.h"
#include "secrets/bundle-crypt.h"
#include "secrets/bundle.h"
#include "tests.h"

typedef struct Worker {
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        uint8_t *sk;
} Worker;

static int worker_new(Worker *w) {
        if (sodium_init() < 0)
                return -EIO;
        w->sk = sodium_malloc(KEY_SEAL_SECRET_SIZE);
        if (!w->sk)
                return -ENOMEM;
        crypto_box_keypair(w->pk, w->sk);
        return 0;
}

static void worker_done(Worker *w) {
        secret_free(w->sk);
        w->sk = NULL;
}

/* base/ holds out/dest (where bundles go) and nothing else but out/: an escape shows up as an extra entry. */
typedef struct Scratch {
        char base[64];
        char dest[96];
} Scratch;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static void scratch_done(Scratch *s) {
        if (s->base[0])
                nftw(s->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int scratch_new(Scratch *s) {
        strcpy(s->base, "/tmp/pond-test-bundle-XXXXXX");
        if (!mkdtemp(s->base))
                return -errno;
        snprintf(s->dest, sizeof s->dest, "%s/out/dest", s->base);
        return mkdir_p(s->dest, 0700);
}

static char escape_name[64];
static char esc_abs[96], esc_up[96], esc_deep[96], esc_a[96];

/* The names a malicious entry would create outside dest, from the test's pid. written_outside() sets them
 * itself: each test is a process of its own, and nothing an earlier test set carries over. */
static void escape_names(void) {
        snprintf(escape_name, sizeof escape_name, "pond-escape-%d", (int) getpid());
        snprintf(esc_abs, sizeof esc_abs, "/tmp/%s", escape_name);
        snprintf(esc_up, sizeof esc_up, "../%s", escape_name);
        snprintf(esc_deep, sizeof esc_deep, "a/../../%s", escape_name);
        snprintf(esc_a, sizeof esc_a, "up/%s", escape_name);
}

/* Entries below base outside out/dest, and escape_name anywhere the malicious paths could reach. */
static int count_outside_;
static const char *dest_of_;
static int count_outside_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        if (strncmp(p, dest_of_, strlen(dest_of_)) != 0 || (p[strlen(dest_of_)] && p[strlen(dest_of_)] != '/'))
                count_outside_++;
        return 0;
}

static int written_outside(const Scratch *s) {
        char p[256];

        escape_names();
        count_outside_ = 0;
        dest_of_ = s->dest;
        nftw(s->base, count_outside_one, 16, FTW_PHYS);
        /* base itself and base/out are expected. */
        int n = count_outside_ - 2;
        const char *places[] = { "/tmp", "/etc", "/" };
        for (size_t i = 0; i < ELEMENTSOF(places); i++) {
                snprintf(p, sizeof p, "%s/%s", places[i], escape_name);
                if (access(p, F_OK) == 0)
                        n++;
        }
        return n;
}

/* A tar entry to write; type HARDLINK means a hard link to link. */
#define HARDLINK ((mode_t) 1)
typedef struct TarEntry {
        const char *path;
        mode_t type, perm;
        const char *link;
        size_t size;
} TarEntry;

static int tar_add(struct archive *a, const TarEntry *t) {
        struct archive_entry *e = archive_entry_new();
        char buf[4096];
        int r = 0;

        archive_entry_set_pathname(e, t->path);
        archive_entry_set_filetype(e, t->type == HARDLINK ? AE_IFREG : t->type);
        archive_entry_set_perm(e, t->perm);
        archive_entry_set_size(e, t->type == AE_IFREG ? (la_int64_t) t->size : 0);
        if (t->type == AE_IFLNK)
                archive_entry_set_symlink(e, t->link);
        if (t->type == HARDLINK)
                archive_entry_set_hardlink(e, t->link);
        if (t->type == AE_IFCHR)
                archive_entry_set_rdev(e, makedev(1, 3));
        if (archive_write_header(a, e) != ARCHIVE_OK)
                r = -EIO;
        memset(buf, 'x', sizeof buf);
        for (size_t left = t->type == AE_IFREG ? t->size : 0; r >= 0 && left > 0;) {
                size_t k = left < sizeof buf ? left : sizeof buf;
                if (archive_write_data(a, buf, k) != (la_ssize_t) k)
                        r = -EIO;
                left -= k;
        }
        archive_entry_free(e);
        return r;
}

/* A memfd holding a pax tar of entries, plus pad zero bytes after it, positioned at 0. */
static int tar_make(const TarEntry *entries, size_t n, size_t pad) {
        struct archive *a = archive_write_new();
        int fd = memfd_create("tar", MFD_CLOEXEC), r = 0;

        if (fd < 0 || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            archive_write_open_fd(a, fd) != ARCHIVE_OK)
                r = -EIO;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = tar_add(a, &entries[i]);
        if (archive_write_close(a) != ARCHIVE_OK)
                r = -EIO;
        archive_write_free(a);
        if (r >= 0 && pad > 0 && ftruncate(fd, lseek(fd, 0, SEEK_END) + (off_t) pad) < 0)
                r = -errno;
        if (r < 0 || lseek(fd, 0, SEEK_SET) < 0) {
                safe_close(fd);
                return r < 0 ? r : -errno;
        }
        return fd;
}

/* The bundle of a tar made of entries, in a memfd positioned at 0. */
static int bundle_of(const Worker *w, const char *job_id, const TarEntry *entries, size_t n, size_t pad) {
        _cleanup_close_ int tar = tar_make(entries, n, pad);
        char sha[SHA256_HEX_SIZE];
        int fd = memfd_create("bundle", MFD_CLOEXEC);

        if (tar < 0 || fd < 0 || bundle_encrypt_fd(tar, fd, w->pk, job_id, sha) < 0 ||
            lseek(fd, 0, SEEK_SET) < 0) {
                safe_close(fd);
                return -EIO;
        }
        return fd;
}

static int extract_to(const Worker *w, const char *job_id, int bundle_fd, const char *dest,
                      const BundleLimits *limits, char sha[SHA256_HEX_SIZE], char **err) {
        _cleanup_close_ int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (dfd < 0 || lseek(bundle_fd, 0, SEEK_SET) < 0)
                return -errno;
        return bundle_extract(bundle_fd, w->pk, w->sk, job_id, dfd, limits, sha, err);
}

static int put_file(int dirfd, const char *path, const void *p, size_t n, mode_t mode) {
        _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

        if (fd < 0 || write_all(fd, p, n) < 0 || fchmod(fd, mode) < 0)
                return -errno;
        return 0;
}

/* Names, modes (executable, private, read-only), empty and read-only directories, symlinks inside the tree
 * (to a file, a directory, up and to "."), and a 5 MB file spanning many chunks. */
static int make_source_tree(const char *src) {
        static const char *const dirs[] = { "sub", "sub/deep", "sub/deep/er", "empty", "sub/ro", "private" };
        static const mode_t dir_modes[] = { 0755, 0700, 0755, 0755, 0755, 0700 };
        _cleanup_free_ uint8_t *big = malloc(5 * 1000 * 1000);
        _cleanup_close_ int d = -EBADF;
        uint64_t x = 88172645463325252ULL;

        if (!big || mkdir(src, 0755) < 0 || (d = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (mkdirat(d, dirs[i], 0700) < 0 || fchmodat(d, dirs[i], dir_modes[i], 0) < 0)
                        return -errno;
        for (size_t i = 0; i < 5 * 1000 * 1000; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                big[i] = (uint8_t) x;
        }
        if (put_file(d, "top.txt", "hello\n", 6, 0644) < 0 || put_file(d, "run.sh", "#!/bin/sh\n", 10, 0755) < 0 ||
            put_file(d, "secret", "s", 1, 0600) < 0 || put_file(d, "ro.txt", "r", 1, 0444) < 0 ||
            put_file(d, "name with spaces", "", 0, 0644) < 0 ||
            put_file(d, "\xc3\xbc" "n" "\xc3\xaf" "c" "\xc3\xb6" "de", "u", 1, 0640) < 0 ||
            put_file(d, "sub/ro/f", "f", 1, 0644) < 0 || put_file(d, "sub/big.bin", big, 5 * 1000 * 1000, 0644) < 0)
                return -errno;
        if (symlinkat("../top.txt", d, "sub/up") < 0 || symlinkat("sub/deep", d, "link-dir") < 0 ||
            symlinkat("../../../run.sh", d, "sub/deep/er/l") < 0 || symlinkat(".", d, "dot") < 0 ||
            fchmodat(d, "sub/ro", 0555, 0) < 0)
                return -errno;
        return 0;
}

/* One line per entry below root: "d MODE path", "f MODE SIZE SHA256 path", "l TARGET path"; sorted. */
static char **lines_;
static size_t n_lines_, root_len_;

static int list_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        char line[8192], target[4096], hex[SHA256_HEX_SIZE] = "";
        const char *rel = p + root_len_ + 1;
        uint8_t dg[SHA256_SIZE];

        if (f->level == 0)
                return 0;
        if (S_ISREG(st->st_mode)) {
                _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || hash_fd(fd, -EBADF, UINT64_MAX, dg, NULL) < 0)
                        return -1;
                hex_encode(dg, sizeof dg, hex);
                snprintf(line, sizeof line, "f %04o %jd %s %s\n", st->st_mode & 07777, (intmax_t) st->st_size,
                         hex, rel);
        } else if (S_ISDIR(st->st_mode))
                snprintf(line, sizeof line, "d %04o %s\n", st->st_mode & 07777, rel);
        else if (S_ISLNK(st->st_mode)) {
                ssize_t n = readlink(p, target, sizeof target - 1);
                if (n < 0)
                        return -1;
                target[n] = 0;
                snprintf(line, sizeof line, "l %s %s\n", target, rel);
        } else
                snprintf(line, sizeof line, "? %s\n", rel);
        char **l = reallocarray(lines_, n_lines_ + 1, sizeof *l);
        if (!l)
                return -1;
        lines_ = l;
        lines_[n_lines_++] = strdup(line);
        return 0;
}

static int cmp_lines(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

static int tree_listing(const char *root, char **ret) {
        size_t len = 1;
        char *out;

        lines_ = NULL;
        n_lines_ = 0;
        root_len_ = strlen(root);
        if (nftw(root, list_one, 16, FTW_PHYS) != 0)
                return -EIO;
        qsort(lines_, n_lines_, sizeof *lines_, cmp_lines);
        for (size_t i = 0; i < n_lines_; i++)
                len += strlen(lines_[i]);
        out = calloc(1, len);
        for (size_t i = 0; i < n_lines_; i++) {
                if (out)
                        strcat(out, lines_[i]);
                free(lines_[i]);
        }
        free(lines_);
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}

TEST(round_trip_exact) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_(scratch_done) Scratch s = {};
        _cleanup_free_ char *err = NULL, *want = NULL, *got = NULL;
        _cleanup_close_ int fd = -EBADF;
        char src[128], sha_c[SHA256_HEX_SIZE], sha_x[SHA256_HEX_SIZE], sha_f[SHA256_HEX_SIZE];
        uint8_t d[SHA256_SIZE];

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(scratch_new(&s));
        snprintf(src, sizeof src, "%s/src", s.base);
        ASSERT_OK(make_source_tree(src));
        fd = memfd_create("bundle", MFD_CLOEXEC);
        ASSERT_OK(fd);
        ASSERT_OK(bundle_create(src, w.pk, "j-1", fd, NULL, sha_c, &err));
        ASSERT_TRUE(lseek(fd, 0, SEEK_END) > 5 * 1000 * 1000);
        ASSERT_OK(extract_to(&w, "j-1", fd, s.dest, NULL, sha_x, &err));
        ASSERT_STREQ(sha_c, sha_x);
        ASSERT_OK(lseek(fd, 0, SEEK_SET));
        ASSERT_OK(hash_fd(fd, -EBADF, UINT64_MAX, d, NULL));
        hex_encode(d, sizeof d, sha_f);
        ASSERT_STREQ(sha_f, sha_x);
        ASSERT_OK(tree_listing(src, &want));
        ASSERT_OK(tree_listing(s.dest, &got));
        ASSERT_STREQ(want, got);
        ASSERT_CONTAINS("d 0555 sub/ro\n", got);
        ASSERT_CONTAINS("l ../top.txt sub/up\n", got);
}

TEST(create_refuses_what_extract_would) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_(scratch_done) Scratch s = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int fd = memfd_create("bundle", MFD_CLOEXEC);
        char src[128], sha[SHA256_HEX_SIZE];

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(scratch_new(&s));
        snprintf(src, sizeof src, "%s/src", s.base);
        ASSERT_OK(mkdir(src, 0755));
        ASSERT_OK(symlinkat("/etc/passwd", open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "out"));
        ASSERT_ERROR(EBADMSG, bundle_create(src, w.pk, "j-1", fd, NULL, sha, &err));
        ASSERT_CONTAINS("absolute", err);
        ASSERT_ERROR(EINVAL, bundle_create(src, w.pk, "../j", fd, NULL, sha, &err));
}

/* Each must be refused with expect, with message containing what, and nothing outside dest. */
static void check_refused(const TarEntry *entries, size_t n, const BundleLimits *limits, int expect,
                          const char *what) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_(scratch_done) Scratch s = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int fd = -EBADF;
        char sha[SHA256_HEX_SIZE];

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(scratch_new(&s));
        fd = bundle_of(&w, "j-1", entries, n, 0);
        ASSERT_OK(fd);
        int r = extract_to(&w, "j-1", fd, s.dest, limits, sha, &err);
        if (r != expect)
                printf("# %s: got %d (%s)\n", entries[n - 1].path, r, err ?: "-");
        ASSERT_EQ(expect, r);
        ASSERT_CONTAINS(what, err);
        ASSERT_EQ(0, written_outside(&s));
        /* The supervisor removes the partial checkout: it must be removable. */
        ASSERT_OK(rm_rf_at(AT_FDCWD, s.dest));
}

#define REFUSED(limits, expect, what, ...)                                                              \
        do {                                                                                            \
                const TarEntry _e[] = { __VA_ARGS__ };                                                  \
                check_refused(_e, ELEMENTSOF(_e), (limits), (expect), (what));                          \
                if (test_failed_)                                                                       \
                        return;                                                                         \
        } while (0)

#define FILE_(p) { (p), AE_IFREG, 0644, NULL, 3 }
#define DIR_(p) { (p), AE_IFDIR, 0755, NULL, 0 }
#define LINK_(p, t) { (p), AE_IFLNK, 0777, (t), 0 }

TEST(malicious_paths_refused) {
        escape_names();
        REFUSED(NULL, -EBADMSG, "absolute", FILE_(esc_abs));
        REFUSED(NULL, -EBADMSG, "'..'", FILE_(esc_up));
        REFUSED(NULL, -EBADMSG, "'..'", DIR_("a"), FILE_(esc_deep));
        REFUSED(NULL, -EBADMSG, "'..'", FILE_("./../x"));
        REFUSED(NULL, -EBADMSG, "its directory", FILE_("nodir/x"));
        REFUSED(NULL, -EBADMSG, "duplicate", FILE_("f"), FILE_("f"));
        REFUSED(NULL, -EBADMSG, "duplicate", DIR_("d"), FILE_("d"));
}

TEST(malicious_links_refused) {
        char through_etc[96], through_up[96];

        escape_names();
        snprintf(through_etc, sizeof through_etc, "etc/%s", escape_name);
        snprintf(through_up, sizeof through_up, "up/%s", escape_name);
        REFUSED(NULL, -EBADMSG, "absolute target", LINK_("etc", "/etc"), FILE_(through_etc));
        REFUSED(NULL, -EBADMSG, "outside the tree", LINK_("up", "../.."), FILE_(through_up));
        REFUSED(NULL, -EBADMSG, "outside the tree", DIR_("a"), LINK_("a/up", "../../x"));
        REFUSED(NULL, -EBADMSG, "after a name", DIR_("a"), LINK_("a/l", "b/../../x"));
        /* A link that stays inside, then an entry through it: refused too (RESOLVE_NO_SYMLINKS). */
        REFUSED(NULL, -EBADMSG, "below a symlink", DIR_("sub"), LINK_("l", "sub"), FILE_("l/x"));
        REFUSED(NULL, -EBADMSG, "below a symlink", DIR_("sub"), LINK_("l", "sub"), DIR_("l/d"));
        REFUSED(NULL, -EBADMSG, "below a symlink", DIR_("sub"), LINK_("l", "sub"), LINK_("l/m", "x"));
        REFUSED(NULL, -EBADMSG, "duplicate", DIR_("sub"), LINK_("l", "sub"), FILE_("l"));
        REFUSED(NULL, -EBADMSG, "hard link", { "h", HARDLINK, 0644, "/etc/passwd", 0 });
        REFUSED(NULL, -EBADMSG, "hard link", FILE_("a"), { "h", HARDLINK, 0644, "a", 0 });
}

TEST(malicious_types_and_modes_refused) {
        REFUSED(NULL, -EBADMSG, "character device", { "null", AE_IFCHR, 0666, NULL, 0 });
        REFUSED(NULL, -EBADMSG, "block device", { "sda", AE_IFBLK, 0660, NULL, 0 });
        REFUSED(NULL, -EBADMSG, "fifo", { "p", AE_IFIFO, 0644, NULL, 0 });
        REFUSED(NULL, -EBADMSG, "setuid", { "s", AE_IFREG, 04755, NULL, 3 });
        REFUSED(NULL, -EBADMSG, "setgid", { "g", AE_IFDIR, 02755, NULL, 0 });
        REFUSED(NULL, -EBADMSG, "sticky", { "t", AE_IFDIR, 01777, NULL, 0 });
}

TEST(limits_refused) {
        BundleLimits l = BUNDLE_LIMITS_DEFAULT;

        l.max_entries = 3;
        REFUSED(&l, -E2BIG, "more than 3 entries", FILE_("a"), FILE_("b"), FILE_("c"), FILE_("d"));
        l = BUNDLE_LIMITS_DEFAULT;
        l.max_bytes = 1000;
        REFUSED(&l, -E2BIG, "bytes", { "big", AE_IFREG, 0644, NULL, 2000 });
        REFUSED(&l, -E2BIG, "bytes", { "a", AE_IFREG, 0644, NULL, 600 }, { "b", AE_IFREG, 0644, NULL, 600 });
        l = BUNDLE_LIMITS_DEFAULT;
        l.max_path = 20;
        REFUSED(&l, -E2BIG, "path", FILE_("a-name-longer-than-twenty"));
        l = BUNDLE_LIMITS_DEFAULT;
        l.max_bundle_bytes = 4096;
        REFUSED(&l, -E2BIG, "larger than", { "big", AE_IFREG, 0644, NULL, 10000 });
}

/* The bundle's bytes, and where its chunks start (the last one being FINAL). */
static int read_bundle(int fd, uint8_t **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len;

        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        int r = read_full_fd(fd, 64 << 20, &buf, &len);
        if (r < 0)
                return r;
        *ret = (uint8_t *) TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static size_t chunk_offsets(const uint8_t *b, size_t len, size_t *offs, size_t max) {
        size_t n = 0, o = BUNDLE_MAGIC_SIZE + 4 + ((size_t) b[14] << 24 | (size_t) b[15] << 16 |
                                                   (size_t) b[16] << 8 | b[17]) + 24;

        while (o + 4 <= len && n < max) {
                offs[n++] = o;
                o += 4 + ((size_t) b[o] << 24 | (size_t) b[o + 1] << 16 | (size_t) b[o + 2] << 8 | b[o + 3]);
        }
        return n;
}

static int memfd_with(const uint8_t *p, size_t n) {
        int fd = memfd_create("bundle", MFD_CLOEXEC);

        if (fd < 0 || write_all(fd, p, n) < 0) {
                safe_close(fd);
                return -EIO;
        }
        return fd;
}

/* Extracts bytes with w for job_id into a fresh dest; the error and its message. */
static int extract_bytes(const Worker *w, const char *job_id, const uint8_t *p, size_t n, char **err) {
        _cleanup_(scratch_done) Scratch s = {};
        _cleanup_close_ int fd = memfd_with(p, n);
        char sha[SHA256_HEX_SIZE];

        if (fd < 0 || scratch_new(&s) < 0)
                return -EIO;
        return extract_to(w, job_id, fd, s.dest, NULL, sha, err);
}

static const TarEntry small_tree[] = {
        DIR_("src"), { "src/main.c", AE_IFREG, 0644, NULL, 200 * 1000 }, LINK_("src/l", "main.c"),
};

TEST(other_worker_or_job_refused) {
        _cleanup_(worker_done) Worker w = {}, other = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ uint8_t *b = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n;

        ASSERT_OK(worker_new(&w));
        ASSERT_OK(worker_new(&other));
        fd = bundle_of(&w, "j-1", small_tree, ELEMENTSOF(small_tree), 0);
        ASSERT_OK(fd);
        ASSERT_OK(read_bundle(fd, &b, &n));
        ASSERT_OK(extract_bytes(&w, "j-1", b, n, &err));
        ASSERT_ERROR(EBADMSG, extract_bytes(&other, "j-1", b, n, &err));
        ASSERT_CONTAINS("another worker", err);
        ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-2", b, n, &err));
        ASSERT_CONTAINS("another job", err);
        ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-1", (const uint8_t *) "", 0, &err));
        ASSERT_CONTAINS("not a pond bundle", err);
}

TEST(flipped_bytes_refused) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ uint8_t *b = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n, offs[16];

        ASSERT_OK(worker_new(&w));
        fd = bundle_of(&w, "j-1", small_tree, ELEMENTSOF(small_tree), 0);
        ASSERT_OK(fd);
        ASSERT_OK(read_bundle(fd, &b, &n));
        ASSERT_EQ(4, chunk_offsets(b, n, offs, ELEMENTSOF(offs)));
        /* Every header byte and the first and last bytes of each chunk; a stride through the rest. */
        for (size_t i = 0; i < n; i++) {
                bool near = i < offs[0] + 64 || i + 64 >= n;
                for (size_t c = 1; c < 4; c++)
                        near = near || (i + 32 >= offs[c] && i < offs[c] + 32);
                if (!near && i % 997 != 0)
                        continue;
                _cleanup_free_ char *err = NULL;
                b[i] ^= 0x20;
                int r = extract_bytes(&w, "j-1", b, n, &err);
                b[i] ^= 0x20;
                if (r != -EBADMSG)
                        printf("# flipped byte %zu: %d (%s)\n", i, r, err ?: "-");
                ASSERT_ERROR(EBADMSG, r);
        }
}

TEST(truncated_reordered_extended_refused) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ uint8_t *b = NULL, *t = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n, offs[16];

        ASSERT_OK(worker_new(&w));
        fd = bundle_of(&w, "j-1", small_tree, ELEMENTSOF(small_tree), 0);
        ASSERT_OK(fd);
        ASSERT_OK(read_bundle(fd, &b, &n));
        ASSERT_EQ(4, chunk_offsets(b, n, offs, ELEMENTSOF(offs)));
        for (size_t cut = 0; cut < n; cut += 4999)
                ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-1", b, cut, &err));
        ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-1", b, offs[3], &err));
        ASSERT_CONTAINS("truncated", err);
        /* Chunks 1 and 2 are both full: swapped, the lengths still parse, the authentication does not. */
        t = malloc(n);
        ASSERT_TRUE(t != NULL);
        size_t m = offs[2] - offs[1];
        memcpy(t, b, n);
        memcpy(t + offs[1], b + offs[2], m);
        memcpy(t + offs[2], b + offs[1], m);
        ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-1", t, n, &err));
        ASSERT_CONTAINS("does not authenticate", err);
        /* Chunk 1 dropped. */
        memcpy(t, b, offs[1]);
        memcpy(t + offs[1], b + offs[2], n - offs[2]);
        ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-1", t, n - m, &err));
        /* A byte appended after FINAL. */
        uint8_t *e = realloc(TAKE_PTR(b), n + 1);
        ASSERT_TRUE(e != NULL);
        b = e;
        b[n] = 0;
        ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-1", b, n + 1, &err));
        ASSERT_CONTAINS("after the final chunk", err);
}

/* The tar ends inside the chunks before FINAL (zero padding after it): without its FINAL chunk the tar is
 * complete, and only the bundle layer can tell that the stream was cut. */
TEST(final_chunk_removed_refused) {
        _cleanup_(worker_done) Worker w = {};
        _cleanup_free_ uint8_t *b = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int fd = -EBADF;
        const TarEntry e[] = { FILE_("a"), DIR_("d") };
        size_t n, offs[16], k;

        ASSERT_OK(worker_new(&w));
        fd = bundle_of(&w, "j-1", e, ELEMENTSOF(e), 2 * BUNDLE_CHUNK_SIZE);
        ASSERT_OK(fd);
        ASSERT_OK(read_bundle(fd, &b, &n));
        k = chunk_offsets(b, n, offs, ELEMENTSOF(offs));
        ASSERT_EQ(3, k);
        ASSERT_OK(extract_bytes(&w, "j-1", b, n, &err));
        ASSERT_ERROR(EBADMSG, extract_bytes(&w, "j-1", b, offs[k - 1], &err));
        ASSERT_CONTAINS("truncated (ends before its final chunk)", err);
}

TEST_MAIN()
