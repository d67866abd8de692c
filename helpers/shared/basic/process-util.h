/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* process-util.h: child processes made one way: safe_fork() hands back the child as a pid plus a pidfd
 * (a PidRef), pidref_wait() waits on the pidfd with a deadline, and sigkill_wait() (as a cleanup,
 * crun's cleanup_pid) kills and reaps whatever is still running, so no error path leaves a child or a
 * zombie behind. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"

#ifndef USEC_INFINITY
#define USEC_INFINITY UINT64_MAX
#endif

typedef struct PidRef {
        pid_t pid;      /* 0: no child (never forked, or already reaped) */
        int fd;         /* its pidfd, or -EBADF */
} PidRef;

#define PIDREF_NULL ((PidRef) { .pid = 0, .fd = -EBADF })

/* What the child gets done before safe_fork() returns in it. */
typedef enum ForkFlags {
        FORK_RESET_SIGNALS   = 1 << 0, /* default dispositions, nothing blocked (else: the parent's mask) */
        FORK_DEATHSIG        = 1 << 1, /* SIGKILLed when the forking thread dies */
        FORK_CLOSE_ALL_FDS   = 1 << 2, /* every fd above stderr closed, except except_fds */
        FORK_REARRANGE_STDIO = 1 << 3, /* stdio_fds[i] becomes fd i; -EBADF there: /dev/null */
} ForkFlags;

/* What a child that execs a program normally wants. */
#define FORK_EXEC_FLAGS (FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_CLOSE_ALL_FDS)

/* The most fds FORK_CLOSE_ALL_FDS keeps (the child cannot allocate to sort a longer list). */
#define FORK_EXCEPT_FDS_MAX 16

/* Forks. In the child returns 0 (leave it with _exit() or an exec, never return to the caller's caller);
 * in the parent returns 1 and the child in *ret. name (or NULL) becomes the child's comm, e.g.
 * "(pond-userns)". Signals stay blocked across the fork itself, so the child runs no inherited handler
 * before it has reset them. Without a pidfd the child is killed and reaped and the error returned. */
int safe_fork_full(const char *name, const int stdio_fds[3], const int except_fds[], size_t n_except_fds,
                   ForkFlags flags, PidRef *ret);
static inline int safe_fork(const char *name, ForkFlags flags, PidRef *ret) {
        return safe_fork_full(name, NULL, NULL, 0, flags, ret);
}

/* Forks a child that runs in_child(userdata) (in the child: only except_fds and stdio stay open) and, if that
 * returned >= 0, waits to be killed: a process that exists only to hold what it made (a namespace) while
 * the parent uses it through /proc/PID. Returns once in_child has returned: 0 and the child in *ret (the
 * caller kills it, sigkill_waitp), or -EPERM if in_child failed (the child has exited). */
int fork_parked(const char *name, int (*in_child)(void *userdata), void *userdata, const int except_fds[],
                size_t n_except_fds, PidRef *ret);

/* In a child: closes every fd above stderr except the listed ones (close_range, else one by one). */
int close_all_fds(const int except_fds[], size_t n_except_fds);

/* Waits until the child exits, at most timeout_usec (USEC_INFINITY: no limit; 0: only looks). Reaped:
 * 0, *ret_si its status, and p becomes PIDREF_NULL. Still running at the deadline: -ETIMEDOUT and p
 * unchanged. */
int pidref_wait(PidRef *p, uint64_t timeout_usec, siginfo_t *ret_si);

/* pidref_wait(), and a child still running at the deadline is SIGKILLed and reaped: 1 then, 0 if it
 * exited by itself; *ret_si is the status either way. */
int pidref_wait_or_kill(PidRef *p, uint64_t timeout_usec, siginfo_t *ret_si);

/* Sends sig through the pidfd (no pid reuse race). */
int pidref_kill(const PidRef *p, int sig);

/* SIGKILL, reap, close the pidfd: p becomes PIDREF_NULL. Nothing to do for PIDREF_NULL. */
void sigkill_wait(PidRef *p);
static inline void sigkill_waitp(PidRef *p) {
        sigkill_wait(p);
}

/* Did it exit by itself with status 0? */
static inline bool siginfo_exited_ok(const siginfo_t *si) {
        return si->si_code == CLD_EXITED && si->si_status == 0;
}
