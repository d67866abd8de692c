/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-input-hash.c: input_sha, the hash of what was issued (docs/result-format.md), from one place for
 * each of its four cases: a bundle's hash is known at extraction; a checkout with a read-only view the job
 * cannot change is hashed by a thread while the job runs (the payload does not wait); a checkout the job
 * edits in place (profile none) is hashed before the payload starts; and a job refused or failed before
 * any of these gets its input hashed when its result is written. Each reads and feeds the worker's digest
 * cache (digest-cache.h), which changes how fast, never what, input_sha is. */
#include <fcntl.h>

#include "basic/dirs.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "hash/digest-cache.h"
#include "job.h"
#include "stage/ns-open.h"

#define INPUT_DIGEST_CACHE "input-digests.cache"

/* Runs in the hashing thread: nothing here logs; job_input_hash_result() reports on the cache. */
static int compute(InputHash *h, const char *spec, size_t spec_len, int checkout_fd) {
        _cleanup_(digest_cache_freep) DigestCache *cache = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (checkout_fd >= 0) {
                path = path_join(pond_dir(POND_DIR_STATE), INPUT_DIGEST_CACHE);
                if (path && digest_cache_load(path, &cache, &h->cache_discarded) < 0)
                        cache = NULL;
        }
        r = input_sha_compute_cached(spec, spec_len, checkout_fd, cache, h->hex, h->tree);
        h->have_tree = r >= 0;
        if (r >= 0 && cache)
                h->cache_save_r = digest_cache_save(cache, path);
        return r;
}

static void *hash_thread(void *p) {
        InputHash *h = p;

        h->r = compute(h, h->spec, h->spec_len, h->checkout_fd);
        return NULL;
}

static void report_cache(InputHash *h) {
        if (h->cache_discarded)
                log_warning("The input digest cache in %s was not usable and is rebuilt", pond_dir(POND_DIR_STATE));
        if (h->cache_save_r < 0)
                log_debug_errno(h->cache_save_r, "Cannot save the input digest cache: %m");
        h->cache_discarded = false;
        h->cache_save_r = 0;
}

void job_input_hash_fix(InputHash *h) {
        h->final = true;
}

/* dir is the checkout as issued (or NULL: none), as the mount namespace ns sees it (NULL: ours); immutable
 * when nothing can change it while the job runs. */
int job_input_hash_start(InputHash *h, const char *spec, size_t spec_len, const char *ns, const char *dir,
                         bool immutable) {
        int r;

        if (h->final || h->running)
                return 0;
        h->spec = spec;
        h->spec_len = spec_len;
        if (dir) {
                r = ns_open(ns, dir, O_RDONLY | O_DIRECTORY, &h->checkout_fd);
                if (r < 0)
                        return log_error_errno(r, "Cannot open the checkout %s: %m", dir);
        }
        if (!immutable) {
                hash_thread(h);
                report_cache(h);
                h->final = true;
                if (h->r < 0) {
                        h->hex[0] = 0;
                        return log_error_errno(h->r, "Cannot hash the checkout: %m");
                }
                return 0;
        }
        if (pthread_create(&h->thread, NULL, hash_thread, h) != 0)
                return log_error_errno(EAGAIN, "Cannot start the input hash: %m");
        h->running = true;
        return 0;
}

static int join(InputHash *h) {
        pthread_join(h->thread, NULL);
        report_cache(h);
        h->running = false;
        h->final = true;
        if (h->r < 0)
                h->hex[0] = 0;
        return h->r < 0 ? h->r : 0;
}

/* The input of a job that never started hashing: the spec as read, and the checkout as it is now (a host
 * path: as the service manager's namespace sees it). */
static void hash_late(InputHash *h, const char *spec, size_t spec_len, const char *checkout) {
        _cleanup_close_ int fd = -EBADF;

        if (checkout && ns_open(NS_MANAGER_MNT, checkout, O_RDONLY | O_DIRECTORY, &fd) < 0)
                fd = -EBADF;
        if (compute(h, spec, spec_len, fd) < 0)
                h->hex[0] = 0;
        report_cache(h);
        h->final = true;
}

int job_input_hash_result(InputHash *h, const char *spec, size_t spec_len, const char *checkout,
                          const char **ret_hex) {
        int r = 0;

        if (h->running)
                r = join(h);
        else if (!h->final && !h->hex[0] && spec)
                hash_late(h, spec, spec_len, checkout);
        *ret_hex = h->hex[0] ? h->hex : NULL;
        return r;
}

void job_input_hash_done(InputHash *h) {
        if (h->running)
                (void) join(h);
        h->checkout_fd = safe_close(h->checkout_fd);
}
