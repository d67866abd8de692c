/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-input-hash.c: input_sha, the hash of what was issued (docs/result-format.md), from one place for
 * each of its four cases: a bundle's hash is known at extraction; a checkout with a read-only view the job
 * cannot change is hashed by a thread while the job runs (the payload does not wait); a checkout the job
 * edits in place (profile none) is hashed before the payload starts; and a job refused or failed before
 * any of these gets its input hashed when its result is written. Each reads and feeds the worker's digest
 * cache (digest-cache.h), which changes how fast, never what, input_sha is. The checkout is live (its owner
 * may edit it while the job runs): once the payload has ended (in place: once hashed), every inode of the
 * tree must be unchanged since the moment before it was first read (tree_changed_since()), or input_sha is
 * not given and the result says input_changed. */
#include <fcntl.h>
#include <time.h>

#include "basic/dirs.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "hash/digest-cache.h"
#include "job.h"

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

static void mark_since(InputHash *h) {
        (void) clock_gettime(CLOCK_REALTIME_COARSE, &h->since);
}

/* After the last read of the checkout by the hash and by the payload: a tree that changed since h->since (even
 * changed back) is not the one input_sha or the payload may have seen whole, so no input_sha is given; one
 * whose stability cannot be checked gives none either. */
static void check_unchanged(InputHash *h, int checkout_fd) {
        bool changed = false;
        int r;

        if (checkout_fd < 0 || !h->hex[0])
                return;
        r = tree_changed_since(checkout_fd, &h->since, &changed);
        if (r < 0) {
                log_error_errno(r, "Cannot check that the checkout did not change while the job ran: %m; "
                                "input_sha is not given");
                h->hex[0] = 0;
                h->have_tree = false;
                return;
        }
        if (!changed)
                return;
        log_warning("The checkout was changed from outside the job while it was hashed or the job ran: "
                    "input_sha is not given (input_changed)");
        h->changed = true;
        h->hex[0] = 0;
        h->have_tree = false;
}

void job_input_hash_fix(InputHash *h) {
        h->final = true;
}

/* checkout_fd: the checkout as issued, opened (taken; -EBADF: none); immutable when nothing can change it
 * while the job runs. */
int job_input_hash_start(InputHash *h, const char *spec, size_t spec_len, int checkout_fd, bool immutable) {
        if (h->final || h->running) {
                safe_close(checkout_fd);
                return 0;
        }
        h->spec = spec;
        h->spec_len = spec_len;
        safe_close(h->checkout_fd);
        h->checkout_fd = checkout_fd;
        mark_since(h);
        if (!immutable) {
                hash_thread(h);
                report_cache(h);
                h->final = true;
                if (h->r < 0) {
                        h->hex[0] = 0;
                        return log_error_errno(h->r, "Cannot hash the checkout: %m");
                }
                /* In place the job changes it on purpose: what is bound is the tree before the payload ran. */
                check_unchanged(h, h->checkout_fd);
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
        else
                check_unchanged(h, h->checkout_fd);
        return h->r < 0 ? h->r : 0;
}

/* The input of a job that never started hashing: the spec as read and, if it names a checkout, the tree
 * acceptance opened (and, for a member, found theirs): never the path resolved again, which may lead
 * elsewhere by now. A member's job that was not staged covers its spec alone (its tree is read only once
 * staging found it theirs); a checkout that was not opened at acceptance leaves input_sha not computed. */
static void hash_late(Job *j) {
        InputHash *h = &j->input_hash;
        const JobSpec *spec = j->input.spec;
        bool member = j->input.have_submitter && j->input.submitter.uid != 0;
        _cleanup_close_ int fd = -EBADF;

        h->final = true;
        if (spec && spec->checkout && !(member && !j->staging.staged)) {
                if (j->input.checkout_fd < 0) {
                        log_warning("The checkout %s was not opened at acceptance: input_sha is not computed",
                                    spec->checkout);
                        h->hex[0] = 0;
                        return;
                }
                fd = fcntl(j->input.checkout_fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0) {
                        log_error_errno(errno, "Cannot hash the checkout as accepted: %m");
                        h->hex[0] = 0;
                        return;
                }
        }
        mark_since(h);
        if (compute(h, j->input.spec_buf, j->input.spec_len, fd) < 0)
                h->hex[0] = 0;
        report_cache(h);
        check_unchanged(h, fd);
}

int job_input_hash_result(Job *j, const char **ret_hex) {
        InputHash *h = &j->input_hash;
        int r = 0;

        if (h->running)
                r = join(h);
        else if (!h->final && !h->hex[0] && j->input.spec_buf)
                hash_late(j);
        *ret_hex = h->hex[0] ? h->hex : NULL;
        return r;
}

void job_input_hash_done(InputHash *h) {
        if (h->running)
                (void) join(h);
        h->checkout_fd = safe_close(h->checkout_fd);
}
