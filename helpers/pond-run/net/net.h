/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* net.h: a confined job's network: its own namespace joined to the host by a veth pair with a /30 leased
 * from a private pool, and an nftables table in the host namespace that lets the job reach nothing but
 * the host-side ports of its posture (the egress proxy, the credential broker). */
#pragma once

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#define NET_PROXY_PORT 3128
#define NET_BROKER_PORT 8080
#define NET_NETNS_DIR "/run/netns"

typedef struct NetLease {
        unsigned index;            /* the /30 block within the pool */
        struct in_addr host_addr;  /* block + 1: the host-side veth, where proxy and broker listen */
        struct in_addr job_addr;   /* block + 2: the job's eth0 */
} NetLease;

typedef struct JobNet {
        NetLease lease;
        char netns_path[64];       /* /run/netns/pond-<hash> */
        char host_ifname[IFNAMSIZ];
        char table[32];            /* nft table inet <table> */
} JobNet;

/* net-lease.c: a /30 out of pool ("10.203.0.0/16"), exclusive across jobs (O_EXCL lease files below
 * lease_dir), found again by job id for the release. */
int net_lease_acquire(const char *lease_dir, const char *pool, const char *job_id, NetLease *ret);
int net_lease_release(const char *lease_dir, const char *job_id);

/* The claim on a network object name (the job's table name stands for its netns, veth and table), in the
 * same directory: taken before anything of that name is made, exclusive across jobs. claim: 0 if job_id
 * holds it now (taken, or its own already), -EADDRINUSE if another job does. claimed: 1 if job_id holds it,
 * 0 if not (nobody, or another job). release: drops job_id's claim, never another job's. */
#define NET_NAME_CLAIM_MAX 64
int net_name_claim(const char *lease_dir, const char *name, const char *job_id);
int net_name_claimed(const char *lease_dir, const char *name, const char *job_id);
int net_name_release(const char *lease_dir, const char *name, const char *job_id);

/* netns.c: a named network namespace (like `ip netns add`): an empty namespace bound at path, owned by the
 * user namespace userns_fd (-EBADF: ours). */
int netns_create(const char *path, int userns_fd);
int netns_remove(const char *path);

/* veth.c (libnl-route): the pair host_ifname <-> eth0 inside the namespace at netns_path, addressed from
 * the lease, both ends up, IPv6 off on both; lo up inside. */
int veth_setup(const char *netns_path, const char *host_ifname, const NetLease *lease);
int veth_remove(const char *host_ifname);
/* A namespace with nothing but lo, and lo up (a job with no peer at all: no veth). */
int netns_loopback_up(const char *netns_path);

/* nft.c (libnftables): renders the template with the job's names, addresses and ports and loads it as one
 * transaction; deletes the table. */
int nft_job_load(const char *template_path, const JobNet *net, const uint16_t *ports, size_t n_ports,
                 char **ret_error);
int nft_job_remove(const char *table);

/* job-net.c: names derived from the job id (stable, so cleanup finds everything again); 48 bits of a hash,
 * so two ids can share them: the name claim (above) makes sure only one job at a time makes, uses or
 * removes the objects of a name. */
void job_net_names(const char *job_id, JobNet *ret);
/* The job's /30 from the pool, first: its sidecars can be configured for (and start listening on) the host
 * address while the rest is made. Released by job_net_teardown(). */
int job_net_lease(const char *job_id, const char *rundir, NetLease *ret, char **ret_error);
/* Everything else, in order, for the lease job_net_lease() gave, once the job holds the claim on its names
 * (-EADDRINUSE, nothing made, if another job does); on failure everything it made (the lease too) is
 * removed again. userns_fd: the job's user namespace, which will own the network namespace, or -EBADF.
 * lease NULL: a job with no peer at all gets the namespace with lo alone (no veth, no rules: nothing in it
 * leads anywhere), and ret's lease is zero. */
int job_net_setup(const char *job_id, const char *rundir, int userns_fd, const NetLease *lease,
                  const uint16_t *ports, size_t n_ports, JobNet *ret, char **ret_error);
/* Idempotent: table, namespace (and with it the veth) and the name claim, only if the job holds the claim
 * (another job's objects of the same name are never touched); then the lease. */
int job_net_teardown(const char *job_id, const char *rundir);
