/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ns-open.c: opening a path as another mount namespace sees it. pond-job@ runs the supervisor in a mount
 * namespace of its own (ProtectSystem=strict, ProtectHome=, PrivateTmp=), where a checkout or a bundle under
 * /home, /tmp or /var/tmp is hidden and every other one read-only; the spec names them as the host sees
 * them. A forked child joins the service manager's namespace, opens (or clones, for a mount), and passes
 * the fd back: a file or directory fd works in any namespace, a detached clone can be attached in ours.
 * A directory opened there is cloned there too: open_tree() clones only a mount of the caller's own
 * namespace (from ours, one of the manager's gives EINVAL), so the child that joined it inherits the fd. */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "stage/ns-open.h"

/* 1 if ns_path is the namespace we are in already (or none is asked for), 0 if another. */
static int in_namespace(const char *ns_path) {
        struct stat a, b;

        if (!ns_path)
                return 1;
        if (stat(ns_path, &a) < 0 || stat("/proc/self/ns/mnt", &b) < 0)
                return -errno;
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* With path NULL, a clone of the mount and directory dirfd is open on (open_tree() with AT_EMPTY_PATH). */
static int open_here(bool tree, int dirfd, const char *path, int flags) {
        int fd;

        if (tree && !path)
                fd = (int) syscall(SYS_open_tree, dirfd, "", (unsigned) flags | AT_EMPTY_PATH);
        else
                fd = tree ? (int) syscall(SYS_open_tree, AT_FDCWD, path, (unsigned) flags) : open(path, flags, 0);
        return fd < 0 ? -errno : fd;
}

/* The child's answer: an int (the fd's number there, or -errno) and, on success, the fd itself. */
static int send_answer(int sock, int r) {
        char buf[CMSG_SPACE(sizeof(int))] = {};
        struct iovec iov = { .iov_base = &r, .iov_len = sizeof r };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (r >= 0) {
                struct cmsghdr *c;

                mh.msg_control = buf;
                mh.msg_controllen = sizeof buf;
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &r, sizeof(int));
        }
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int receive_answer(int sock, int *ret_fd) {
        char buf[CMSG_SPACE(sizeof(int))] = {};
        int r = -EIO, fd = -EBADF;
        struct iovec iov = { .iov_base = &r, .iov_len = sizeof r };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf };
        ssize_t n;

        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (n != (ssize_t) sizeof r || (mh.msg_flags & MSG_CTRUNC)) {
                safe_close(fd);
                return -EIO;    /* the child died before it answered, or answered garbage */
        }
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        if (fd < 0)
                return -EIO;
        *ret_fd = fd;
        return 0;
}

static int open_in(const char *ns_path, bool tree, int dirfd, const char *path, int flags, int *ret_fd) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        _cleanup_close_ int nsfd = -EBADF, ours = -EBADF, theirs = -EBADF;
        const char *what = path ?: "an open directory";
        int sv[2], keep[3], r;

        r = in_namespace(ns_path);
        if (r < 0)
                return log_debug_errno(r, "Cannot compare mount namespaces with %s: %m", ns_path);
        if (r > 0) {
                r = open_here(tree, dirfd, path, flags);
                if (r < 0)
                        return r;
                *ret_fd = r;
                return 0;
        }
        nsfd = open(ns_path, O_RDONLY | O_CLOEXEC);
        if (nsfd < 0)
                return log_debug_errno(errno, "Cannot open %s: %m", ns_path);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        ours = sv[0];
        theirs = sv[1];
        keep[0] = theirs;
        keep[1] = nsfd;
        keep[2] = dirfd;        /* the child inherits it: a clone of its mount is made there */
        r = safe_fork_full("(pond-nsopen)", NULL, keep, path ? 2 : 3,
                           FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_CLOSE_ALL_FDS, &child);
        if (r < 0)
                return r;
        if (r == 0) {
                r = setns(nsfd, CLONE_NEWNS) < 0 ? -errno : open_here(tree, dirfd, path, flags);
                _exit(send_answer(theirs, r) < 0 ? 1 : 0);
        }
        theirs = safe_close(theirs);
        r = receive_answer(ours, ret_fd);
        if (r == -EIO)
                return log_debug_errno(r, "No answer from the child opening %s in %s", what, ns_path);
        return r;
}

int ns_open(const char *ns_path, const char *path, int flags, int *ret_fd) {
        return open_in(ns_path, false, -EBADF, path, flags | O_CLOEXEC, ret_fd);
}

int ns_open_tree(const char *ns_path, const char *path, unsigned flags, int *ret_fd) {
        return open_in(ns_path, true, -EBADF, path, (int) (flags | OPEN_TREE_CLOEXEC), ret_fd);
}

int ns_clone_fd(const char *ns_path, int dirfd, unsigned flags, int *ret_fd) {
        if (dirfd < 0)
                return -EBADF;
        return open_in(ns_path, true, dirfd, NULL, (int) (flags | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC), ret_fd);
}
