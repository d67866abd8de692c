/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* serve.c: pond-init as the job's first process: it starts the payload as its child, reaps every orphan
 * (it is PID 1 of the job), forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the payload,
 * and runs the supervisor's exec requests from its channel (console/init-proto.h) as children of its own:
 * each inherits what the init has (uid, no capabilities, the seccomp filter, Landlock, namespaces, cgroup,
 * rlimits), in a process group of its own that a timeout kills; a copy (files.c) runs in the fork itself.
 * The payload's end is the init's: reported on the channel, then the init exits with its status. No heap:
 * fixed buffers, every length checked. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "console/init-proto.h"
#include "console/names.h"
#include "files.h"
#include "serve.h"

/* After a command exited, its pipes quiet for this long are closed: a background child holding them does
 * not hold the call. */
#define DRAIN_MS 100
#define EXIT_REFUSED 126
#define EXIT_NOT_FOUND 127

typedef struct Slot {
        bool used;
        pid_t pid;              /* > 0 until reaped */
        int status;             /* its wait status, once reaped */
        int out[2];             /* stdout, stderr read ends; -1 at their end */
        int in;                 /* its stdin's write end while stdin bytes remain (streamed: until its end) */
        size_t stdin_len, stdin_done;
        bool stream;            /* INIT_EXEC_STDIN_STREAM: stdin comes in INIT_STDIN frames */
        bool stream_ended;      /* the empty INIT_STDIN came */
        uint64_t sent, max;
        uint64_t deadline_ms, drain_ms;
        uint32_t flags;
        bool awaiting_ack;
} Slot;

