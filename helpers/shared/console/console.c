/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* console.c: the console socket's packets, its listening and connecting ends, and the SCM_RIGHTS fd a
 * runtime's --console-socket hands over (console.h). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "console/console.h"

int console_send(int fd, ConsoleMessage type, const void *data, size_t len, bool nonblock) {
        uint8_t t = (uint8_t) type;
        struct iovec iov[2] = { { &t, 1 }, { (void *) data, len } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len > 0 ? 2 : 1 };
        ssize_t n;

        if (len > CONSOLE_DATA_MAX)
                return -EMSGSIZE;
        do
                n = sendmsg(fd, &mh, MSG_NOSIGNAL | (nonblock ? MSG_DONTWAIT : 0));
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return 0;
}

int console_send_error(int fd, const char *fmt, ...) {
        char buf[512];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        return console_send(fd, CONSOLE_ERROR, buf, strlen(buf), false);
}

static int sockaddr_for(const char *path, struct sockaddr_un *ret) {
        *ret = (struct sockaddr_un) { .sun_family = AF_UNIX };
        if (!path || strlen(path) >= sizeof ret->sun_path)
                return -ENAMETOOLONG;
        strcpy(ret->sun_path, path);
        return 0;
}

int console_listen(const char *path, int type, mode_t mode, int *ret_fd) {
        struct sockaddr_un sa;
        int fd, r;

        r = sockaddr_for(path, &sa);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        /* the mode before anyone can connect: bind() creates it under the umask, fchmod() on a socket does
         * not reach its inode, chmod() on the path does */
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || chmod(path, mode) < 0 || listen(fd, 8) < 0) {
                r = -errno;
                (void) unlink(path);
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

int console_connect(const char *path, int *ret_fd) {
        struct sockaddr_un sa;
        int fd, r;

        r = sockaddr_for(path, &sa);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

int console_peer_uid(int fd, uid_t *ret) {
        struct ucred cred;
        socklen_t len = sizeof cred;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return -errno;
        *ret = cred.uid;
        return 0;
}

int console_recv_fd(int fd, int *ret_fd) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        char data[256];
        struct iovec iov = { data, sizeof data };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof control };
        int got = -EBADF;
        ssize_t n;

        do
                n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                size_t k;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int one;

                        memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof one);
                        if (got < 0)
                                got = one;
                        else
                                close(one);
                }
        }
        if (got < 0)
                return -EBADMSG;
        if (mh.msg_flags & MSG_CTRUNC) {
                close(got);
                return -EBADMSG;
        }
        *ret_fd = got;
        return 0;
}

int console_pack_argv(char *const *argv, char **ret, size_t *ret_len) {
        size_t len = 0, n = 0;
        char *buf, *p;

        for (char *const *a = argv; a && *a; a++, n++)
                len += strlen(*a) + 1;
        if (n == 0 || n > CONSOLE_EXEC_ARGS_MAX || len > CONSOLE_DATA_MAX)
                return -E2BIG;
        p = buf = malloc(len);
        if (!buf)
                return -ENOMEM;
        for (char *const *a = argv; *a; a++)
                p = stpcpy(p, *a) + 1;
        *ret = buf;
        *ret_len = len;
        return 0;
}

int console_unpack_argv(const char *buf, size_t len, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        if (len == 0 || buf[len - 1] != 0)
                return -EBADMSG;
        for (const char *p = buf; p < buf + len; p += strlen(p) + 1) {
                if (!*p && p == buf)
                        return -EBADMSG;        /* the command itself may not be empty */
                if (++n > CONSOLE_EXEC_ARGS_MAX)
                        return -E2BIG;
                if (strv_push(&l, strdup(p)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
