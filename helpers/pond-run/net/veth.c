/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* veth.c: the job's veth pair over rtnetlink, through libnl-route (no hand-written netlink). The host
 * end stays in the host namespace (where nftables filters it and where a gVisor sandbox cannot touch
 * it); the peer becomes eth0 inside the job's namespace. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "net/net.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_sock *, nl_socket_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_link *, rtnl_link_put);

static int nl_errno(int nlerr) {
        return nlerr == -NLE_EXIST ? -EEXIST : nlerr == -NLE_OBJ_NOTFOUND || nlerr == -NLE_NODEV ? -ENODEV
               : nlerr == -NLE_PERM ? -EPERM : -EIO;
}

static int route_socket(struct nl_sock **ret) {
        struct nl_sock *s = nl_socket_alloc();
        if (!s)
                return -ENOMEM;
        if (nl_connect(s, NETLINK_ROUTE) < 0) {
                nl_socket_free(s);
                return -EIO;
        }
        *ret = s;
        return 0;
}

static int link_up(struct nl_sock *s, const char *name) {
        _cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL, *change = NULL;
        int r;

        r = rtnl_link_get_kernel(s, 0, name, &link);
        if (r < 0)
                return nl_errno(r);
        change = rtnl_link_alloc();
        if (!change)
                return -ENOMEM;
        rtnl_link_set_flags(change, IFF_UP);
        r = rtnl_link_change(s, link, change, 0);
        return r < 0 ? nl_errno(r) : 0;
}

static int addr_add(struct nl_sock *s, const char *ifname, struct in_addr a) {
        _cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL;
        struct rtnl_addr *addr = NULL;
        struct nl_addr *local = NULL;
        int r;

        r = rtnl_link_get_kernel(s, 0, ifname, &link);
        if (r < 0)
                return nl_errno(r);
        addr = rtnl_addr_alloc();
        local = nl_addr_build(AF_INET, &a, sizeof a);
        if (!addr || !local) {
                r = -ENOMEM;
                goto out;
        }
        nl_addr_set_prefixlen(local, 30);
        rtnl_addr_set_ifindex(addr, rtnl_link_get_ifindex(link));
        r = rtnl_addr_set_local(addr, local);
        if (r >= 0)
                r = rtnl_addr_add(s, addr, 0);
        r = r < 0 ? nl_errno(r) : 0;
out:
        nl_addr_put(local);
        rtnl_addr_put(addr);
        return r;
}

/* No IPv6 path around the IPv4 rules: no addresses, no autoconfiguration, on either end. */
static void ipv6_off(const char *ifname) {
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (asprintf(&p, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname) < 0)
                return;
        fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd >= 0)
                (void) write_all(fd, "1", 1);
}

/* /proc/sys as a procfs of the child's own: the unit's is read-only (ProtectKernelTunables=, or a container's
 * /proc/sys), and a new instance's is not. In a mount namespace of the child's own, which dies with it. No
 * /proc/sys: the writes fail as they did there, and nftables still drops every IPv6 packet on the veth. */
static void fresh_proc(void) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                log_debug_errno(errno, "Cannot mount a procfs of our own for the IPv6 switches: %m");
}

/* The host end's IPv6 switch, then inside the job's namespace (setns()): eth0's, eth0's address, eth0 and
 * lo up; without a veth (host_ifname and lease NULL), lo up only. In a forked child: its namespaces are its
 * own. */
static int configure_inside(const char *netns_path, const char *host_ifname, const NetLease *lease) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        siginfo_t si;
        int r;

        r = safe_fork("(pond-veth)", FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_CLOSE_ALL_FDS, &child);
        if (r < 0)
                return r;
        if (r == 0) {
                _cleanup_(nl_socket_freep) struct nl_sock *s = NULL;
                int fd;

                /* The kernel takes the IPv6 switch's lock with a trylock and restarts the write() while another
                 * netns or link change holds it: under a burst of jobs this child spins, and it took 14% of
                 * the worker's CPU at 16 jobs at once (tools/bench-throughput, perf). At idle priority the
                 * spin runs only on CPU time nothing else wants. */
                (void) sched_setscheduler(0, SCHED_IDLE, &(struct sched_param) {});
                if (host_ifname) {
                        fresh_proc();
                        ipv6_off(host_ifname);
                }
                fd = open(netns_path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || setns(fd, CLONE_NEWNET) < 0 || route_socket(&s) < 0)
                        _exit(1);
                if (lease) {
                        ipv6_off("eth0");
                        ipv6_off("default");
                        if (addr_add(s, "eth0", lease->job_addr) < 0 || link_up(s, "eth0") < 0)
                                _exit(2);
                }
                _exit(link_up(s, "lo") < 0 ? 2 : 0);
        }
        r = pidref_wait(&child, USEC_INFINITY, &si);
        if (r < 0)
                return r;
        return siginfo_exited_ok(&si) ? 0 : -EIO;
}

int veth_setup(const char *netns_path, const char *host_ifname, const NetLease *lease) {
        _cleanup_(nl_socket_freep) struct nl_sock *s = NULL;
        _cleanup_(rtnl_link_putp) struct rtnl_link *veth = NULL;
        _cleanup_close_ int nsfd = -EBADF;
        struct rtnl_link *peer;
        int r;

        nsfd = open(netns_path, O_RDONLY | O_CLOEXEC);
        if (nsfd < 0)
                return -errno;
        r = route_socket(&s);
        if (r < 0)
                return r;
        veth = rtnl_link_veth_alloc();
        if (!veth)
                return -ENOMEM;
        rtnl_link_set_name(veth, host_ifname);
        peer = rtnl_link_veth_get_peer(veth);
        rtnl_link_set_name(peer, "eth0");
        rtnl_link_set_ns_fd(peer, nsfd);
        r = rtnl_link_add(s, veth, NLM_F_CREATE | NLM_F_EXCL);
        rtnl_link_put(peer);
        if (r < 0)
                return log_debug_errno(nl_errno(r), "Cannot create veth %s: %s", host_ifname, nl_geterror(r));
        /* First: the host end's IPv6 goes off before the end is up. */
        r = configure_inside(netns_path, host_ifname, lease);
        if (r >= 0)
                r = addr_add(s, host_ifname, lease->host_addr);
        if (r >= 0)
                r = link_up(s, host_ifname);
        if (r < 0) {
                (void) veth_remove(host_ifname);
                return log_debug_errno(r, "Cannot configure veth %s: %m", host_ifname);
        }
        return 0;
}

int netns_loopback_up(const char *netns_path) {
        return configure_inside(netns_path, NULL, NULL);
}

int veth_remove(const char *host_ifname) {
        _cleanup_(nl_socket_freep) struct nl_sock *s = NULL;
        _cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL;
        int r;

        r = route_socket(&s);
        if (r < 0)
                return r;
        link = rtnl_link_alloc();
        if (!link)
                return -ENOMEM;
        rtnl_link_set_name(link, host_ifname);
        r = rtnl_link_delete(s, link);
        if (r < 0 && nl_errno(r) != -ENODEV)
                return nl_errno(r);
        return 0;
}