static Slot slots[INIT_SLOTS];
static char stdin_bufs[INIT_SLOTS][INIT_STDIN_MAX];
static char in_buf[sizeof(InitFrame) + INIT_FRAME_MAX];
static size_t in_len;
static int channel = -1;
static sigset_t forwarded;
static const int forward_signals[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void channel_close(void) {
        if (channel >= 0)
                close(channel);
        channel = -1;
        in_len = 0;
        /* nobody to report to: what runs of the execs goes */
        for (int i = 0; i < INIT_SLOTS; i++)
                if (slots[i].used && slots[i].pid > 0)
                        kill(-slots[i].pid, SIGKILL);
}

static void send_frame(unsigned slot, int type, const void *data, size_t len) {
        InitFrame h = { .len = (uint32_t) len, .slot = (uint16_t) slot, .type = (uint8_t) type };
        struct iovec iov[2] = { { &h, sizeof h }, { (void *) data, len } };
        struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
        size_t left = sizeof h + len;

        while (channel >= 0 && left > 0) {
                ssize_t n = sendmsg(channel, &m, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        channel_close();
                        return;
                }
                left -= (size_t) n;
                while (n > 0 && m.msg_iovlen > 0) {
                        size_t k = (size_t) n < m.msg_iov[0].iov_len ? (size_t) n : m.msg_iov[0].iov_len;

                        m.msg_iov[0].iov_base = (char *) m.msg_iov[0].iov_base + k;
                        m.msg_iov[0].iov_len -= k;
                        n -= (ssize_t) k;
                        if (m.msg_iov[0].iov_len == 0) {
                                m.msg_iov++;
                                m.msg_iovlen--;
                        }
                }
        }
}

static void slot_free(Slot *s) {
        for (int k = 0; k < 2; k++)
                if (s->out[k] >= 0)
                        close(s->out[k]);
        if (s->in >= 0)
                close(s->in);
        *s = (Slot) { .out = { -1, -1 }, .in = -1 };
}

/* In the child: the signals the init blocked unblocked, stdio in place, nothing else open. */
static void child_stdio(int in, int out, int err) {
        sigset_t none;

        sigemptyset(&none);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if ((in != 0 && dup2(in, 0) < 0) || (out != 1 && dup2(out, 1) < 0) || (err != 2 && dup2(err, 2) < 0))
                _exit(EXIT_REFUSED);
        syscall(SYS_close_range, 3U, (unsigned) INT_MAX, 0U);
}

_Noreturn static void child_exec(char **argv) {
        int r;

        execvp(argv[0], argv);
        r = errno;
        fprintf(stderr, "pond-init: cannot execute %s: %s\n", argv[0], strerror(r));
        _exit(r == ENOENT ? EXIT_NOT_FOUND : EXIT_REFUSED);
}

/* "a\0b\0" -> pointers, n strings exactly, within len; the rest's offset in *ret_used. */
static int split_strings(char *p, size_t len, uint32_t n, char **ret, size_t *ret_used) {
        size_t off = 0;

        for (uint32_t i = 0; i < n; i++) {
                char *end = memchr(p + off, 0, len - off);

                if (!end)
                        return -EBADMSG;
                ret[i] = p + off;
                off = (size_t) (end - p) + 1;
        }
        *ret_used = off;
        return 0;
}

static void exec_fail(unsigned slot, const char *why) {
        InitExit x = { .status = EXIT_REFUSED, .flags = INIT_EXIT_NOT_STARTED };

        send_frame(slot, INIT_STDERR, why, strlen(why));
        send_frame(slot, INIT_EXIT, &x, sizeof x);
}

/* One INIT_EXEC: checked against the header's counts and bounds, then forked. */
static void exec_start(unsigned slot, char *p, size_t len) {
        char *argv[INIT_ARGV_MAX + 2], *env[INIT_ENV_MAX + 1], *cwd;
        InitExecHeader h;
        Slot *s = &slots[slot];
        int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 };
        size_t used, rest;
        bool piped;

        if (len < sizeof h)
                return channel_close();
        memcpy(&h, p, sizeof h);
        p += sizeof h;
        len -= sizeof h;
        if (h.reserved != 0 || (h.flags & ~INIT_EXEC_STDIN_STREAM) ||
            ((h.flags & INIT_EXEC_STDIN_STREAM) && h.stdin_len != 0))
                return channel_close();
        if (h.n_argv == 0 || h.n_argv > INIT_ARGV_MAX || h.n_env > INIT_ENV_MAX || h.stdin_len > INIT_STDIN_MAX ||
            h.stdin_len > len || split_strings(p, len - h.stdin_len, 1, &cwd, &used) < 0 ||
            split_strings(p + used, len - h.stdin_len - used, h.n_argv, argv, &rest) < 0)
                return channel_close();
        used += rest;
        if (split_strings(p + used, len - h.stdin_len - used, h.n_env, env, &rest) < 0 ||
            used + rest + h.stdin_len != len)
                return channel_close();
        argv[h.n_argv] = NULL;
        for (uint32_t i = 0; i < h.n_env; i++)
                if (!env_assignment_ok(env[i]))
                        return channel_close();
        if (cwd[0] && cwd[0] != '/')
                return channel_close();
        *s = (Slot) { .used = true, .out = { -1, -1 }, .in = -1, .max = h.output_max,
                      .deadline_ms = h.timeout_ms ? now_ms() + h.timeout_ms : 0,
                      .stream = h.flags & INIT_EXEC_STDIN_STREAM };
        memcpy(stdin_bufs[slot], p + len - h.stdin_len, h.stdin_len);
        s->stdin_len = h.stdin_len;
        piped = h.stdin_len > 0 || s->stream;
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || (piped && pipe2(in, O_CLOEXEC) < 0))
                goto fail;
        s->pid = fork();
        if (s->pid < 0)
                goto fail;
        if (s->pid == 0) {
                int null = piped ? in[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);

                (void) setpgid(0, 0);
                if (null < 0)
                        _exit(EXIT_REFUSED);
                child_stdio(null, out[1], err[1]);
                if (cwd[0] && chdir(cwd) < 0) {
                        fprintf(stderr, "pond-init: cannot change to %s: %s\n", cwd, strerror(errno));
                        _exit(EXIT_REFUSED);
                }
                for (uint32_t i = 0; i < h.n_env; i++)
                        if (putenv(env[i]) < 0)
                                _exit(EXIT_REFUSED);
                /* a copy runs here, in the fork, with no new execve: Landlock's exec rules (which do not name
                 * /dev) and the mounts' noexec do not stand in its way, and it needs nothing of the image */
                if (files_self(argv))
                        _exit(files_main((int) h.n_argv, argv));
                child_exec(argv);
        }
        /* the parent's too, so that a timeout finds the group even before the child has run */
        (void) setpgid(s->pid, s->pid);
        close(out[1]);
        close(err[1]);
        s->out[0] = out[0];
        s->out[1] = err[0];
        fcntl(out[0], F_SETFL, O_NONBLOCK);
        fcntl(err[0], F_SETFL, O_NONBLOCK);
        if (piped) {
                close(in[0]);
                s->in = in[1];
                fcntl(in[1], F_SETFL, O_NONBLOCK);
        }
        return;
