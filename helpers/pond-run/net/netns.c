/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* netns.c: named network namespaces, as `ip netns add/delete` make them: a fresh namespace kept alive by a
 * bind mount of its nsfs inode, so runtimes can join it by path and cleanup can find it by name. A job with a
 * user namespace of its own gets a network namespace owned by it: a runtime that joins the user namespace
 * first (runc does) can only join a network namespace owned by it. The job's rules are in the host's
 * namespace, out of its reach either way. */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "net/net.h"

/* The child unshares only the network: the bind mount lands in our mount namespace. */
static int netns_bind(const char *path) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        siginfo_t si;
        int r;

        r = safe_fork("(pond-netns)", FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_CLOSE_ALL_FDS, &child);
        if (r < 0)
                return r;
        if (r == 0) {
                if (unshare(CLONE_NEWNET) < 0 || mount("/proc/self/ns/net", path, NULL, MS_BIND, NULL) < 0)
                        _exit(1);
                _exit(0);
        }
        r = pidref_wait(&child, USEC_INFINITY, &si);
        if (r < 0 || !siginfo_exited_ok(&si))
                return -EPERM;
        return 0;
}

/* A namespace owned by the user namespace userns_fd: the child joins that namespace first, so it can no
 * longer mount in ours; it waits while we bind its namespace, then is killed. */
static int join_userns_and_unshare(void *userdata) {
        int userns_fd = *(const int *) userdata;

        return setns(userns_fd, CLONE_NEWUSER) < 0 || unshare(CLONE_NEWNET) < 0 ? -errno : 0;
}

static int netns_bind_in_userns(const char *path, int userns_fd) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        char ns[64];
        int r;

        r = fork_parked("(pond-netns)", join_userns_and_unshare, &userns_fd, &userns_fd, 1, &child);
        if (r < 0)
                return r;
        snprintf(ns, sizeof ns, "/proc/%d/ns/net", (int) child.pid);
        if (mount(ns, path, NULL, MS_BIND, NULL) < 0)
                return -errno;
        return 0;
}

int netns_create(const char *path, int userns_fd) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = mkdir_p(NET_NETNS_DIR, 0755);
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        if (fd < 0)
                return log_debug_errno(errno, "Cannot create %s: %m", path);
        r = userns_fd >= 0 ? netns_bind_in_userns(path, userns_fd) : netns_bind(path);
        if (r < 0) {
                (void) unlink(path);
                return log_debug_errno(r, "Cannot create the network namespace %s: %m", path);
        }
        return 0;
}

int netns_remove(const char *path) {
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return log_debug_errno(errno, "Cannot unmount %s: %m", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
