/* runtime.c: the provider table and the small process runner the providers share. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "log.h"
#include "runtime.h"

static const RuntimeProvider *const providers[] = {
        &runtime_runc,
        &runtime_runsc,
        &runtime_kata,
};

const RuntimeProvider *runtime_provider_find(const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(providers); i++)
                if (streq(providers[i]->name, name))
                        return providers[i];
        return NULL;
}

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

/* Runtimes get an environment of their own, never the supervisor's: runc acts on NOTIFY_SOCKET (it would
 * bind systemd's notification socket into the container and make `runc start` wait for READY=1). */
char **runtime_environ(void) {
        static char *env[] = { (char *) "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        return env;
}

void runtime_exec_child(char **argv) {
        sigset_t none;

        /* The supervisor blocks SIGCHLD/SIGTERM for its event loop; runtimes must not inherit that. */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Nothing but stdio reaches the runtime, and through it the container. */
        (void) syscall(SYS_close_range, 3, ~0U, 0);
        execvpe(argv[0], argv, runtime_environ());
        _exit(127);
}

int runtime_exec(char **argv, uint64_t timeout_usec) {
        _cleanup_close_ int pidfd = -EBADF;
        int status;
        pid_t pid;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
                        _exit(127);
                runtime_exec_child(argv);
        }
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd >= 0) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                int ms = (int) (timeout_usec / 1000);
                int k;
                while ((k = poll(&p, 1, ms)) < 0 && errno == EINTR)
                        ;
                if (k == 0) {
                        log_debug("%s timed out, killing it", argv[0]);
                        kill(pid, SIGKILL);
                }
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return -ECANCELED;
}

bool runtime_state_dir_exists(const RuntimeJob *j) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/%s", j->state_root, j->container_id) >= 0 && access(p, F_OK) == 0;
}
