/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-digest-cache.c: the input digest cache saves work and never changes a digest: hits on an unchanged
 * tree, a rewritten file with a forged mtime rehashed, racy files not remembered, a corrupt or foreign
 * cache discarded, the size bound, and concurrent savers merged. */
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "hash/digest-cache.h"
#include "hash/hash.h"
#include "tests.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static int write_at(int dirfd, const char *path, const char *content) {
        _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t) strlen(content))
                return -errno;
        return 0;
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

FIXTURE(cache) {
        char dir[64];
        char *path; /* the cache file, beside the tree */
        int tree_fd;
};

FIXTURE_SETUP(cache) {
        char name[32];

        strcpy(self->dir, "/tmp/pond-test-dcache-XXXXXX");
        ASSERT_TRUE(mkdtemp(self->dir) != NULL);
        self->path = path_join(self->dir, "cache");
        int dfd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        ASSERT_OK(RET_NERRNO(mkdirat(dfd, "tree", 0755)));
        self->tree_fd = openat(dfd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(self->tree_fd >= 0);
        close(dfd);
        /* Enough files for the hashing threads to start. */
        for (int i = 0; i < 200; i++) {
                snprintf(name, sizeof name, "f%03d", i);
                ASSERT_OK(write_at(self->tree_fd, name, name));
        }
}

FIXTURE_TEARDOWN(cache) {
        close(self->tree_fd);
        nftw(self->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(self->path);
}

static void digest_with_cache(FIXTURE_DATA(cache) *self, char ret_hex[SHA256_HEX_SIZE], size_t *ret_loaded,
                              bool *ret_discarded) {
        _cleanup_(digest_cache_freep) DigestCache *c = NULL;
        uint8_t d[SHA256_SIZE];
        bool discarded = false;

        ASSERT_OK(digest_cache_load(self->path, &c, &discarded));
        ASSERT_OK(tree_digest_cached(self->tree_fd, c, d));
        ASSERT_OK(digest_cache_save(c, self->path));
        hex_encode(d, sizeof d, ret_hex);
        if (ret_loaded)
                *ret_loaded = digest_cache_size(c);
        if (ret_discarded)
                *ret_discarded = discarded;
}

static void digest_plain(FIXTURE_DATA(cache) *self, char ret_hex[SHA256_HEX_SIZE]) {
        uint8_t d[SHA256_SIZE];

        ASSERT_OK(tree_digest(self->tree_fd, d));
        hex_encode(d, sizeof d, ret_hex);
}

/* One test walks the whole life of a cache, since only files older than the racy window are remembered and
 * the window costs two seconds of waiting. */
TEST_F(cache, remembers_rehashes_and_discards) {
        char plain[SHA256_HEX_SIZE], cached[SHA256_HEX_SIZE];
        size_t loaded = 0;
        bool discarded = true;
        struct stat st;

        /* Fresh files are racy: hashed, same digest, nothing remembered. */
        digest_plain(self, plain);
        digest_with_cache(self, cached, &loaded, &discarded);
        ASSERT_STREQ(plain, cached);
        ASSERT_EQ(0U, loaded);
        ASSERT_FALSE(discarded);

        sleep(3);
        digest_with_cache(self, cached, &loaded, NULL);
        ASSERT_STREQ(plain, cached);
        digest_with_cache(self, cached, &loaded, NULL);
        ASSERT_STREQ(plain, cached);
        ASSERT_EQ(200U, loaded);

        /* Same size, content changed, mtime forged back: ctime moved, so the file is read again. */
        ASSERT_OK(RET_NERRNO(fstatat(self->tree_fd, "f007", &st, 0)));
        ASSERT_OK(write_at(self->tree_fd, "f007", "F007"));
        struct timespec times[2] = { st.st_atim, st.st_mtim };
        ASSERT_OK(RET_NERRNO(utimensat(self->tree_fd, "f007", times, 0)));
        digest_plain(self, plain);
        digest_with_cache(self, cached, NULL, NULL);
        ASSERT_STREQ(plain, cached);

        /* One flipped byte in the cache: discarded, the digest unchanged. */
        _cleanup_close_ int fd = open(self->path, O_RDWR | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        char b;
        ASSERT_EQ(1, pread(fd, &b, 1, 100));
        b ^= 1;
        ASSERT_EQ(1, pwrite(fd, &b, 1, 100));
        digest_with_cache(self, cached, &loaded, &discarded);
        ASSERT_TRUE(discarded);
        ASSERT_EQ(0U, loaded);
        ASSERT_STREQ(plain, cached);

        /* A cache others could have written is not trusted. */
        digest_with_cache(self, cached, &loaded, &discarded);
        ASSERT_FALSE(discarded);
        ASSERT_OK(RET_NERRNO(chmod(self->path, 0666)));
        digest_with_cache(self, cached, &loaded, &discarded);
        ASSERT_TRUE(discarded);
        ASSERT_EQ(0U, loaded);
        ASSERT_STREQ(plain, cached);
}

static struct stat fake_stat(unsigned long ino) {
        return (struct stat) {
                .st_dev = 1, .st_ino = ino, .st_size = 1, .st_mode = S_IFREG | 0644,
                .st_mtim = { .tv_sec = 1000 }, .st_ctim = { .tv_sec = 1000 },
        };
}

TEST_F(cache, bounded) {
        _cleanup_(digest_cache_freep) DigestCache *c = NULL, *again = NULL;
        uint8_t d[SHA256_SIZE] = {};

        ASSERT_OK(digest_cache_load(self->path, &c, NULL));
        for (unsigned long i = 0; i < DIGEST_CACHE_MAX_ENTRIES + 100; i++) {
                struct stat st = fake_stat(i);
                ASSERT_OK(digest_cache_add(c, &st, d, now_ns()));
        }
        ASSERT_OK(digest_cache_save(c, self->path));
        ASSERT_OK(digest_cache_load(self->path, &again, NULL));
        ASSERT_EQ((size_t) DIGEST_CACHE_MAX_ENTRIES, digest_cache_size(again));
}

TEST_F(cache, concurrent_savers_merge) {
        _cleanup_(digest_cache_freep) DigestCache *all = NULL;
        uint8_t d[SHA256_SIZE] = {}, got[SHA256_SIZE];

        for (int k = 0; k < 4; k++) {
                pid_t pid = fork();
                ASSERT_TRUE(pid >= 0);
                if (pid == 0) {
                        DigestCache *c = NULL;
                        if (digest_cache_load(self->path, &c, NULL) < 0)
                                _exit(1);
                        for (unsigned long i = 0; i < 1000; i++) {
                                struct stat st = fake_stat((unsigned long) k * 1000 + i);
                                d[0] = (uint8_t) k;
                                if (digest_cache_add(c, &st, d, now_ns()) < 0)
                                        _exit(1);
                        }
                        _exit(digest_cache_save(c, self->path) < 0);
                }
        }
        for (int k = 0; k < 4; k++) {
                int status;
                ASSERT_TRUE(wait(&status) > 0);
                ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        ASSERT_OK(digest_cache_load(self->path, &all, NULL));
        ASSERT_EQ(4000U, digest_cache_size(all));
        struct stat st = fake_stat(2500);
        ASSERT_TRUE(digest_cache_lookup(all, &st, got));
        ASSERT_EQ(2, got[0]);
        st.st_ctim.tv_nsec = 1; /* any key field differs: no answer */
        ASSERT_FALSE(digest_cache_lookup(all, &st, got));
}

TEST_MAIN();
