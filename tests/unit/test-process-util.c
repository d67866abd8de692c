/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-process-util: safe_fork() children report their exit status and the signal that ended them, a child
 * past its deadline is killed and reaped, the cleanup leaves no child and no zombie, FORK_DEATHSIG kills a
 * child whose parent dies, and the child gets only the fds, stdio and signal state it asked for. */
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "basic/macro.h"
#include "basic/process-util.h"
#include "tests.h"

#define MSEC (1000ULL)
#define SEC (1000ULL * 1000)

/* Is pid our child, exited or not? (a reaped child is ECHILD) */
static bool is_our_child(pid_t pid) {
        siginfo_t si = {};
        return waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

TEST(exit_status) {
        PidRef c = PIDREF_NULL;
        siginfo_t si;
        pid_t pid;
        int r;

        r = safe_fork("(test-exit)", FORK_EXEC_FLAGS, &c);
        ASSERT_OK(r);
        if (r == 0)
                _exit(7);
        ASSERT_TRUE(c.pid > 0);
        ASSERT_TRUE(c.fd >= 0);
        pid = c.pid;
        ASSERT_OK(pidref_wait(&c, USEC_INFINITY, &si));
        ASSERT_EQ(CLD_EXITED, si.si_code);
        ASSERT_EQ(7, si.si_status);
        ASSERT_EQ(pid, si.si_pid);
        ASSERT_FALSE(siginfo_exited_ok(&si));
        /* Reaped and forgotten: nothing left to kill or to wait for. */
        ASSERT_EQ(0, c.pid);
        ASSERT_EQ(-EBADF, c.fd);
        ASSERT_FALSE(is_our_child(pid));
        ASSERT_ERROR(ECHILD, pidref_wait(&c, 0, &si));
}

TEST(killed_by_a_signal) {
        PidRef c = PIDREF_NULL;
        siginfo_t si;
        int r;

        r = safe_fork(NULL, FORK_RESET_SIGNALS, &c);
        ASSERT_OK(r);
        if (r == 0) {
                raise(SIGUSR1);
                _exit(0);
        }
        ASSERT_OK(pidref_wait(&c, 5 * SEC, &si));
        ASSERT_EQ(CLD_KILLED, si.si_code);
        ASSERT_EQ(SIGUSR1, si.si_status);
}

/* A disposition or mask of the parent's does not reach a child that asks for a reset, and does reach one
 * that does not. */
TEST(signals_reset) {
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        PidRef c = PIDREF_NULL;
        siginfo_t si;
        int r;

        ASSERT_OK(sigaction(SIGUSR1, &ign, &old));
        r = safe_fork(NULL, FORK_RESET_SIGNALS, &c);
        if (r == 0) {
                raise(SIGUSR1);
                _exit(0);
        }
        if (r > 0)
                r = pidref_wait(&c, 5 * SEC, &si);
        if (r >= 0 && si.si_code == CLD_KILLED) {
                r = safe_fork(NULL, 0, &c);
                if (r == 0) {
                        raise(SIGUSR1);
                        _exit(3);
                }
                if (r > 0)
                        r = pidref_wait(&c, 5 * SEC, &si);
        }
        (void) sigaction(SIGUSR1, &old, NULL);
        ASSERT_OK(r);
        ASSERT_EQ(CLD_EXITED, si.si_code);
        ASSERT_EQ(3, si.si_status);
}

TEST(timeout_kills_and_reaps) {
        PidRef c = PIDREF_NULL;
        uint64_t t0 = clock_usec(CLOCK_MONOTONIC);
        siginfo_t si;
        pid_t pid;
        int r;

        r = safe_fork(NULL, FORK_RESET_SIGNALS | FORK_DEATHSIG, &c);
        ASSERT_OK(r);
        if (r == 0) {
                pause();
                _exit(0);
        }
        pid = c.pid;
        /* Waiting alone leaves it running and ours. */
        ASSERT_ERROR(ETIMEDOUT, pidref_wait(&c, 50 * MSEC, &si));
        ASSERT_EQ(pid, c.pid);
        ASSERT_ERROR(ETIMEDOUT, pidref_wait(&c, 0, &si));
        ASSERT_EQ(1, pidref_wait_or_kill(&c, 100 * MSEC, &si));
        ASSERT_EQ(CLD_KILLED, si.si_code);
        ASSERT_EQ(SIGKILL, si.si_status);
        ASSERT_TRUE(clock_usec(CLOCK_MONOTONIC) - t0 < 5 * SEC);
        ASSERT_EQ(0, c.pid);
        ASSERT_FALSE(is_our_child(pid));
}

TEST(wait_or_kill_in_time) {
        PidRef c = PIDREF_NULL;
        siginfo_t si;
        int r;

        r = safe_fork(NULL, FORK_EXEC_FLAGS, &c);
        ASSERT_OK(r);
        if (r == 0)
                _exit(0);
        ASSERT_EQ(0, pidref_wait_or_kill(&c, 5 * SEC, &si));
        ASSERT_TRUE(siginfo_exited_ok(&si));
}

/* The cleanup kills and reaps on every path out of a scope: no child, no zombie. */
TEST(cleanup_leaves_no_zombie) {
        pid_t pid = 0;

        {
                _cleanup_(sigkill_waitp) PidRef c = PIDREF_NULL;
                int r = safe_fork(NULL, FORK_RESET_SIGNALS | FORK_DEATHSIG, &c);
                if (r == 0) {
                        pause();
                        _exit(0);
                }
                ASSERT_OK(r);
                pid = c.pid;
                ASSERT_TRUE(is_our_child(pid));
        }
        ASSERT_FALSE(is_our_child(pid));
        ASSERT_TRUE(kill(pid, 0) < 0 && errno == ESRCH);
        /* Idempotent, and fine on nothing. */
        PidRef none = PIDREF_NULL;
        sigkill_wait(&none);
        sigkill_wait(NULL);
        ASSERT_ERROR(ECHILD, pidref_wait(&none, 0, NULL));
}

/* A FORK_DEATHSIG grandchild dies with its parent; without the flag it outlives it. This process becomes
 * a subreaper so that the orphan is re-parented here and its end can be observed. */
static int orphan(ForkFlags flags, siginfo_t *ret_si) {
        _cleanup_(sigkill_waitp) PidRef middle = PIDREF_NULL;
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        PidRef grandchild = PIDREF_NULL;
        int p[2], r;
        pid_t gc;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        rd = p[0];
        wr = p[1];
        r = safe_fork(NULL, FORK_RESET_SIGNALS, &middle);
        if (r < 0)
                return r;
        if (r == 0) {
                int ready[2];
                char x;

                /* The middle dies only once the grandchild is set up: dying earlier would make a
                 * FORK_DEATHSIG grandchild exit by itself (its parent is gone before the prctl). */
                if (pipe2(ready, O_CLOEXEC) < 0)
                        _exit(1);
                r = safe_fork(NULL, FORK_RESET_SIGNALS | flags, &grandchild);
                if (r == 0) {
                        (void) write(ready[1], "x", 1);
                        pause();
                        _exit(0);
                }
                close(ready[1]);
                if (r < 0 || read(ready[0], &x, 1) != 1)
                        _exit(1);
                (void) write(wr, &grandchild.pid, sizeof grandchild.pid);
                _exit(0);
        }
        wr = safe_close(wr);
        if (read(rd, &gc, sizeof gc) != sizeof gc)
                return -EIO;
        r = pidref_wait(&middle, 5 * SEC, NULL);
        if (r < 0)
                return r;
        /* gc is ours now: wait for it a while, then end it ourselves. */
        for (int i = 0; i < 50; i++) {
                siginfo_t si = {};
                if (waitid(P_PID, (id_t) gc, &si, WEXITED | WNOHANG) < 0)
                        return -errno;
                if (si.si_pid == gc) {
                        *ret_si = si;
                        return 1;
                }
                usleep(10 * 1000);
        }
        (void) kill(gc, SIGKILL);
        (void) waitid(P_PID, (id_t) gc, &(siginfo_t) {}, WEXITED);
        return 0;
}

TEST(deathsig_kills_the_orphan) {
        siginfo_t si = {};
        int with, without;

        ASSERT_OK(prctl(PR_SET_CHILD_SUBREAPER, 1));
        with = orphan(FORK_DEATHSIG, &si);
        without = orphan(0, &(siginfo_t) {});
        (void) prctl(PR_SET_CHILD_SUBREAPER, 0);
        ASSERT_EQ(1, with);
        ASSERT_EQ(CLD_KILLED, si.si_code);
        ASSERT_EQ(SIGKILL, si.si_status);
        ASSERT_EQ(0, without);
}

/* Only stdio and the kept fds cross; the kept ones in any order. */
TEST(close_all_but_kept_fds) {
        _cleanup_close_ int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
        _cleanup_close_ int k = open("/dev/null", O_RDONLY);
        PidRef c = PIDREF_NULL;
        siginfo_t si;
        int r;

        ASSERT_TRUE(a >= 0 && b >= 0 && k >= 0);
        r = safe_fork_full(NULL, NULL, (const int[]) { k, 1, a }, 3, FORK_CLOSE_ALL_FDS, &c);
        ASSERT_OK(r);
        if (r == 0)
                _exit(fcntl(a, F_GETFD) >= 0 && fcntl(k, F_GETFD) >= 0 && fcntl(b, F_GETFD) < 0 &&
                      fcntl(STDERR_FILENO, F_GETFD) >= 0 ? 0 : 1);
        ASSERT_OK(pidref_wait(&c, 5 * SEC, &si));
        ASSERT_TRUE(siginfo_exited_ok(&si));
        ASSERT_ERROR(E2BIG, safe_fork_full(NULL, NULL, (const int[FORK_EXCEPT_FDS_MAX + 1]) {},
                                           FORK_EXCEPT_FDS_MAX + 1, FORK_CLOSE_ALL_FDS, &c));
}

/* stdio_fds land on 0..2; -EBADF is /dev/null. */
TEST(rearranged_stdio) {
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        PidRef c = PIDREF_NULL;
        char buf[16] = {};
        siginfo_t si;
        int p[2], r;

        ASSERT_OK(pipe2(p, O_CLOEXEC));
        rd = p[0];
        wr = p[1];
        r = safe_fork_full(NULL, (const int[3]) { -EBADF, wr, wr }, NULL, 0,
                           FORK_EXEC_FLAGS | FORK_REARRANGE_STDIO, &c);
        ASSERT_OK(r);
        if (r == 0) {
                char x;
                bool eof = read(STDIN_FILENO, &x, 1) == 0;
                (void) write(STDOUT_FILENO, "out ", 4);
                (void) write(STDERR_FILENO, "err", 3);
                _exit(eof ? 0 : 1);
        }
        wr = safe_close(wr);
        ASSERT_OK(pidref_wait(&c, 5 * SEC, &si));
        ASSERT_TRUE(siginfo_exited_ok(&si));
        ASSERT_EQ(7, read(rd, buf, sizeof buf - 1));
        ASSERT_STREQ("out err", buf);
}

TEST_MAIN()

static int child_ok(void *userdata) {
        return *(int *) userdata;
}

/* fork_parked: the child is parked (alive, waiting) once in_child succeeded; a failing in_child is -EPERM
 * and leaves no child behind. */
TEST(fork_parked_holds_or_fails) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        siginfo_t si = {};
        int ok = 0, bad = -EINVAL;

        ASSERT_OK(fork_parked("(test-parked)", child_ok, &ok, NULL, 0, &child));
        ASSERT_TRUE(child.pid > 0);
        ASSERT_EQ(0, waitid(P_PID, (id_t) child.pid, &si, WEXITED | WNOHANG | WNOWAIT));
        EXPECT_EQ(0, si.si_pid);        /* still running */
        sigkill_wait(&child);
        EXPECT_EQ(0, child.pid);
        ASSERT_ERROR(EPERM, fork_parked("(test-parked)", child_ok, &bad, NULL, 0, &child));
        EXPECT_EQ(0, child.pid);
}
