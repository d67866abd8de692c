/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hash.h: SHA-256 of byte strings and of fds (streaming, bounded), lowercase hex, the canonical tree digest of
 * a checkout directory and the job's input_sha (docs/result-format.md defines both byte for byte). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "basic/fileio.h" /* openat_beneath(), which lived here once */
#include "basic/macro.h"

#define SHA256_SIZE 32
#define SHA256_HEX_SIZE (2 * SHA256_SIZE + 1)

/* Bounds of tree_digest(): deeper or larger checkouts are refused (-ELOOP, -E2BIG), never truncated, since a
 * digest over part of a tree would claim more than it covers. */
#define TREE_MAX_DEPTH 256U
#define TREE_MAX_ENTRIES (1U << 20)

#define INPUT_SHA_DOMAIN "pond-input-v1\n"

/* Writes 2*n lowercase hex digits plus a NUL to ret. */
void hex_encode(const uint8_t *p, size_t n, char *ret);
void sha256_hex(const void *p, size_t n, char ret_hex[SHA256_HEX_SIZE]);
void sha256_bytes(const void *p, size_t n, uint8_t ret[SHA256_SIZE]);

/* SHA-256 fed piece by piece (a stream as it passes): sha256_digest() is the digest of what was fed so far,
 * and feeding may go on after it. */
typedef struct Sha256 Sha256;
int sha256_new(Sha256 **ret);
void sha256_feed(Sha256 *s, const void *p, size_t n);
int sha256_digest(const Sha256 *s, uint8_t ret[SHA256_SIZE]);
int sha256_digest_hex(const Sha256 *s, char ret_hex[SHA256_HEX_SIZE]);
Sha256 *sha256_free(Sha256 *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sha256 *, sha256_free);

/* Reads fd to EOF, hashing every byte and, if copy_fd >= 0, writing it there too. Refuses with -EFBIG as soon
 * as more than max_bytes are read (what was copied so far stays in copy_fd: the caller removes it), and with
 * -EAGAIN on an fd that would block (a fifo opened O_NONBLOCK): it never waits for a writer. */
int hash_fd(int fd, int copy_fd, uint64_t max_bytes, uint8_t ret_digest[SHA256_SIZE], uint64_t *ret_size);

typedef struct DigestCache DigestCache;

/* The canonical digest of the tree below dirfd (not following symlinks, never opening special files): the walk
 * lists the tree, then up to 4 threads hash its files. Uses no global state: safe to run from a thread.
 * With a cache (digest-cache.h), a file whose key fields are unchanged is not read again; the digest is the
 * same either way. A file swapped while the tree is read fails with -ESTALE. */
int tree_digest(int dirfd, uint8_t ret_digest[SHA256_SIZE]);
int tree_digest_cached(int dirfd, DigestCache *cache, uint8_t ret_digest[SHA256_SIZE]);

/* Whether anything in the tree below dirfd (the root itself included, not following symlinks, entered the way
 * tree_digest() enters it) changed at or after since, a CLOCK_REALTIME_COARSE reading (file systems stamp
 * times from the coarse clock: a finer reading may be later than a change made after it): some inode's ctime
 * is not before it. Every change the kernel makes to an inode (content, size, mode, owner, xattrs, links) and to a
 * directory (an entry added, removed or renamed) sets its ctime to the time of the change, and no user can set
 * a ctime: so a change after since, even undone again, is found, on a file system whose timestamps are 1 s or
 * finer (a ctime truncated to since's second, with no nanoseconds, counts as changed). Not seen: a write
 * through a shared mapping to a page already dirty before since, a clock stepped back. 1 in *ret_changed and
 * 0, or -errno (the tree could not be read whole; -ELOOP, -E2BIG past tree_digest()'s bounds). */
int tree_changed_since(int dirfd, const struct timespec *since, bool *ret_changed);

/* input_sha = hex(sha256(INPUT_SHA_DOMAIN || sha256(spec) || tree_digest(checkout))), with the tree digest of
 * "no checkout" (checkout_dirfd < 0) being sha256 of the empty string. */
int input_sha_compute(const void *spec, size_t spec_len, int checkout_dirfd, char ret_hex[SHA256_HEX_SIZE]);
/* ret_tree (may be NULL): the tree digest it used, for task_sha (pond-run's record/task-sha.h). */
int input_sha_compute_cached(const void *spec, size_t spec_len, int checkout_dirfd, DigestCache *cache,
                             char ret_hex[SHA256_HEX_SIZE], uint8_t ret_tree[SHA256_SIZE]);
