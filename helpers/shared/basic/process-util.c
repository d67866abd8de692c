/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* process-util.c: forking, waiting and killing children through pidfds. The child side of safe_fork()
 * runs between fork and exec in a possibly multi-threaded parent, so it only makes async-signal-safe
 * calls: no allocation, no stdio, no logging. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "basic/process-util.h"

static int pidfd_open(pid_t pid) {
        return (int) syscall(SYS_pidfd_open, pid, 0);
}

static void reset_signals(void) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t none;

        for (int sig = 1; sig < _NSIG; sig++)
                (void) sigaction(sig, &sa, NULL); /* SIGKILL, SIGSTOP and libc's own: EINVAL, fine */
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
}

static int close_range_fallback(unsigned first, unsigned last) {
        long max = sysconf(_SC_OPEN_MAX);

        if (max < 0 || max > INT_MAX)
                max = 65536;
        for (unsigned fd = first; fd <= last && fd < (unsigned) max; fd++)
                (void) close((int) fd);
        return 0;
}

static int close_between(unsigned first, unsigned last) {
        if (first > last)
                return 0;
        if (syscall(SYS_close_range, first, last, 0) >= 0)
                return 0;
        if (errno != ENOSYS && errno != EPERM)
                return -errno;
        return close_range_fallback(first, last); /* old kernel, or a seccomp filter that hides it */
}

int close_all_fds(const int except_fds[], size_t n_except_fds) {
        int keep[FORK_EXCEPT_FDS_MAX];
        size_t n = 0;
        unsigned next = 3;
        int r;

        if (n_except_fds > FORK_EXCEPT_FDS_MAX)
                return -E2BIG;
        /* Insertion sort into a stack array: no allocation after fork. */
        for (size_t i = 0; i < n_except_fds; i++) {
                size_t j = n;
                if (except_fds[i] < 3)
                        continue;
                while (j > 0 && keep[j - 1] > except_fds[i]) {
                        keep[j] = keep[j - 1];
                        j--;
                }
                keep[j] = except_fds[i];
                n++;
        }
        for (size_t i = 0; i < n; i++) {
                r = close_between(next, (unsigned) keep[i] - 1);
                if (r < 0)
                        return r;
                next = (unsigned) keep[i] + 1;
        }
        return close_between(next, ~0U);
}

/* stdio_fds[i] onto fd i. A source that is itself 0..2 is first moved above 2 so that an earlier dup2
 * cannot overwrite it; a -EBADF slot gets /dev/null. */
static int rearrange_stdio(const int stdio_fds[3]) {
        int fds[3];

        for (int i = 0; i < 3; i++) {
                fds[i] = stdio_fds[i];
                if (fds[i] < 0) {
                        fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
                        if (fds[i] < 0)
                                return -errno;
                }
                if (fds[i] < 3 && fds[i] != i) {
                        fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
                        if (fds[i] < 0)
                                return -errno;
                }
        }
        for (int i = 0; i < 3; i++)
                if (fds[i] == i) {
                        if (fcntl(i, F_SETFD, 0) < 0)  /* it must survive exec */
                                return -errno;
                } else if (dup2(fds[i], i) < 0)
                        return -errno;
        return 0;
}

/* Everything the child does before returning to its caller; on failure it exits at once. */
static void child_setup(const char *name, const int stdio_fds[3], const int except_fds[], size_t n_except_fds,
                        ForkFlags flags, pid_t parent, const sigset_t *saved_mask) {
        if (name)
                (void) prctl(PR_SET_NAME, (unsigned long) name, 0, 0, 0);
        if (flags & FORK_RESET_SIGNALS)
                reset_signals();
        else
                (void) sigprocmask(SIG_SETMASK, saved_mask, NULL);
        if (flags & FORK_DEATHSIG) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        _exit(EXIT_FAILURE);
                /* The parent may have died before the prctl: then nobody would ever send it. */
                if (getppid() != parent)
                        _exit(EXIT_FAILURE);
        }
        if ((flags & FORK_REARRANGE_STDIO) && rearrange_stdio(stdio_fds) < 0)
                _exit(EXIT_FAILURE);
        if ((flags & FORK_CLOSE_ALL_FDS) && close_all_fds(except_fds, n_except_fds) < 0)
                _exit(EXIT_FAILURE);
}

