/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-remote.c: `pondctl -H [USER@]HOST`: the two channels to a worker, both over the operator's own ssh.
 * systemd's unit control and state go over D-Bus, through sd_bus_open_system_remote() (`ssh -xT HOST
 * systemd-stdio-bridge`, exactly what `systemctl -H` does); what lives in the worker's files (the spool, the
 * live log, the result directory) is read or written by the worker's own pondctl, run as `ssh -xT -- HOST
 * 'pondctl' 'VERB' ...` with every argument single-quoted for the remote shell. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "basic/strv.h"
#include "ctl.h"

#define CTL_HOST_MAX 255

static const char *remote_host;

int ctl_host_set(const char *host) {
        if (!ctl_host_is_valid(host))
                return log_error_errno(EINVAL, "-H: '%s' is not [USER@]HOST (letters, digits, '.', '-', '_'; "
                                       "ports and keys go in ssh_config(5)).", host);
        remote_host = host;
        return 0;
}

const char *ctl_host(void) {
        return remote_host;
}

bool ctl_host_is_valid(const char *host) {
        const char *at, *name;
        size_t len;

        if (!host)
                return false;
        len = strlen(host);
        if (len == 0 || len > CTL_HOST_MAX)
                return false;
        /* Nothing ssh could take for an option (a leading '-'), nothing a shell or sd-bus's address
         * syntax would read (',' '=' ';' '%' spaces, quotes), at most one '@' with something on each side. */
        if (strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@") != len)
                return false;
        at = strchr(host, '@');
        if (at && strchr(at + 1, '@'))
                return false;
        name = at ? at + 1 : host;
        if (at && (at == host || host[0] == '-' || host[0] == '.'))
                return false;
        return *name && *name != '-' && *name != '.';
}

int ctl_host_bus_open(sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        if (!remote_host)
                return ctl_bus_open(ret);
        r = sd_bus_open_system_remote(&bus, remote_host);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus of %s over ssh: %m", remote_host);
        *ret = bus;
        return 0;
}

/* s in single quotes for a POSIX shell: ' becomes '\''. */
static int shell_quote(const char *s, char **ret) {
        size_t n = 2;
        char *q, *p;

        for (const char *c = s; *c; c++)
                n += *c == '\'' ? 4 : 1;
        q = malloc(n + 1);
        if (!q)
                return -ENOMEM;
        p = q;
        *p++ = '\'';
        for (const char *c = s; *c; c++) {
                if (*c == '\'') {
                        memcpy(p, "'\\''", 4);
                        p += 4;
                } else
                        *p++ = *c;
        }
        *p++ = '\'';
        *p = 0;
        *ret = q;
        return 0;
}

int ctl_remote_command_line(char *const *argv, char **ret) {
        _cleanup_free_ char *line = NULL, *first = NULL;
        size_t len = 0;
        int r;

        /* The worker's pondctl by the name or path POND_REMOTE_PONDCTL gives (default: pondctl in the remote
         * PATH). A missing one would exit 127 from the shell, which means "did not verify" to pondctl: say
         * so, and fail with 1 instead. */
        r = shell_quote(getenv("POND_REMOTE_PONDCTL") ?: "pondctl", &first);
        if (r < 0)
                return r;
        if (asprintf(&line, "command -v %s >/dev/null 2>&1 || { echo \"pondctl: not found on the worker "
                     "(POND_REMOTE_PONDCTL)\" >&2; exit 1; }; exec %s", first, first) < 0)
                return -ENOMEM;
        len = strlen(line);
        for (char *const *a = argv; a && *a; a++) {
                _cleanup_free_ char *q = NULL;
                char *nl;

                r = shell_quote(*a, &q);
                if (r < 0)
                        return r;
                nl = realloc(line, len + 1 + strlen(q) + 1);
                if (!nl)
                        return -ENOMEM;
                line = nl;
                line[len++] = ' ';
                strcpy(line + len, q);
                len += strlen(q);
        }
        *ret = TAKE_PTR(line);
        return 0;
}

int ctl_remote_spawn(char *const *argv, int stdin_fd, int stdout_fd, PidRef *ret) {
        _cleanup_free_ char *line = NULL;
        int stdio[3] = { stdin_fd, stdout_fd, STDERR_FILENO };
        int r;

        if (!remote_host)
                return -EINVAL;
        r = ctl_remote_command_line(argv, &line);
        if (r < 0)
                return r;
        log_debug("ssh -xT -- %s %s", remote_host, line);
        r = safe_fork_full("(pondctl-ssh)", stdio, NULL, 0, FORK_EXEC_FLAGS | FORK_REARRANGE_STDIO, ret);
        if (r < 0)
                return r;
        if (r == 0) {
                /* As sd-bus runs it for the bus: the user's ssh, its configuration and keys. */
                execlp("ssh", "ssh", "-xT", "--", remote_host, line, (char *) NULL);
                _exit(255);
        }
        return 0;
}

int ctl_remote_exit_status(PidRef *p) {
        siginfo_t si = {};
        int r;

        r = pidref_wait(p, USEC_INFINITY, &si);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot wait for ssh: %m");
        if (si.si_code != CLD_EXITED)
                return ctl_fail(CTL_EXIT_ERROR, "ssh to %s was killed by signal %d.", remote_host, si.si_status);
        if (si.si_status == 255)
                return ctl_fail(CTL_EXIT_ERROR, "ssh to %s failed (see above).", remote_host);
        return si.si_status;
}

/* Writes all of buf into fd (a pipe to ssh), then closes it. */
static int feed(int fd, const char *buf, size_t len) {
        _cleanup_close_ int f = fd;

        return write_all(f, buf, len);
}

int ctl_remote_run(char *const *argv, const char *in, size_t in_len, int stdout_fd) {
        _cleanup_(sigkill_waitp) PidRef pid = PIDREF_NULL;
        _cleanup_close_ int in_read = -EBADF, in_write = -EBADF;
        int pipefd[2], r;

        if (in) {
                /* ssh may exit before it has read everything (a refusal, a lost connection): its status says
                 * why, not a SIGPIPE. */
                (void) signal(SIGPIPE, SIG_IGN);
                if (pipe2(pipefd, O_CLOEXEC) < 0)
                        return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot make a pipe: %m");
                in_read = pipefd[0];
                in_write = pipefd[1];
        }
        r = ctl_remote_spawn(argv, in_read, stdout_fd, &pid);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot run ssh: %m");
        in_read = safe_close(in_read);
        if (in) {
                r = feed(TAKE_FD(in_write), in, in_len);
                if (r < 0 && r != -EPIPE)
                        return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot write to ssh: %m");
        }
        return ctl_remote_exit_status(&pid);
}

int ctl_remote_fetch_result(const char *job_id, const char *dest) {
        _cleanup_(sigkill_waitp) PidRef pid = PIDREF_NULL;
        _cleanup_close_ int rd = -EBADF, wr = -EBADF, dirfd = -EBADF;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *err = NULL;
        int pipefd[2], r, status;

        if (!job_id_is_valid(job_id))
                return -EINVAL;
        r = strv_build(&argv, "export", job_id, NULL);
        if (r < 0)
                return r;
        if (mkdir(dest, 0700) < 0)
                return log_error_errno(errno, "Cannot create %s: %m", dest);
        dirfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dirfd < 0)
                return log_error_errno(errno, "Cannot open %s: %m", dest);
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return log_error_errno(errno, "Cannot make a pipe: %m");
        rd = pipefd[0];
        wr = pipefd[1];
        r = ctl_remote_spawn(argv, -EBADF, wr, &pid);
        if (r < 0)
                return log_error_errno(r, "Cannot run ssh: %m");
        wr = safe_close(wr);
        r = ctl_result_tar_import(rd, dirfd, &err);
        /* Whatever the tar said, ssh is waited for: its status says whether the worker had a result. */
        rd = safe_close(rd);
        status = ctl_remote_exit_status(&pid);
        if (status == CTL_EXIT_NOT_FOUND)
                return -ENOENT;
        if (status != 0)
                return log_error_errno(EIO, "The worker could not export the result of %s (exit status %d).",
                                       job_id, status);
        if (r < 0)
                return log_error_errno(r, "The result of %s from %s is not a result directory: %s", job_id,
                                       remote_host, err ?: strerror(-r));
        return 0;
}