fail:
        for (int k = 0; k < 2; k++) {
                if (out[k] >= 0)
                        close(out[k]);
                if (err[k] >= 0)
                        close(err[k]);
                if (in[k] >= 0)
                        close(in[k]);
        }
        slot_free(s);
        exec_fail(slot, "pond-init: cannot start the command (fork or pipe failed)\n");
}

/* One INIT_STDIN of a streamed stdin: kept until the pipe took it, then INIT_STDIN_TAKEN. Bytes for a
 * command that closed its stdin are dropped (and taken); a frame for a slot that ended meanwhile (the
 * supervisor sent it before it read the INIT_EXIT) is nothing. */
static void stdin_frame(unsigned slot, const char *p, size_t len) {
        Slot *s = &slots[slot];

        if (!s->used)
                return;
        if (!s->stream || s->stream_ended || s->stdin_done < s->stdin_len || len > INIT_STDIN_MAX)
                return channel_close();
        if (len == 0) {
                s->stream_ended = true;
                if (s->in >= 0)
                        close(s->in);
                s->in = -1;
                return;
        }
        if (s->in < 0)
                return send_frame(slot, INIT_STDIN_TAKEN, NULL, 0);
        memcpy(stdin_bufs[slot], p, len);
        s->stdin_len = len;
        s->stdin_done = 0;
}

static void dispatch(const InitFrame *h, char *p) {
        Slot *s = h->slot < INIT_SLOTS ? &slots[h->slot] : NULL;

        if (!s || h->reserved != 0)
                return channel_close();
        switch (h->type) {
        case INIT_EXEC:
                if (s->used)
                        return channel_close();
                return exec_start(h->slot, p, h->len);
        case INIT_ACK:
                if (h->len != 0)
                        return channel_close();
                s->awaiting_ack = false; /* an ACK of a slot that ended since is nothing */
                return;
        case INIT_STDIN:
                return stdin_frame(h->slot, p, h->len);
        default:
                return channel_close();
        }
}

static void channel_read(void) {
        size_t off = 0;
        ssize_t n;

        n = recv(channel, in_buf + in_len, sizeof in_buf - in_len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0)
                return channel_close();
        in_len += (size_t) n;
        while (channel >= 0 && in_len - off >= sizeof(InitFrame)) {
                InitFrame h;

                memcpy(&h, in_buf + off, sizeof h);
                if (h.len > INIT_FRAME_MAX)
                        return channel_close();
                if (in_len - off < sizeof h + h.len)
                        break;
                dispatch(&h, in_buf + off + sizeof h);
                off += sizeof h + h.len;
        }
        if (channel >= 0 && off > 0) {
                memmove(in_buf, in_buf + off, in_len - off);
                in_len -= off;
        }
}

/* One read of a command's stdout or stderr: sent up to its cap, then one frame waits for its ACK. */
static void slot_read(unsigned slot, int k) {
        static char buf[INIT_CHUNK_MAX];
        Slot *s = &slots[slot];
        ssize_t n = read(s->out[k], buf, sizeof buf);
        size_t take;

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                close(s->out[k]);
                s->out[k] = -1;
                return;
        }
        if (s->pid <= 0)
                s->drain_ms = now_ms() + DRAIN_MS;
        take = s->sent >= s->max ? 0 : (size_t) n < s->max - s->sent ? (size_t) n : (size_t) (s->max - s->sent);
        if (take < (size_t) n)
                s->flags |= INIT_EXIT_TRUNCATED;
        if (take == 0)
                return;
        s->sent += take;
        s->awaiting_ack = true;
        send_frame(slot, k == 0 ? INIT_STDOUT : INIT_STDERR, buf, take);
}

