/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-socket-util.c: a sidecar takes the socket systemd passes it (pond-egress@ID.socket) only if it is
 * one TCP socket listening on exactly the configured address; without one it binds its own. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "basic/macro.h"
#include "sidecar/socket-util.h"
#include "tests.h"

TEST_MAIN();

/* A TCP socket on 127.0.0.1 with a port of the kernel's choosing at SD_LISTEN_FDS_START, as systemd passes
 * it, and the environment that says so; its "ADDR:PORT" in addr. */
static int pass_socket(bool do_listen, char *addr, size_t n) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof sa;
        char pid[32];
        int fd;

        if (fcntl(SD_LISTEN_FDS_START, F_GETFD) >= 0 || errno != EBADF)
                return -EBUSY;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || (do_listen && listen(fd, 8) < 0) ||
            getsockname(fd, (struct sockaddr *) &sa, &len) < 0)
                return -errno;
        if (fd != SD_LISTEN_FDS_START) { /* the lowest free fd may be that one already */
                if (dup2(fd, SD_LISTEN_FDS_START) < 0)
                        return -errno;
                close(fd);
        }
        snprintf(addr, n, "127.0.0.1:%u", ntohs(sa.sin_port));
        snprintf(pid, sizeof pid, "%d", (int) getpid());
        setenv("LISTEN_PID", pid, 1);
        setenv("LISTEN_FDS", "1", 1);
        return 0;
}

TEST(none_passed) {
        int fd = -1;

        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_PID");
        ASSERT_ERROR(ENOENT, socket_listen_inherited("127.0.0.1:3128", &fd));
        ASSERT_EQ(-1, fd);
        ASSERT_ERROR(EINVAL, socket_listen_inherited("no port", &fd));
}

TEST(the_configured_address_is_taken) {
        char addr[64];
        int fd = -1;

        ASSERT_OK(pass_socket(true, addr, sizeof addr));
        ASSERT_OK(socket_listen_inherited(addr, &fd));
        ASSERT_EQ(SD_LISTEN_FDS_START, fd);
        ASSERT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
        ASSERT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        ASSERT_TRUE(getenv("LISTEN_FDS") == NULL); /* not handed on to anything it runs */
        close(fd);
}

TEST(another_address_is_refused) {
        char addr[64], other[64];
        unsigned port;
        int fd = -1;

        /* another port */
        ASSERT_OK(pass_socket(true, addr, sizeof addr));
        ASSERT_EQ(1, sscanf(addr, "127.0.0.1:%u", &port));
        snprintf(other, sizeof other, "127.0.0.1:%u", port == 65535 ? 1 : port + 1);
        ASSERT_ERROR(EBADF, socket_listen_inherited(other, &fd));
        close(SD_LISTEN_FDS_START);
        /* another address, the same port */
        ASSERT_OK(pass_socket(true, addr, sizeof addr));
        ASSERT_EQ(1, sscanf(addr, "127.0.0.1:%u", &port));
        snprintf(other, sizeof other, "127.0.0.2:%u", port);
        ASSERT_ERROR(EBADF, socket_listen_inherited(other, &fd));
        ASSERT_EQ(-1, fd);
        close(SD_LISTEN_FDS_START);
}

TEST(a_socket_not_listening_is_refused) {
        char addr[64];
        int fd = -1;

        ASSERT_OK(pass_socket(false, addr, sizeof addr));
        ASSERT_ERROR(EBADF, socket_listen_inherited(addr, &fd));
        ASSERT_EQ(-1, fd);
        close(SD_LISTEN_FDS_START);
}
