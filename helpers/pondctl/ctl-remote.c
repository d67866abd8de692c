/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-remote.c: `pondctl -H [USER@]HOST`: the two channels to a worker, both over the operator's own ssh.
 * systemd's unit control and state go over D-Bus, through sd_bus_open_system_remote() (`ssh -xT HOST
 * systemd-stdio-bridge`, exactly what `systemctl -H` does); what lives in the worker's files (the spool, the
 * live log, the result directory) is read or written by the worker's own pondctl, run as `ssh -xT -- HOST
 * 'pondctl' 'VERB' ...` with every argument single-quoted for the remote shell. */
#include <fcntl.h>
#include <poll.h>
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

static int remote_spawn(char *const *argv, int stdin_fd, int stdout_fd, int stderr_fd, PidRef *ret) {
        _cleanup_free_ char *line = NULL;
        int stdio[3] = { stdin_fd, stdout_fd, stderr_fd };
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

int ctl_remote_spawn(char *const *argv, int stdin_fd, int stdout_fd, PidRef *ret) {
        return remote_spawn(argv, stdin_fd, stdout_fd, STDERR_FILENO, ret);
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

/* One stream relayed line by line, escaped. */
typedef struct Relay {
        int from, to; /* to: -EBADF once it failed (the reader went away): the rest is read and dropped */
        size_t len;
        char line[CTL_RELAY_LINE_MAX];
} Relay;

/* Writes r->line[0..n) escaped (a newline that ends it stays one), then moves the rest to the front. */
static void relay_emit(Relay *r, size_t n, char *esc) {
        bool nl = n > 0 && r->line[n - 1] == '\n';
        size_t k;

        if (r->to >= 0) {
                k = ctl_escape_buf(esc, r->line, nl ? n - 1 : n);
                if (nl)
                        esc[k++] = '\n';
                if (write_all(r->to, esc, k) < 0)
                        r->to = -EBADF;
        }
        memmove(r->line, r->line + n, r->len - n);
        r->len -= n;
}

/* Reads what there is; false at the end of the stream. */
static bool relay_read(Relay *r, char *esc) {
        ssize_t n = read(r->from, r->line + r->len, sizeof r->line - r->len);
        char *nl;

        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return true;
        if (n <= 0) {
                if (r->len > 0)
                        relay_emit(r, r->len, esc);
                return false;
        }
        r->len += (size_t) n;
        while ((nl = memchr(r->line, '\n', r->len)))
                relay_emit(r, (size_t) (nl - r->line) + 1, esc);
        if (r->len == sizeof r->line) /* a line this long goes in pieces */
                relay_emit(r, r->len, esc);
        return true;
}

int ctl_remote_relay(int feed_fd, const char *in, size_t in_len, const int from[2], const int to[2]) {
        _cleanup_free_ Relay *relays = NULL;
        _cleanup_free_ char *esc = NULL;
        _cleanup_close_ int feed = feed_fd;
        size_t fed = 0;
        int r = 0;

        relays = calloc(2, sizeof *relays);
        esc = malloc(CTL_ESCAPE_SIZE(CTL_RELAY_LINE_MAX));
        if (!relays || !esc)
                return -ENOMEM;
        for (size_t i = 0; i < 2; i++)
                relays[i] = (Relay) { .from = from[i], .to = to[i] };
        if (feed >= 0 && in_len == 0)
                feed = safe_close(feed);
        if (feed >= 0 && fcntl(feed, F_SETFL, fcntl(feed, F_GETFL) | O_NONBLOCK) < 0)
                return -errno;
        for (;;) {
                struct pollfd p[3];
                nfds_t n = 0;

                for (size_t i = 0; i < 2; i++)
                        if (relays[i].from >= 0)
                                p[n++] = (struct pollfd) { .fd = relays[i].from, .events = POLLIN };
                if (feed >= 0)
                        p[n++] = (struct pollfd) { .fd = feed, .events = POLLOUT };
                if (n == 0)
                        return r;
                if (poll(p, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (nfds_t k = 0; k < n; k++) {
                        if (!p[k].revents)
                                continue;
                        if (p[k].fd == feed) {
                                /* The worker may answer before it has read it all (a refusal): its exit
                                 * status says why, not a broken pipe here. */
                                ssize_t w = write(feed, in + fed, MIN(in_len - fed, (size_t) 65536));
                                if (w < 0 && errno != EAGAIN && errno != EINTR) {
                                        if (errno != EPIPE)
                                                r = -errno;
                                        feed = safe_close(feed);
                                } else if (w > 0 && (fed += (size_t) w) == in_len)
                                        feed = safe_close(feed);
                                continue;
                        }
                        for (size_t i = 0; i < 2; i++)
                                if (p[k].fd == relays[i].from && !relay_read(&relays[i], esc))
                                        relays[i].from = -EBADF; /* the caller's to close */
                }
        }
}

/* A pipe whose write end the child gets (*ret_child) and whose read end is relayed (*ret_relay). */
static int relay_pipe(int *ret_relay, int *ret_child) {
        int pipefd[2];

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        *ret_relay = pipefd[0];
        *ret_child = pipefd[1];
        return 0;
}

int ctl_remote_run(char *const *argv, const char *in, size_t in_len, int stdout_fd, CtlRemoteEscape escape) {
        _cleanup_(sigkill_waitp) PidRef pid = PIDREF_NULL;
        _cleanup_close_ int in_read = -EBADF, in_write = -EBADF, out_read = -EBADF, out_write = -EBADF,
                            err_read = -EBADF, err_write = -EBADF;
        int r = 0;

        /* ssh may exit before it has read everything (a refusal, a lost connection): its status says why,
         * not a SIGPIPE. */
        (void) signal(SIGPIPE, SIG_IGN);
        if (in)
                r = relay_pipe(&in_read, &in_write);
        if (r >= 0 && (escape & CTL_REMOTE_ESCAPE_STDOUT))
                r = relay_pipe(&out_read, &out_write);
        if (r >= 0 && (escape & CTL_REMOTE_ESCAPE_STDERR))
                r = relay_pipe(&err_read, &err_write);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot make a pipe: %m");
        r = remote_spawn(argv, in_read, out_write >= 0 ? out_write : stdout_fd,
                         err_write >= 0 ? err_write : STDERR_FILENO, &pid);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot run ssh: %m");
        in_read = safe_close(in_read);
        out_write = safe_close(out_write);
        err_write = safe_close(err_write);
        r = ctl_remote_relay(TAKE_FD(in_write), in, in_len, (const int[2]) { out_read, err_read },
                             (const int[2]) { stdout_fd, STDERR_FILENO });
        if (r < 0)
                log_warning_errno(r, "Cannot relay what the worker's pondctl said: %m");
        return ctl_remote_exit_status(&pid);
}

/* A child relaying what comes into the pipe it returns the write end of (*ret_write) to our stderr, escaped:
 * for a stream that is read here at the same time (export's tar), so that a full stderr pipe never stalls
 * ssh. It ends once every write end is closed (ssh has exited). */
static int stderr_relay(PidRef *ret, int *ret_write) {
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        int r;

        r = relay_pipe(&rd, &wr);
        if (r < 0)
                return r;
        /* Nothing but the read end and stdio: the write end's last holder must be ssh. */
        r = safe_fork_full("(pondctl-relay)", NULL, (const int[]) { rd }, 1, FORK_RESET_SIGNALS | FORK_DEATHSIG |
                           FORK_CLOSE_ALL_FDS, ret);
        if (r < 0)
                return r;
        if (r == 0) {
                _exit(ctl_remote_relay(-EBADF, NULL, 0, (const int[2]) { -EBADF, rd },
                                       (const int[2]) { -EBADF, STDERR_FILENO }) < 0 ? 1 : 0);
        }
        *ret_write = TAKE_FD(wr);
        return 0;
}

static volatile sig_atomic_t fetch_interrupted;

static void on_fetch_signal(int sig) {
        fetch_interrupted = sig;
}

/* The tree is only looked at once ssh has said the export was whole. */
typedef struct FetchCheck {
        PidRef *ssh;
        int *tar_fd;       /* closed once the stream is unpacked: what a worker sends past its end stalls nothing */
        int status;        /* of the worker's pondctl; -1 until waited for */
        bool imported;     /* the stream was unpacked whole */
        bool check_failed; /* check refused the tree: its error is the caller's to report */
        CtlTarCheck check;
        void *userdata;
} FetchCheck;

static int fetch_check(const char *dir, void *userdata, char **ret_error) {
        FetchCheck *c = userdata;
        int r;

        c->imported = true;
        *c->tar_fd = safe_close(*c->tar_fd);
        c->status = ctl_remote_exit_status(c->ssh);
        if (c->status != 0)
                return -EIO;
        r = c->check ? c->check(dir, c->userdata, ret_error) : 0;
        c->check_failed = r < 0;
        return r;
}

int ctl_remote_fetch_result(const char *job_id, const char *parent, CtlTarCheck check, void *userdata,
                            char **ret_dir, char **ret_error) {
        _cleanup_(sigkill_waitp) PidRef pid = PIDREF_NULL, relay = PIDREF_NULL;
        _cleanup_close_ int rd = -EBADF, wr = -EBADF, err_write = -EBADF;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *err = NULL;
        FetchCheck c = { .ssh = &pid, .tar_fd = &rd, .status = -1, .check = check, .userdata = userdata };
        struct sigaction sa = { .sa_handler = on_fetch_signal }, old[3];
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
        int pipefd[2], r;

        *ret_error = NULL;
        if (!job_id_is_valid(job_id))
                return -EINVAL;
        r = strv_build(&argv, "export", job_id, NULL);
        if (r < 0)
                return r;
        /* First: the relay child must not hold the tar pipe (ssh would never see it closed). */
        r = stderr_relay(&relay, &err_write);
        if (r < 0)
                return log_error_errno(r, "Cannot relay the worker's messages: %m");
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return log_error_errno(errno, "Cannot make a pipe: %m");
        rd = pipefd[0];
        wr = pipefd[1];
        r = remote_spawn(argv, -EBADF, wr, err_write, &pid);
        if (r < 0)
                return log_error_errno(r, "Cannot run ssh: %m");
        wr = safe_close(wr);
        err_write = safe_close(err_write);
        /* An interrupt (the ssh in our process group gets it too) stops the fetch, and the tree goes. */
        fetch_interrupted = 0;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                (void) sigaction(sigs[i], &sa, &old[i]);
        r = ctl_result_tar_unpack(rd, parent, job_id, NULL, &fetch_interrupted, fetch_check, &c, ret_dir, &err);
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                (void) sigaction(sigs[i], &old[i], NULL);
        /* Whatever the tar said, ssh is waited for: its status says whether the worker had a result. */
        rd = safe_close(rd);
        if (c.status < 0)
                c.status = ctl_remote_exit_status(&pid);
        /* What the worker said, before what we say about it. */
        (void) pidref_wait_or_kill(&relay, 1000 * 1000, NULL);
        if (c.check_failed) {
                *ret_error = TAKE_PTR(err);
                return r;
        }
        if (r >= 0)
                return 0;
        if (c.status == CTL_EXIT_NOT_FOUND)
                return -ENOENT;
        if (fetch_interrupted)
                return log_error_errno(EINTR, "Interrupted: the result of %s was not kept.", job_id);
        if (c.imported && c.status != 0)
                return log_error_errno(EIO, "The worker could not export the result of %s (exit status %d).",
                                       job_id, c.status);
        /* Refused here (then ssh fails to write the rest: that is not the reason), or not put in place. */
        ctl_log_error_errno_untrusted(r, "Cannot fetch the result of %s from %s, and nothing of it was kept: %s",
                                      job_id, remote_host, err ?: strerror(-r));
        return r == -EEXIST ? r : -EIO;
}
