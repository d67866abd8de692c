/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runtime-exec.c: what the providers share, below the table: finding a runtime's binary, the small process
 * runner for the runtime's steps (with a timeout, its output kept), and whether a runtime holds state. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "basic/log.h"
#include "basic/process-util.h"
#include "runtime/runtime.h"

#define RUNTIME_OUTPUT_MAX (64 * 1024)

int find_binary(const char *name, char **ret) {
        const char *path = getenv("PATH") ?: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

        if (strchr(name, '/')) {
                if (access(name, X_OK) < 0)
                        return -errno;
                return (*ret = strdup(name)) ? 0 : -ENOMEM;
        }
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, ":");
                char *c = NULL;
                if (asprintf(&c, "%.*s/%s", (int) n, p, name) < 0)
                        return -ENOMEM;
                if (n > 0 && access(c, X_OK) == 0) {
                        *ret = c;
                        return 0;
                }
                free(c);
                p += n + (p[n] == ':');
        }
        return -ENOENT;
}

int find_binary_candidates(const char *const *names, size_t n, char **ret) {
        for (size_t i = 0; i < n; i++) {
                int r = find_binary(names[i], ret);
                if (r != -ENOENT && r != -EACCES)
                        return r;
        }
        return -ENOENT;
}

/* Runtimes get an environment of their own, never the supervisor's: runc acts on NOTIFY_SOCKET (it would
 * bind systemd's notification socket into the container and make `runc start` wait for READY=1). */
char **runtime_environ(void) {
        static char *env[] = { (char *) "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        return env;
}

void runtime_execv(char **argv) {
        execvpe(argv[0], argv, runtime_environ());
        _exit(127);
}

/* The runtime is killed with its supervisor: a step nobody waits for must not go on alone. Nothing but
 * stdio reaches it, and through it the container; the supervisor's blocked signals do not either. */
int runtime_exec_setup(char **argv, uint64_t timeout_usec, int (*child_setup)(void)) {
        static const int stdio[3] = { -EBADF, STDERR_FILENO, STDERR_FILENO };
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        siginfo_t si;
        int r;

        r = safe_fork_full(NULL, stdio, NULL, 0, FORK_EXEC_FLAGS | FORK_REARRANGE_STDIO, &child);
        if (r < 0)
                return r;
        if (r == 0) {
                if (child_setup && child_setup() < 0)
                        _exit(127);
                runtime_execv(argv);
        }
        r = pidref_wait_or_kill(&child, timeout_usec, &si);
        if (r < 0)
                return r;
        if (r > 0)
                log_debug("%s timed out, killed it", argv[0]);
        return si.si_code == CLD_EXITED ? si.si_status : -ECANCELED;
}

int runtime_exec(char **argv, uint64_t timeout_usec) {
        return runtime_exec_setup(argv, timeout_usec, NULL);
}

/* Collects the child's output until it exits or the deadline passes. Helpers a runtime leaves behind
 * may hold the pipe open, so the child's exit (its pidfd), not EOF, ends the wait. */
static void collect_output(const PidRef *child, int fd, uint64_t deadline, char *buf, size_t *len) {
        bool exited = false;

        (void) fcntl(fd, F_SETFL, O_NONBLOCK);
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = fd, .events = POLLIN },
                        { .fd = child->fd, .events = POLLIN },
                };
                uint64_t now = clock_usec(CLOCK_MONOTONIC);
                char scratch[4096];
                ssize_t n;

                if (!exited && now >= deadline)
                        return;
                if (poll(p, 2, exited ? 0 : (int) ((deadline - now) / 1000 + 1)) < 0 && errno != EINTR)
                        return;
                n = read(fd, scratch, sizeof scratch);
                if (n > 0) {
                        size_t room = RUNTIME_OUTPUT_MAX - *len, keep = (size_t) n < room ? (size_t) n : room;
                        memcpy(buf + *len, scratch, keep);
                        *len += keep;
                        continue;
                }
                if (n == 0 || exited)
                        return;
                if (p[1].revents & POLLIN)
                        exited = true; /* one more pass drains what is buffered */
        }
}

int runtime_exec_output(char **argv, uint64_t timeout_usec, char **ret_output) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        _cleanup_free_ char *buf = malloc(RUNTIME_OUTPUT_MAX + 1);
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + timeout_usec, now;
        int pipefd[2], r;
        size_t len = 0;
        siginfo_t si;

        if (!buf)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        rd = pipefd[0];
        wr = pipefd[1];
        r = safe_fork_full(NULL, (const int[3]) { -EBADF, wr, wr }, NULL, 0,
                           FORK_EXEC_FLAGS | FORK_REARRANGE_STDIO, &child);
        if (r < 0)
                return r;
        if (r == 0)
                runtime_execv(argv);
        wr = safe_close(wr);
        collect_output(&child, rd, deadline, buf, &len);
        /* EOF can come just before the exit (a process's files close before it becomes a zombie): the
         * rest of the time is still the child's. Past the deadline it is killed. */
        now = clock_usec(CLOCK_MONOTONIC);
        r = pidref_wait_or_kill(&child, now < deadline ? deadline - now : 0, &si);
        if (r < 0)
                return r;
        if (r > 0)
                log_debug("%s timed out, killed it", argv[0]);
        buf[len] = 0;
        if (ret_output)
                *ret_output = TAKE_PTR(buf);
        return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
}

bool runtime_state_dir_exists(const RuntimeJob *j) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/%s", j->state_root, j->container_id) >= 0 && access(p, F_OK) == 0;
}
