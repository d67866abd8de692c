/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* digest-cache.h: the worker's cache of file content digests, keyed the way git's index keys a file (device,
 * inode, size, mtime and ctime in ns, mode), so that hashing an unchanged checkout again costs a stat per
 * file. It only ever saves work: a miss, a discarded cache or a failed save give the same digests. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "basic/macro.h"
#include "hash/hash.h"

/* At most this many files are remembered (88 bytes each on disk and in memory); the least recently used go
 * first when more are added. */
#define DIGEST_CACHE_MAX_ENTRIES (1U << 18)
/* A file whose mtime or ctime is this close to the moment it was hashed is not remembered: a change within
 * the same timestamp tick would leave both unchanged ("racy git"). */
#define DIGEST_CACHE_RACY_NSEC (2ULL * 1000000000ULL)

typedef struct DigestCache DigestCache;

/* Loads the cache at path. A missing file gives an empty cache; so does one that is not a regular file owned
 * by this user with no group or other write bit, is torn, has a bad checksum or unsorted entries: it is
 * never trusted, and *ret_discarded (if given) says so. -ENOMEM only. */
int digest_cache_load(const char *path, DigestCache **ret, bool *ret_discarded);
DigestCache *digest_cache_free(DigestCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(DigestCache *, digest_cache_free);

/* How many files the cache remembered when it was loaded. */
size_t digest_cache_size(const DigestCache *c);

/* The digest remembered for the file st describes, if every key field matches. Thread-safe against other
 * lookups and digest_cache_add(). */
bool digest_cache_lookup(DigestCache *c, const struct stat *st, uint8_t ret_digest[SHA256_SIZE]);

/* Remembers the digest of the file st describes (fstat'ed before and after reading it, unchanged), unless it
 * is racy against now_ns (CLOCK_REALTIME). Thread-safe. */
int digest_cache_add(DigestCache *c, const struct stat *st, const uint8_t digest[SHA256_SIZE], uint64_t now_ns);

/* Merges what this process learnt into the file at path under an exclusive lock (path.lock), keeping the
 * newest DIGEST_CACHE_MAX_ENTRIES, and replaces it atomically (a temporary file renamed over it, mode 0600).
 * Writes nothing if nothing changed. */
int digest_cache_save(DigestCache *c, const char *path);