int safe_fork_full(const char *name, const int stdio_fds[3], const int except_fds[], size_t n_except_fds,
                   ForkFlags flags, PidRef *ret) {
        static const int null_stdio[3] = { -EBADF, -EBADF, -EBADF };
        pid_t parent = getpid(), pid;
        sigset_t all, saved;
        int fd;

        if (n_except_fds > FORK_EXCEPT_FDS_MAX)
                return -E2BIG;
        sigfillset(&all);
        if (sigprocmask(SIG_SETMASK, &all, &saved) < 0)
                return -errno;
        pid = fork();
        if (pid == 0) {
                child_setup(name, stdio_fds ?: null_stdio, except_fds, n_except_fds, flags, parent, &saved);
                return 0;
        }
        if (pid < 0) {
                int r = -errno;
                (void) sigprocmask(SIG_SETMASK, &saved, NULL);
                return r;
        }
        (void) sigprocmask(SIG_SETMASK, &saved, NULL);
        /* Only this process reaps the child, so its pid cannot be reused before pidfd_open. */
        fd = pidfd_open(pid);
        if (fd < 0) {
                int r = -errno;
                PidRef p = { .pid = pid, .fd = -EBADF };
                sigkill_wait(&p);
                return r;
        }
        *ret = (PidRef) { .pid = pid, .fd = fd };
        return 1;
}

static void pidref_done(PidRef *p) {
        p->fd = safe_close(p->fd);
        p->pid = 0;
}

static int reap(PidRef *p, siginfo_t *ret_si) {
        siginfo_t si = {};

        while (waitid(P_PID, (id_t) p->pid, &si, WEXITED) < 0)
                if (errno != EINTR)
                        return -errno;
        pidref_done(p);
        if (ret_si)
                *ret_si = si;
        return 0;
}

int pidref_wait(PidRef *p, uint64_t timeout_usec, siginfo_t *ret_si) {
        uint64_t deadline;

        if (p->pid <= 0)
                return -ECHILD;
        if (p->fd < 0 || timeout_usec == USEC_INFINITY)
                return reap(p, ret_si);
        deadline = clock_usec(CLOCK_MONOTONIC) + timeout_usec;
        for (;;) {
                struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
                uint64_t now = clock_usec(CLOCK_MONOTONIC);
                uint64_t left_ms = now >= deadline ? 0 : (deadline - now + 999) / 1000;
                int ms = left_ms > INT_MAX ? INT_MAX : (int) left_ms;
                int k = poll(&pfd, 1, ms);

                if (k > 0)
                        return reap(p, ret_si);
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k == 0 && ms == 0)
                        return -ETIMEDOUT;
        }
}

int pidref_wait_or_kill(PidRef *p, uint64_t timeout_usec, siginfo_t *ret_si) {
        int r = pidref_wait(p, timeout_usec, ret_si);

        if (r != -ETIMEDOUT)
                return r;
        r = pidref_kill(p, SIGKILL);
        if (r < 0)
                return r;
        r = reap(p, ret_si);
        return r < 0 ? r : 1;
}

int pidref_kill(const PidRef *p, int sig) {
        if (p->pid <= 0)
                return -ESRCH;
        if (p->fd >= 0 && syscall(SYS_pidfd_send_signal, p->fd, sig, NULL, 0) >= 0)
                return 0;
        if (p->fd >= 0 && errno != ENOSYS)
                return -errno;
        return kill(p->pid, sig) < 0 ? -errno : 0;
}

void sigkill_wait(PidRef *p) {
        if (!p)
                return;
        if (p->pid > 0) {
                (void) pidref_kill(p, SIGKILL);
                (void) reap(p, NULL);
        }
        pidref_done(p);
}

int fork_parked(const char *name, int (*in_child)(void *userdata), void *userdata, const int except_fds[],
                size_t n_except_fds, PidRef *ret) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        int sync_pipe[2], keep[FORK_EXCEPT_FDS_MAX], r;
        char c;

        if (n_except_fds >= FORK_EXCEPT_FDS_MAX)
                return -E2BIG;
        if (pipe2(sync_pipe, O_CLOEXEC) < 0)
                return -errno;
        for (size_t i = 0; i < n_except_fds; i++)
                keep[i] = except_fds[i];
        keep[n_except_fds] = sync_pipe[1];
        r = safe_fork_full(name, NULL, keep, n_except_fds + 1, FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_CLOSE_ALL_FDS,
                           &child);
        if (r < 0) {
                (void) close(sync_pipe[0]);
                (void) close(sync_pipe[1]);
                return r;
        }
        if (r == 0) {
                if (in_child(userdata) < 0)
                        _exit(1);
                (void) write(sync_pipe[1], "x", 1);
                pause();
                _exit(0);
        }
        (void) close(sync_pipe[1]);
        /* EOF: in_child failed and the child exited. */
        r = read(sync_pipe[0], &c, 1) == 1 ? 0 : -EPERM;
        (void) close(sync_pipe[0]);
        if (r < 0)
                return r;
        *ret = child;
        child = (PidRef) PIDREF_NULL;
        return 0;
}
