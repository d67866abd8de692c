/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* console.c: the console socket's packets, its listening and connecting ends, and the SCM_RIGHTS fd a
 * runtime's --console-socket hands over (console.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "console/console.h"
#include "console/names.h"

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

void console_exec_request_done(ConsoleExecRequest *r) {
        strv_free(r->argv);
        free(r->cwd);
        strv_free(r->env);
        free(r->stdin_data);
        *r = (ConsoleExecRequest) {};
}

static int push_opt(char ***l, const char *fmt, ...) _printf_(2, 3);
static int push_opt(char ***l, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : strv_push(l, s);
}

int console_pack_exec(const ConsoleExecRequest *r, char **ret, size_t *ret_len) {
        _cleanup_strv_free_ char **l = NULL;
        int k = 0;

        if (r->cwd)
                k = push_opt(&l, "cwd=%s", r->cwd);
        for (char **e = r->env; k >= 0 && e && *e; e++)
                k = push_opt(&l, "env=%s", *e);
        if (k >= 0 && r->timeout_ms)
                k = push_opt(&l, "timeout_ms=%" PRIu32, r->timeout_ms);
        if (k >= 0 && r->output_max)
                k = push_opt(&l, "output_max=%" PRIu64, r->output_max);
        if (k >= 0 && r->want_stdin)
                k = push_opt(&l, "stdin");
        if (k >= 0)
                k = push_opt(&l, "--");
        for (char **a = r->argv; k >= 0 && a && *a; a++)
                k = strv_push(&l, strdup(*a));
        if (k < 0)
                return k;
        if (strv_length(r->argv) == 0 || strv_length(r->argv) > CONSOLE_EXEC_ARGS_MAX)
                return -E2BIG;
        return console_pack_argv(l, ret, ret_len);
}

static bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (*s < '0' || *s > '9')
                return -EBADMSG;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end || v > max)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int console_unpack_exec(const char *buf, size_t len, ConsoleExecRequest *ret, const char **ret_error) {
        _cleanup_strv_free_ char **all = NULL;
        ConsoleExecRequest r = {};
        size_t i;
        uint64_t v;
        int k;

        k = console_unpack_argv(buf, len, &all);
        if (k < 0)
                return *ret_error = "exec request: malformed", k;
        for (i = 0; all[i] && !streq(all[i], "--"); i++) {
                const char *o = all[i];

                if (startswith(o, "cwd=") && !r.cwd && o[4] == '/' && strlen(o + 4) < 4096)
                        k = (r.cwd = strdup(o + 4)) ? 0 : -ENOMEM;
                else if (startswith(o, "env=") && env_assignment_ok(o + 4))
                        k = strv_length(r.env) >= CONSOLE_EXEC_ENV_MAX ? -E2BIG : strv_push(&r.env, strdup(o + 4));
                else if (startswith(o, "timeout_ms=") && parse_u64(o + 11, CONSOLE_EXEC_TIMEOUT_MS_MAX, &v) >= 0 &&
                         v > 0)
                        r.timeout_ms = (uint32_t) v, k = 0;
                else if (startswith(o, "output_max=") && parse_u64(o + 11, CONSOLE_EXEC_OUTPUT_MAX, &v) >= 0 &&
                         v > 0)
                        r.output_max = v, k = 0;
                else if (streq(o, "stdin"))
                        r.want_stdin = true, k = 0;
                else
                        k = -EBADMSG;
                if (k < 0) {
                        console_exec_request_done(&r);
                        return *ret_error = k == -E2BIG ? "exec request: too many env entries" :
                                            "exec request: an option is malformed or out of bounds (cwd absolute, "
                                            "env NAME=VALUE, timeout_ms and output_max positive)", k;
                }
        }
        if (!all[i] || !all[i + 1] || !*all[i + 1]) {
                console_exec_request_done(&r);
                return *ret_error = "exec request: no command", -EBADMSG;
        }
        for (char **a = all + i + 1; *a; a++)
                if (strv_push(&r.argv, strdup(*a)) < 0) {
                        console_exec_request_done(&r);
                        return -ENOMEM;
                }
        *ret = r;
        return 0;
}
