/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* socket-util.c: the listening TCP socket of a sidecar (pond-egress, pond-broker), from "ADDR:PORT". */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "basic/macro.h"
#include "sidecar/socket-util.h"

int parse_port(const char *s, size_t n, uint16_t *ret) {
        unsigned v = 0;

        if (n == 0 || n > 5 || s[0] == '0')
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned) (s[i] - '0');
        }
        if (v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

static int parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
        const char *colon = strrchr(s, ':');
        char host[INET6_ADDRSTRLEN + 2];
        struct sockaddr_in *s4 = (struct sockaddr_in *) ret;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ret;
        uint16_t port;
        size_t hl;

        if (!colon || parse_port(colon + 1, strlen(colon + 1), &port) < 0)
                return -EINVAL;
        hl = (size_t) (colon - s);
        if (hl >= sizeof host)
                return -EINVAL;
        memcpy(host, s, hl);
        host[hl] = 0;
        *ret = (struct sockaddr_storage) {};
        if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
                s4->sin_family = AF_INET;
                s4->sin_port = htons(port);
                *ret_len = sizeof *s4;
                return 0;
        }
        if (hl < 2 || host[0] != '[' || host[hl - 1] != ']')
                return -EINVAL;
        host[hl - 1] = 0;
        if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
                return -EINVAL;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        *ret_len = sizeof *s6;
        return 0;
}

int socket_listen_tcp(const char *addr_port, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_storage sa;
        socklen_t len;
        int one = 1, r;

        r = parse_listen(addr_port, &sa, &len);
        if (r < 0)
                return r;
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* IP_FREEBIND: a sidecar starts while pond-run is still giving the job's veth its (IPv4) host address
         * (job-network.c); nothing reaches the socket before the address is there. */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            (sa.ss_family == AF_INET && setsockopt(fd, SOL_IP, IP_FREEBIND, &one, sizeof one) < 0) ||
            bind(fd, (struct sockaddr *) &sa, len) < 0 || listen(fd, SOMAXCONN) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int socket_listen_inherited(const char *addr_port, int *ret_fd) {
        struct sockaddr_storage want, got = {};
        socklen_t want_len, got_len = sizeof got;
        int n, flags, r;

        r = parse_listen(addr_port, &want, &want_len);
        if (r < 0)
                return r;
        n = sd_listen_fds(true);
        if (n < 0)
                return n;
        if (n == 0)
                return -ENOENT;
        if (n != 1 || sd_is_socket_inet(SD_LISTEN_FDS_START, want.ss_family, SOCK_STREAM, 1, 0) <= 0 ||
            getsockname(SD_LISTEN_FDS_START, (struct sockaddr *) &got, &got_len) < 0 || got_len != want_len ||
            memcmp(&got, &want, want_len) != 0)
                return -EBADF;
        flags = fcntl(SD_LISTEN_FDS_START, F_GETFL);
        if (flags < 0 || fcntl(SD_LISTEN_FDS_START, F_SETFL, flags | O_NONBLOCK) < 0 ||
            fcntl(SD_LISTEN_FDS_START, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        *ret_fd = SD_LISTEN_FDS_START;
        return 0;
}
