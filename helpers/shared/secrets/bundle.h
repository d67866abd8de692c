/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bundle.h: encrypted source bundles (docs/secrets.md): a tar stream of a source tree, encrypted under a fresh
 * key that is sealed to one worker for one job. bundle_create() makes one from a directory (bundle-create.c);
 * bundle_extract() decrypts while extracting, into a fresh private directory, refusing anything that could
 * write outside it or smuggle in special files (bundle-extract.c, bundle-path.c). The encryption layer is
 * bundle-crypt.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hash/hash.h"
#include "secrets/keys.h"

typedef struct BundleLimits {
        uint64_t max_bytes;        /* file contents, summed over all regular files */
        uint64_t max_entries;      /* tar entries of any type */
        size_t max_path;           /* bytes of one entry's path as stored */
        uint64_t max_bundle_bytes; /* the bundle file itself */
} BundleLimits;

#define BUNDLE_LIMITS_DEFAULT                                                   \
        ((BundleLimits) {                                                       \
                .max_bytes = 4ULL << 30,                                        \
                .max_entries = 1ULL << 20,                                      \
                .max_path = 4096,                                               \
                .max_bundle_bytes = 6ULL << 30,                                 \
        })

/* Writes a bundle of the tree at dir for job_id, sealed to worker_pk, to out_fd: regular files, directories
 * and symlinks that stay inside the tree, permission bits (0777 only: setuid/setgid/sticky are dropped),
 * sorted by name, no owners, no times. A special file, or a symlink pointing outside the tree, is refused
 * (-EBADMSG with a message); the same limits as extraction apply (-E2BIG). ret_sha is the sha256 hex of the
 * bytes written: the input_sha the worker will report. limits may be NULL (BUNDLE_LIMITS_DEFAULT). */
int bundle_create(const char *dir, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id,
                  int out_fd, const BundleLimits *limits, char ret_sha[SHA256_HEX_SIZE], char **ret_error);

/* Decrypts the bundle read from bundle_fd while extracting it below dest_dirfd, which must be a fresh,
 * empty, private directory. Nothing is ever created outside it (every path is resolved with
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS). Refusals: -EBADMSG (a bundle for another worker or job, any
 * authentication failure, a truncated stream, an absolute path, "..", a link leaving the tree, a hard link,
 * a special file, setuid/setgid/sticky bits, an entry below a symlink, a duplicate), -E2BIG (a limit), each
 * with a message. On any failure dest holds a partial tree the caller removes. ret_input_sha is the sha256
 * hex of every byte of the bundle file, read exactly once. limits may be NULL. */
int bundle_extract(int bundle_fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk,
                   const char *job_id, int dest_dirfd, const BundleLimits *limits,
                   char ret_input_sha[SHA256_HEX_SIZE], char **ret_error);

/* Internal, for bundle_extract(), tests and the fuzzer. */

/* A source of the plain tar stream: the next block of bytes (valid until the next call), 0 at its end, or
 * -errno with *ret_error set. */
typedef ssize_t (*BundleReadFn)(void *userdata, const void **ret_buf, char **ret_error);

/* The validated extractor: the tar stream from read() into dest_dirfd, with the refusals of
 * bundle_extract(). It stops at the tar end-of-archive marker; what the source holds after it is the
 * caller's to check. */
int bundle_extract_stream(BundleReadFn read_fn, void *userdata, int dest_dirfd, const BundleLimits *limits,
                          char **ret_error);

/* bundle-path.c: an entry's path as stored -> its canonical relative form ("" for the root, no "." or empty
 * components). Refuses absolute paths and ".." (-EBADMSG), and paths longer than max_path, with a component
 * longer than NAME_MAX or more than TREE_MAX_DEPTH components (-E2BIG). */
int bundle_path_normalize(const char *path, size_t max_path, char **ret, char **ret_error);
/* Whether a symlink at canonical path link_path with target stays inside the tree, judged lexically from
 * the link's directory: the target must be relative and of the form "../"* then names; a ".." after a name
 * is refused since "name" may itself be a link and make the lexical answer wrong. 0 or -EBADMSG. */
int bundle_link_target_check(const char *link_path, const char *target, char **ret_error);
