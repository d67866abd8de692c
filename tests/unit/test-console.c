/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-console.c: the console socket's pieces (console.c): an exec's argv packed and unpacked (refusing
 * what the supervisor must not run), the fd a runtime hands to --console-socket (one fd; none at all is an
 * error, never a hang on a connection that closes), the socket's mode set before anyone can connect, and
 * the peer's uid. */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "console/console.h"
#include "tests.h"

TEST_MAIN();

TEST(argv_round_trip) {
        char *argv[] = { (char *) "sh", (char *) "-c", (char *) "", (char *) "x y", NULL };
        _cleanup_free_ char *packed = NULL;
        _cleanup_strv_free_ char **back = NULL;
        size_t len;

        ASSERT_OK(console_pack_argv(argv, &packed, &len));
        ASSERT_EQ((size_t) 11, len);
        ASSERT_OK(console_unpack_argv(packed, len, &back));
        ASSERT_EQ((size_t) 4, strv_length(back));
        ASSERT_STREQ("", back[2]);
        ASSERT_STREQ("x y", back[3]);
}

TEST(argv_refused) {
        char *none[] = { NULL };
        _cleanup_strv_free_ char **l = NULL;
        char *packed = NULL;
        size_t len;

        ASSERT_ERROR(E2BIG, console_pack_argv(none, &packed, &len));
        ASSERT_ERROR(EBADMSG, console_unpack_argv("", 0, &l));
        ASSERT_ERROR(EBADMSG, console_unpack_argv("sh", 2, &l));        /* not NUL-terminated */
        ASSERT_ERROR(EBADMSG, console_unpack_argv("\0x", 3, &l));       /* an empty command */
}

static void send_fds(int sock, const int *fds, size_t n) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        struct iovec iov = { (void *) "x", 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (n > 0) {
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
                CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
                CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), fds, sizeof(int) * n);
        }
        (void) sendmsg(sock, &mh, MSG_NOSIGNAL);
}

TEST(recv_fd) {
        int sp[2], p[2], got = -EBADF;

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ? -errno : 0);
        ASSERT_OK(pipe2(p, O_CLOEXEC) < 0 ? -errno : 0);
        /* two fds: the first is taken, the second closed */
        send_fds(sp[0], p, 2);
        ASSERT_OK(console_recv_fd(sp[1], &got));
        ASSERT_TRUE(got >= 0);
        ASSERT_TRUE(fcntl(got, F_GETFD) & FD_CLOEXEC);
        close(got);
        /* bytes without an fd */
        send_fds(sp[0], NULL, 0);
        ASSERT_ERROR(EBADMSG, console_recv_fd(sp[1], &got));
        /* a runtime that connected and died: end of file, not a hang */
        close(sp[0]);
        ASSERT_ERROR(EBADMSG, console_recv_fd(sp[1], &got));
        close(sp[1]);
        close(p[0]);
        close(p[1]);
}

TEST(listen_mode_and_peer) {
        char dir[] = "/tmp/test-console-XXXXXX", path[64], long_path[200];
        int l, c, a;
        struct stat st;
        uid_t uid;

        memset(long_path, 'a', sizeof long_path - 1);
        long_path[0] = '/';
        long_path[sizeof long_path - 1] = 0;
        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(path, sizeof path, "%s/console.sock", dir);
        ASSERT_OK(console_listen(path, SOCK_SEQPACKET, 0600, &l));
        ASSERT_OK(stat(path, &st) < 0 ? -errno : 0);
        ASSERT_EQ((mode_t) 0600, st.st_mode & 07777);
        ASSERT_OK(console_connect(path, &c));
        a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        ASSERT_TRUE(a >= 0);
        ASSERT_OK(console_peer_uid(a, &uid));
        ASSERT_EQ(getuid(), uid);
        /* one packet is one message */
        ASSERT_OK(console_send(c, CONSOLE_INPUT, "abc", 3, false));
        ASSERT_OK(console_send(c, CONSOLE_EOF, NULL, 0, false));
        {
                char buf[16];
                ASSERT_EQ((ssize_t) 4, recv(a, buf, sizeof buf, 0));
                ASSERT_EQ(CONSOLE_INPUT, buf[0]);
                ASSERT_EQ((ssize_t) 1, recv(a, buf, sizeof buf, 0));
                ASSERT_EQ(CONSOLE_EOF, buf[0]);
        }
        ASSERT_ERROR(EMSGSIZE, console_send(c, CONSOLE_INPUT, long_path, CONSOLE_DATA_MAX + 1, false));
        close(a);
        close(c);
        close(l);
        unlink(path);
        rmdir(dir);
        ASSERT_ERROR(ENAMETOOLONG, console_listen(long_path, SOCK_SEQPACKET, 0600, &l));
}
