/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* net-lease.c: per-job /30 blocks from a private pool, and the claims on the job's network object names,
 * in one lease store (lease/lease-store.h), under its lock. A lease is a file named after the block, linked
 * into place whole and never over another (so two jobs never get the same block) and holding the job id,
 * with a file "job-ID" holding the block (so cleanup, which knows only the id, finds it). The search starts
 * at a hash of the id: usually the first probe is free. A name claim is a file "name-NAME" holding the job
 * id, made the same way: the job that holds it alone makes and removes the objects of that name. */
#include <arpa/inet.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "basic/jobid.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "lease/lease-store.h"
#include "net/net.h"

static int pool_parse(const char *pool, uint32_t *ret_base, unsigned *ret_blocks) {
        char addr[32];
        const char *slash = strchr(pool, '/');
        struct in_addr a;
        unsigned len;

        if (!slash || (size_t) (slash - pool) >= sizeof addr || sscanf(slash + 1, "%u", &len) != 1 || len < 8 ||
            len > 30)
                return -EINVAL;
        memcpy(addr, pool, (size_t) (slash - pool));
        addr[slash - pool] = 0;
        if (inet_pton(AF_INET, addr, &a) != 1)
                return -EINVAL;
        *ret_base = ntohl(a.s_addr) & (len == 0 ? 0 : ~((1U << (32 - len)) - 1));
        *ret_blocks = 1U << (30 - len);
        return 0;
}

static unsigned start_index(const char *job_id, unsigned blocks) {
        uint8_t h[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(h, (const uint8_t *) job_id, strlen(job_id));
        return ((unsigned) h[0] << 24 | (unsigned) h[1] << 16 | (unsigned) h[2] << 8 | h[3]) % blocks;
}

static void fill(NetLease *l, uint32_t base, unsigned index) {
        l->index = index;
        l->host_addr.s_addr = htonl(base + index * 4 + 1);
        l->job_addr.s_addr = htonl(base + index * 4 + 2);
}

int net_lease_acquire(const char *lease_dir, const char *pool, const char *job_id, NetLease *ret) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        char byjob[JOB_ID_MAX + 8];
        uint32_t base;
        unsigned blocks, start;
        int r;

        r = pool_parse(pool, &base, &blocks);
        if (r < 0)
                return log_debug_errno(r, "Invalid address pool '%s'.", pool);
        r = lease_store_open(lease_dir, LEASE_STORE_CREATE, &s);
        if (r < 0)
                return r;
        snprintf(byjob, sizeof byjob, "job-%s", job_id);
        start = start_index(job_id, blocks);
        for (unsigned i = 0; i < blocks; i++) {
                unsigned idx = (start + i) % blocks;
                char name[16];

                snprintf(name, sizeof name, "%u", idx);
                r = lease_store_create(&s, name, job_id);
                if (r == -EEXIST)
                        continue;
                if (r < 0)
                        return r;
                /* The reverse index lets the release find the block from the job id alone. */
                r = lease_store_write(&s, byjob, name);
                if (r < 0) {
                        (void) lease_store_remove(&s, name);
                        return r;
                }
                fill(ret, base, idx);
                return 0;
        }
        return log_debug_errno(EADDRINUSE, "Address pool %s is exhausted.", pool);
}

int net_lease_release(const char *lease_dir, const char *job_id) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_free_ char *index = NULL, *owner = NULL;
        char byjob[JOB_ID_MAX + 8];
        unsigned idx;
        int r;

        r = lease_store_open(lease_dir, LEASE_STORE_MISSING_OK, &s);
        if (r <= 0)
                return r;
        snprintf(byjob, sizeof byjob, "job-%s", job_id);
        if (lease_store_read(&s, byjob, 32, &index) < 0)
                return 0; /* no lease (never taken, or released already) */
        if (sscanf(index, "%u", &idx) == 1) {
                char name[16];
                snprintf(name, sizeof name, "%u", idx);
                /* Only a lease this job holds: never another job's. */
                if (lease_store_read(&s, name, 256, &owner) >= 0 && streq(owner, job_id)) {
                        r = lease_store_remove(&s, name);
                        if (r < 0)
                                return r;
                }
        }
        return lease_store_remove(&s, byjob);
}

static int claim_file(const char *name, char ret[static NET_NAME_CLAIM_MAX]) {
        if (!name[0] || strchr(name, '/') || strlen(name) + 6 > NET_NAME_CLAIM_MAX)
                return -EINVAL;
        snprintf(ret, NET_NAME_CLAIM_MAX, "name-%s", name);
        return 0;
}

/* The store of name's claim file, locked (1); 0 and no store if it does not exist and need not be made. */
static int claim_open(const char *lease_dir, const char *name, LeaseStoreFlags flags, LeaseStore *ret_store,
                      char ret_file[static NET_NAME_CLAIM_MAX]) {
        int r = claim_file(name, ret_file);

        return r < 0 ? r : lease_store_open(lease_dir, flags, ret_store);
}

/* 1: job_id holds the claim file; 0: nobody does, or another job. */
static int claim_held(const LeaseStore *s, const char *file, const char *job_id) {
        _cleanup_free_ char *owner = NULL;
        int r = lease_store_read(s, file, JOB_ID_MAX + 1, &owner);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return streq(owner, job_id);
}

int net_name_claim(const char *lease_dir, const char *name, const char *job_id) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        char file[NET_NAME_CLAIM_MAX];
        int r;

        r = claim_open(lease_dir, name, LEASE_STORE_CREATE, &s, file);
        if (r < 0)
                return r;
        /* Written whole, linked into place: a claim is never seen empty, and never replaced. */
        r = lease_store_create(&s, file, job_id);
        if (r != -EEXIST)
                return r;
        r = claim_held(&s, file, job_id);
        if (r < 0)
                return r;
        return r > 0 ? 0 : log_debug_errno(EADDRINUSE, "The network name %s is another job's.", name);
}

int net_name_claimed(const char *lease_dir, const char *name, const char *job_id) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        char file[NET_NAME_CLAIM_MAX];
        int r;

        r = claim_open(lease_dir, name, LEASE_STORE_SHARED | LEASE_STORE_MISSING_OK, &s, file);
        if (r <= 0)
                return r;
        return claim_held(&s, file, job_id);
}

int net_name_release(const char *lease_dir, const char *name, const char *job_id) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        char file[NET_NAME_CLAIM_MAX];
        int r;

        r = claim_open(lease_dir, name, LEASE_STORE_MISSING_OK, &s, file);
        if (r <= 0)
                return r;
        r = claim_held(&s, file, job_id);
        if (r <= 0)
                return r; /* never another job's claim */
        return lease_store_remove(&s, file);
}
