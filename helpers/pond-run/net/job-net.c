/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-net.c: a confined job's network, set up before the payload and torn down on every path. Names come
 * from a hash of the job id (interface names are 15 bytes at most), so cleanup finds everything again
 * from the id alone; since two ids can share them, a job makes and removes objects only under its claim
 * on the names (net-lease.c), taken before anything is made. */
#include <sodium.h>
#include <string.h>

#include "basic/dirs.h"
#include "basic/errmsg.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "config.h"
#include "hash/hash.h"
#include "net/net.h"

static const char *pool(void) {
        return getenv("POND_NET_POOL") ?: POND_NET_POOL;
}

static char *lease_dir(const char *rundir) {
        char *p = NULL;
        return asprintf(&p, "%s/net", rundir) < 0 ? NULL : p;
}

void job_net_names(const char *job_id, JobNet *ret) {
        uint8_t h[SHA256_SIZE];
        char hex[SHA256_HEX_SIZE];

        crypto_hash_sha256(h, (const uint8_t *) job_id, strlen(job_id));
        hex_encode(h, 6, hex);
        *ret = (JobNet) {};
        snprintf(ret->netns_path, sizeof ret->netns_path, NET_NETNS_DIR "/pond-%.12s", hex);
        snprintf(ret->host_ifname, sizeof ret->host_ifname, "pv%.12s", hex);
        snprintf(ret->table, sizeof ret->table, "pond_%.12s", hex);
}

/* $POND_NFT_TEMPLATE (tests) or job.nft in the template directory; NULL without memory. */
static char *nft_template(void) {
        const char *t = getenv("POND_NFT_TEMPLATE");

        return t ? strdup(t) : path_join(pond_dir(POND_DIR_NFT), "job.nft");
}

int job_net_lease(const char *job_id, const char *rundir, NetLease *ret, char **ret_error) {
        _cleanup_free_ char *leases = lease_dir(rundir);
        int r;

        if (!leases)
                return -ENOMEM;
        r = net_lease_acquire(leases, pool(), job_id, ret);
        if (r < 0)
                return error_set(ret_error, r, "cannot lease addresses from %s: %s", pool(), strerror(-r));
        return 0;
}

int job_net_setup(const char *job_id, const char *rundir, int userns_fd, const NetLease *lease,
                  const uint16_t *ports, size_t n_ports, JobNet *ret, char **ret_error) {
        _cleanup_free_ char *template = nft_template(), *leases = lease_dir(rundir);
        JobNet n;
        int r;

        if (!template || !leases)
                return -ENOMEM;
        job_net_names(job_id, &n);
        if (lease)
                n.lease = *lease;
        /* Nothing is made under a name another job holds; its teardown below then touches none of them. */
        r = net_name_claim(leases, n.table, job_id);
        if (r < 0) {
                if (r == -EADDRINUSE)
                        error_set(ret_error, r, "the job's network names (%s) are another running job's: "
                                  "refused, nothing made", n.table);
                else
                        error_set(ret_error, r, "cannot claim the job's network names: %s", strerror(-r));
                goto fail;
        }
        r = netns_create(n.netns_path, userns_fd);
        if (r < 0) {
                error_set(ret_error, r, "cannot create the network namespace: %s", strerror(-r));
                goto fail;
        }
        if (!lease) {
                r = netns_loopback_up(n.netns_path);
                if (r < 0) {
                        error_set(ret_error, r, "cannot bring up the namespace's loopback: %s", strerror(-r));
                        goto fail;
                }
                *ret = n;
                return 0;
        }
        r = veth_setup(n.netns_path, n.host_ifname, &n.lease);
        if (r < 0) {
                error_set(ret_error, r, "cannot create the veth pair: %s", strerror(-r));
                goto fail;
        }
        /* The rules go in before anything runs; without them the job does not run at all. */
        r = nft_job_load(template, &n, ports, n_ports, ret_error);
        if (r < 0)
                goto fail;
        *ret = n;
        return 0;
fail:
        (void) job_net_teardown(job_id, rundir);
        return r;
}

int job_net_teardown(const char *job_id, const char *rundir) {
        _cleanup_free_ char *leases = lease_dir(rundir);
        JobNet n;
        int r = 0, k;

        if (!leases)
                return -ENOMEM;
        job_net_names(job_id, &n);
        /* Objects of these names are this job's only while it holds the claim: otherwise they are another
         * job's (or none), and stay. */
        k = net_name_claimed(leases, n.table, job_id);
        if (k < 0)
                r = k;
        else if (k > 0) {
                if ((k = nft_job_remove(n.table)) < 0)
                        r = k;
                /* Deleting the host end takes the peer with it; the namespace then holds nothing. */
                if ((k = veth_remove(n.host_ifname)) < 0)
                        r = k;
                if ((k = netns_remove(n.netns_path)) < 0)
                        r = k;
                /* The names go back only once nothing of them is left. */
                if (r >= 0 && (k = net_name_release(leases, n.table, job_id)) < 0)
                        r = k;
        }
        /* The addresses go back to the pool only once nothing uses them. */
        if (r >= 0 && (k = net_lease_release(leases, job_id)) < 0)
                r = k;
        return r;
}