static void slot_write_stdin(Slot *s, unsigned slot) {
        ssize_t n = write(s->in, stdin_bufs[slot] + s->stdin_done, s->stdin_len - s->stdin_done);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n > 0)
                s->stdin_done += (size_t) n;
        if (n < 0 || (!s->stream && s->stdin_done == s->stdin_len)) {
                close(s->in);
                s->in = -1;
        }
        if (s->stream && (n < 0 || s->stdin_done == s->stdin_len)) {
                s->stdin_len = s->stdin_done = 0;
                send_frame(slot, INIT_STDIN_TAKEN, NULL, 0);
        }
}

static void slot_maybe_end(unsigned slot, uint64_t now) {
        Slot *s = &slots[slot];
        InitExit x;

        if (!s->used || s->pid > 0 || s->awaiting_ack)
                return;
        if ((s->out[0] >= 0 || s->out[1] >= 0) && now < s->drain_ms)
                return;
        x.status = WIFEXITED(s->status) ? WEXITSTATUS(s->status) : 128 + WTERMSIG(s->status);
        x.flags = s->flags;
        slot_free(s);
        send_frame(slot, INIT_EXIT, &x, sizeof x);
}

/* Every child that ended: the payload's status in *payload_status (returns true), execs' in their slot. */
static bool reap(pid_t payload, int *payload_status) {
        bool ended = false;
        int st;
        pid_t pid;

        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
                if (pid == payload) {
                        *payload_status = st;
                        ended = true;
                        continue;
                }
                for (int i = 0; i < INIT_SLOTS; i++)
                        if (slots[i].used && slots[i].pid == pid) {
                                slots[i].pid = 0;
                                slots[i].status = st;
                                slots[i].drain_ms = now_ms() + DRAIN_MS;
                        }
        }
        return ended;
}

static void on_signal(int sfd, pid_t payload, pid_t *payload_alive, int *payload_status) {
        struct signalfd_siginfo si;

        while (read(sfd, &si, sizeof si) == sizeof si) {
                if (si.ssi_signo == SIGCHLD)
                        continue;
                if (*payload_alive > 0)
                        kill(payload, (int) si.ssi_signo);
        }
        if (reap(payload, payload_status))
                *payload_alive = 0;
}

static int poll_timeout(uint64_t now) {
        uint64_t t = UINT64_MAX;

        for (int i = 0; i < INIT_SLOTS; i++) {
                if (!slots[i].used)
                        continue;
                if (slots[i].pid > 0 && slots[i].deadline_ms && slots[i].deadline_ms < t)
                        t = slots[i].deadline_ms;
                if (slots[i].pid <= 0 && slots[i].drain_ms < t)
                        t = slots[i].drain_ms;
        }
        if (t == UINT64_MAX)
                return -1;
        return t <= now ? 0 : t - now > 60000 ? 60000 : (int) (t - now);
}

static void slots_tick(uint64_t now) {
        for (unsigned i = 0; i < INIT_SLOTS; i++) {
                Slot *s = &slots[i];

                if (s->used && s->pid > 0 && s->deadline_ms && now >= s->deadline_ms) {
                        kill(-s->pid, SIGKILL);
                        s->flags |= INIT_EXIT_TIMED_OUT;
                        s->deadline_ms = 0;
                }
                if (s->used && s->pid <= 0 && now >= s->drain_ms && !s->awaiting_ack)
                        for (int k = 0; k < 2; k++)
                                if (s->out[k] >= 0) {
                                        close(s->out[k]);
                                        s->out[k] = -1;
                                }
                slot_maybe_end(i, now);
        }
}

/* The loop's fds: the signals, the channel, each slot's pipes; which slot and stream each one is. */
static nfds_t poll_set(struct pollfd *pfd, int sfd, int *who) {
        nfds_t n = 0;

        pfd[n++] = (struct pollfd) { .fd = sfd, .events = POLLIN };
        who[0] = -1;
        if (channel >= 0) {
                who[n] = -1;
                pfd[n++] = (struct pollfd) { .fd = channel, .events = POLLIN };
        }
        for (int i = 0; i < INIT_SLOTS; i++) {
                Slot *s = &slots[i];

                for (int k = 0; k < 2 && s->used && !s->awaiting_ack; k++)
                        if (s->out[k] >= 0) {
                                who[n] = i * 4 + k;
                                pfd[n++] = (struct pollfd) { .fd = s->out[k], .events = POLLIN };
                        }
                if (s->used && s->in >= 0 && s->stdin_done < s->stdin_len) {
                        who[n] = i * 4 + 2;
                        pfd[n++] = (struct pollfd) { .fd = s->in, .events = POLLOUT };
                }
        }
        return n;
}

static int payload_start(char **argv) {
        pid_t pid = fork();

        if (pid != 0)
                return pid < 0 ? -errno : pid;
        /* a process group of its own, the terminal's foreground one where there is a terminal: Ctrl-C is
         * the payload's alone, as when it was the container's first process */
        (void) setpgid(0, 0);
        if (isatty(0)) {
                sigset_t ttou;

                sigemptyset(&ttou);
                sigaddset(&ttou, SIGTTOU);
                sigprocmask(SIG_BLOCK, &ttou, NULL);
                (void) tcsetpgrp(0, getpid());
        }
        child_stdio(0, 1, 2);
        child_exec(argv);
}

int serve(char **argv, int channel_fd) {
        struct pollfd pfd[2 + INIT_SLOTS * 3];
        int who[2 + INIT_SLOTS * 3];
        int sfd, payload_status = 0;
        pid_t payload, alive;

        for (int i = 0; i < INIT_SLOTS; i++)
                slots[i] = (Slot) { .out = { -1, -1 }, .in = -1 };
        channel = channel_fd;
        sigemptyset(&forwarded);
        for (size_t i = 0; i < sizeof forward_signals / sizeof forward_signals[0]; i++)
                sigaddset(&forwarded, forward_signals[i]);
        /* a write to a command's stdin it closed is an error here, not a signal (its children get the
         * default back) */
        signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &forwarded, NULL) < 0)
                return EXIT_REFUSED;
        sfd = signalfd(-1, &forwarded, SFD_NONBLOCK | SFD_CLOEXEC);
        if (sfd < 0) {
                fprintf(stderr, "pond-init: signalfd: %s\n", strerror(errno));
                return EXIT_REFUSED;
        }
        payload = payload_start(argv);
        if (payload < 0) {
                fprintf(stderr, "pond-init: cannot start the payload: %s\n", strerror(-payload));
                return EXIT_REFUSED;
        }
        alive = payload;
        while (alive > 0) {
                nfds_t n = poll_set(pfd, sfd, who);
                uint64_t now;

                if (poll(pfd, n, poll_timeout(now_ms())) < 0 && errno != EINTR)
                        break;
                if (pfd[0].revents)
                        on_signal(sfd, payload, &alive, &payload_status);
                if (alive <= 0)
                        break;
                for (nfds_t i = 1; i < n; i++) {
                        if (!pfd[i].revents)
                                continue;
                        if (who[i] < 0) {
                                if (pfd[i].fd == channel)
                                        channel_read();
                                continue;
                        }
                        if (!slots[who[i] / 4].used)
                                continue;
                        if (who[i] % 4 == 2) {
                                if (slots[who[i] / 4].in == pfd[i].fd)
                                        slot_write_stdin(&slots[who[i] / 4], (unsigned) who[i] / 4);
                        } else if (slots[who[i] / 4].out[who[i] % 4] == pfd[i].fd)
                                slot_read((unsigned) who[i] / 4, who[i] % 4);
                }
                now = now_ms();
                slots_tick(now);
        }
        if (alive > 0) {
                /* poll failed: nothing left to serve with; the payload's end is still the init's */
                channel_close();
                while (waitpid(payload, &payload_status, 0) < 0 && errno == EINTR)
                        ;
        }
        send_frame(INIT_SLOT_PAYLOAD, INIT_PAYLOAD, &(int32_t) { payload_status }, sizeof(int32_t));
        return WIFEXITED(payload_status) ? WEXITSTATUS(payload_status) : 128 + WTERMSIG(payload_status);
}
