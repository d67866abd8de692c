/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-console.c: an interactive job's console (docs/job-spec.md, "Interactive jobs"). A tty job's pty is
 * allocated by the runtime inside the container, its master handed to the supervisor through the runtime's
 * --console-socket; a stdin job's stdin is a pipe. While the payload runs the supervisor listens on
 * JobPaths.console (0600, SO_PEERCRED: root or the job's submitter): one caller at a time attaches, its
 * input goes to the tty or pipe, the tty's output to it and, whether anyone is attached or not, to the job's
 * log (sequenced, capped, signed with the result). A caller that goes away detaches: the job runs on, its
 * output kept for the next one (the last CONSOLE_BACKLOG bytes). The same socket takes exec requests
 * (job-exec.c) and copies (job-cp.c). */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"

/* What waits for a caller while none is attached, or while it is slow: the newest bytes are kept. */
#define CONSOLE_BACKLOG (64 * 1024)
/* Connections at once (attached, execs, not yet said which). */
#define CONSOLE_CONNS_MAX 32
/* How long the last output may take to reach the caller when the job ends. */
#define CONSOLE_FLUSH_USEC (2ULL * 1000 * 1000)

static bool interactive(const Job *j) {
        return j->input.spec->tty || j->input.spec->stdin_open;
}

int job_console_accept(Job *j, char **ret_error) {
        const RuntimeProvider *provider = j->input.provider;

        /* pond takes a tty job's pty master through the runtime's --console-socket (runc, runsc) */
        if (j->input.spec->tty && !provider->console_socket)
                return (*ret_error = strdupf("tty: not available with backend %s (it hands over no console)",
                                             provider->name)) ? -EOPNOTSUPP : -ENOMEM;
        return 0;
}

const char *job_console_runtime_socket(const Job *j) {
        return j->console.runtime_listen >= 0 ? j->paths.console_runtime : NULL;
}

int job_console_prepare(Job *j, int *ret_stdin) {
        JobConsole *c = &j->console;
        int p[2], r;

        *ret_stdin = -EBADF;
        if (j->input.spec->tty) {
                /* root's alone: the runtime's create step (root) connects, nothing in the job can reach it */
                r = console_listen(j->paths.console_runtime, SOCK_STREAM, 0600, &c->runtime_listen);
                if (r < 0)
                        return log_error_errno(r, "Cannot listen on %s: %m", j->paths.console_runtime);
                return 0;
        }
        if (!j->input.spec->stdin_open)
                return 0;
        if (pipe2(p, O_CLOEXEC) < 0)
                return log_error_errno(errno, "Cannot make the job's stdin pipe: %m");
        c->stdin_write = p[1];
        (void) fcntl(c->stdin_write, F_SETFL, O_NONBLOCK);
        *ret_stdin = p[0];
        return 0;
}

int job_console_receive(Job *j) {
        JobConsole *c = &j->console;
        _cleanup_close_ int conn = -EBADF;
        int r;

        if (!j->input.spec->tty)
                return 0;
        /* The create step has exited: a master it sent is queued on the socket by now, or there is none. */
        conn = accept4(c->runtime_listen, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
                r = errno == EAGAIN ? -ENOTCONN : -errno;
        else
                r = console_recv_fd(conn, &c->master);
        if (r >= 0 && !isatty(c->master)) {
                r = -ENOTTY;
                c->master = safe_close(c->master);
        }
        c->runtime_listen = safe_close(c->runtime_listen);
        (void) unlink(j->paths.console_runtime);
        if (r < 0) {
                job_end(j, JOB_END_RUNTIME_FAILED, r, "runtime failed (%s): no terminal arrived on its console socket",
                        j->input.provider->name);
                return log_error_errno(r, "The runtime %s handed over no pty master: %m", j->input.provider->name);
        }
        (void) fcntl(c->master, F_SETFL, O_NONBLOCK);
        return 0;
}

/* The fd the caller's input goes to, or -EBADF when there is none (any more). */
static int input_fd(const JobConsole *c) {
        return c->master >= 0 ? c->master : c->stdin_write;
}

static void master_update(JobConsole *c) {
        if (c->master_src)
                (void) sd_event_source_set_io_events(c->master_src, EPOLLIN | (c->in_len > 0 ? EPOLLOUT : 0));
        if (c->stdin_src)
                (void) sd_event_source_set_enabled(c->stdin_src, c->in_len > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
        if (c->attached)
                job_console_conn_update(c->attached);
}

/* Writes what the payload can take; keeps the rest. A tty or pipe that is gone takes nothing any more. */
static void input_flush(JobConsole *c) {
        int fd = input_fd(c);

        while (c->in_len > 0 && fd >= 0) {
                ssize_t n = fd >= 0 ? write(fd, c->in, c->in_len) : -1;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0)
                        break; /* EPIPE, EIO: the payload's end is closed */
                memmove(c->in, c->in + n, c->in_len - (size_t) n);
                c->in_len -= (size_t) n;
        }
        if (c->in_len > 0 && (fd < 0 || errno == EPIPE || errno == EIO))
                c->in_len = 0;
        /* a stdin job's end of input, once what came before it is written */
        if (c->in_len == 0 && c->stdin_eof && c->stdin_write >= 0) {
                c->stdin_src = sd_event_source_disable_unref(c->stdin_src);
                c->stdin_write = safe_close(c->stdin_write);
        }
        master_update(c);
}

static int input_add(JobConsole *c, const char *data, size_t len) {
        char *p;

        if (len == 0)
                return 0;
        p = realloc(c->in, c->in_len + len);
        if (!p)
                return -ENOMEM;
        c->in = p;
        memcpy(c->in + c->in_len, data, len);
        c->in_len += len;
        input_flush(c);
        return 0;
}

/* Keeps the newest CONSOLE_BACKLOG bytes of what the caller has not taken. */
static void output_keep(JobConsole *c, const char *data, size_t len) {
        if (len >= CONSOLE_BACKLOG) {
                memcpy(c->out, data + len - CONSOLE_BACKLOG, CONSOLE_BACKLOG);
                c->out_len = CONSOLE_BACKLOG;
                return;
        }
        if (c->out_len + len > CONSOLE_BACKLOG) {
                size_t drop = c->out_len + len - CONSOLE_BACKLOG;
                memmove(c->out, c->out + drop, c->out_len - drop);
                c->out_len -= drop;
        }
        memcpy(c->out + c->out_len, data, len);
        c->out_len += len;
}

/* Sends what waits to the attached caller, as far as it takes it. */
static void output_flush(JobConsole *c, bool nonblock) {
        ConsoleConn *a = c->attached;
        size_t done = 0;

        while (a && a->fd >= 0 && done < c->out_len) {
                size_t n = c->out_len - done < CONSOLE_DATA_MAX ? c->out_len - done : CONSOLE_DATA_MAX;
                int r = console_send(a->fd, CONSOLE_STDOUT, c->out + done, n, nonblock);

                if (r < 0)
                        break; /* -EAGAIN: later; a caller gone is noticed on its socket */
                done += n;
        }
        memmove(c->out, c->out + done, c->out_len - done);
        c->out_len -= done;
        if (a)
                job_console_conn_update(a);
}

static void output_add(JobConsole *c, const char *data, size_t len) {
        output_keep(c, data, len);
        output_flush(c, true);
}

static int on_master(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Job *j = userdata;
        JobConsole *c = &j->console;
        char buf[CONSOLE_DATA_MAX];
        size_t len = 0;
        ssize_t n;

        if (revents & EPOLLOUT)
                input_flush(c);
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;
        /* A pty gives at most a few KiB a read: what is there is gathered into one chunk of the log and one
         * packet (64 MiB of tty output under runc: 4.8 s read by read, 3.2 s gathered; docs/benchmarks.md) */
        do {
                n = read(fd, buf + len, sizeof buf - len);
                if (n > 0)
                        len += (size_t) n;
        } while (n > 0 && len < sizeof buf);
        if (len > 0) {
                if (output_log_append(&j->runtime.log, OUTPUT_STDOUT, buf, len) < 0)
                        log_warning("Cannot write the job's tty output to its log.");
                output_add(c, buf, len);
                return 0; /* an end of file is seen on the next round */
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                /* EIO: the last slave is closed, the payload (and whatever it left) is gone */
                c->master_src = sd_event_source_disable_unref(c->master_src);
                c->master = safe_close(c->master);
                c->in_len = 0;
                if (c->closed)
                        c->closed(c->userdata);
        }
        return 0;
}

static int on_stdin_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        JobConsole *c = userdata;

        input_flush(c);
        if (revents & EPOLLERR && c->in_len == 0 && c->stdin_write >= 0 && c->master < 0) {
                /* the payload closed its stdin */
                c->stdin_src = sd_event_source_disable_unref(c->stdin_src);
                c->stdin_write = safe_close(c->stdin_write);
        }
        return 0;
}

/* The caller went away (or broke the protocol): an attached one detaches, an exec runs on. */
static void conn_gone(ConsoleConn *c) {
        Job *j = c->job;

        if (c->kind == CONSOLE_CONN_ATTACHED) {
                bool hangup = !c->detaching;

                audit_event(&j->audit, POND_EVENT_CONSOLE, AUDIT_NO_RC, "%s: uid %u", hangup ? "hung up" : "detached",
                            (unsigned) c->uid);
                if (hangup && j->input.spec->kill_on_hangup)
                        job_console_hangup(j);
        }
        if (c->kind == CONSOLE_CONN_EXEC && (c->pid.pid > 0 || c->pipe[0] >= 0 || c->pipe[1] >= 0)) {
                /* kept (in the list) until the exec ends; its output goes nowhere */
                c->src = sd_event_source_disable_unref(c->src);
                c->fd = safe_close(c->fd);
                free(c->pending);
                c->pending = NULL;
                job_exec_resume(c);
                return;
        }
        job_console_conn_free(c);
}

static void refuse(ConsoleConn *c, const char *fmt, ...) _printf_(2, 3);
static void refuse(ConsoleConn *c, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = strdupf_va(fmt, ap);
        va_end(ap);
        (void) console_send_error(c->fd, "%s", msg ?: "refused");
        job_console_conn_free(c);
}

static void attach(ConsoleConn *c) {
        Job *j = c->job;
        JobConsole *con = &j->console;
        char mode = j->input.spec->tty ? 't' : 'i';

        if (!interactive(j))
                return refuse(c, "job %s has no terminal and no stdin (run it with pondctl run -t or -i)",
                              j->paths.id);
        /* a caller that went away (killed, detached) but whose hangup is not handled yet makes room */
        if (con->attached && poll(&(struct pollfd) { .fd = con->attached->fd, .events = POLLRDHUP }, 1, 0) > 0)
                conn_gone(con->attached);
        if (con->attached)
                return refuse(c, "another caller is attached to job %s", j->paths.id);
        if (console_send(c->fd, CONSOLE_MODE, &mode, 1, false) < 0)
                return job_console_conn_free(c);
        c->kind = CONSOLE_CONN_ATTACHED;
        con->attached = c;
        audit_event(&j->audit, POND_EVENT_CONSOLE, AUDIT_NO_RC, "attached: uid %u to the job's %s", (unsigned) c->uid,
                    j->input.spec->tty ? "tty" : "stdin");
        output_flush(con, true);
}

static void on_packet(ConsoleConn *c, const char *buf, size_t n) {
        JobConsole *con = &c->job->console;

        /* refused once its request is read: closing with a packet unread would reset the connection and the
         * caller would see no reason */
        if (c->refusal)
                return refuse(c, "%s", c->refusal);
        if (c->kind == CONSOLE_CONN_NEW) {
                if (buf[0] == CONSOLE_ATTACH)
                        return attach(c);
                if (buf[0] == CONSOLE_EXEC || buf[0] == CONSOLE_EXEC_REQUEST) {
                        c->kind = CONSOLE_CONN_EXEC;
                        if (job_exec_request(c, buf, n) < 0)
                                job_console_conn_free(c);
                        return;
                }
                if (buf[0] == CONSOLE_COPY) {
                        c->kind = CONSOLE_CONN_COPY;
                        if (job_cp_request(c, buf, n) < 0)
                                job_console_conn_free(c);
                        return;
                }
                return refuse(c, "%s", "not a console request");
        }
        if (c->kind != CONSOLE_CONN_ATTACHED) {
                /* an exec takes its stdin bytes before it starts, and no input after; a put, its file's */
                if ((c->kind == CONSOLE_CONN_COPY ? job_cp_input(c, buf, n) : job_exec_input(c, buf, n)) < 0)
                        job_console_conn_free(c);
                return;
        }
        switch (buf[0]) {
        case CONSOLE_INPUT:
                if (input_fd(con) >= 0 && input_add(con, buf + 1, n - 1) < 0)
                        log_warning("Out of memory for the job's input: dropped.");
                break;
        case CONSOLE_WINSIZE: {
                ConsoleWinsize w;
                if (n - 1 != sizeof w || con->master < 0)
                        break;
                memcpy(&w, buf + 1, sizeof w);
                (void) ioctl(con->master, TIOCSWINSZ, &(struct winsize) { .ws_row = w.rows, .ws_col = w.cols });
                break;
        }
        case CONSOLE_DETACH:
                c->detaching = true;
                break;
        case CONSOLE_EOF:
                if (con->master < 0) {
                        con->stdin_eof = true;
                        input_flush(con);
                }
                break;
        default:
                break;
        }
}

static int on_conn(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ConsoleConn *c = userdata;
        JobConsole *con = &c->job->console;
        char buf[CONSOLE_PACKET_MAX];
        ssize_t n;

        if (revents & EPOLLOUT) {
                if (c->kind == CONSOLE_CONN_ATTACHED)
                        output_flush(con, true);
                else if (c->pending) {
                        int r = console_send(c->fd, c->pending_type, c->pending, c->pending_len, true);
                        if (r != -EAGAIN) {
                                free(c->pending);
                                c->pending = NULL;
                                job_console_conn_update(c);
                                /* may free c: the rest waits for the next round */
                                if (c->kind == CONSOLE_CONN_COPY)
                                        job_cp_resume(c);
                                else
                                        job_exec_resume(c);
                                return 0;
                        }
                }
        }
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;
        if (c->kind == CONSOLE_CONN_ATTACHED && con->in_len >= CONSOLE_INPUT_MAX && !(revents & EPOLLIN)) {
                conn_gone(c);
                return 0;
        }
        n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                conn_gone(c);
                return 0;
        }
        on_packet(c, buf, (size_t) n);
        return 0;
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Job *j = userdata;
        JobConsole *con = &j->console;
        _cleanup_close_ int cfd = -EBADF;
        ConsoleConn *c;
        size_t n = 0;
        uid_t uid = (uid_t) -1;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return 0;
        for (ConsoleConn *i = con->conns; i; i = i->next)
                n++;
        if (n >= CONSOLE_CONNS_MAX)
                return 0; /* closed at once: the caller sees the connection reset */
        c = calloc(1, sizeof *c);
        if (!c)
                return 0;
        *c = (ConsoleConn) { .job = j, .fd = TAKE_FD(cfd), .pid = PIDREF_NULL, .pipe = { -EBADF, -EBADF },
                             .init_slot = -1 };
        if (console_peer_uid(c->fd, &uid) < 0 || (uid != 0 && uid != con->owner)) {
                log_warning("Refused a console connection of uid %d to job %s: not root, not its submitter.",
                            console_peer_uid(c->fd, &uid) < 0 ? -1 : (int) uid, j->paths.id);
                c->refusal = "not yours: only root and the job's submitter may use its console";
        }
        c->uid = uid;
        if (sd_event_add_io(con->event, &c->src, c->fd, EPOLLIN, on_conn, c) < 0) {
                job_console_conn_free(c);
                return 0;
        }
        c->next = con->conns;
        con->conns = c;
        return 0;
}

/* Who may connect besides root: the job's submitter (job-accept-intake.c), a member of the group pond. */
static uid_t job_owner(const Job *j) {
        return j->input.have_submitter ? j->input.submitter.uid : 0;
}

/* RUNDIR/console: searchable by all, listable by none (tmpfiles makes it too); mode set past the unit's umask. */
static int console_dir_make(const char *sock) {
        _cleanup_free_ char *dir = strndup(sock, (size_t) (strrchr(sock, '/') - sock));

        if (!dir)
                return -ENOMEM;
        if (mkdir(dir, 0711) < 0 && errno != EEXIST)
                return -errno;
        return chmod(dir, 0711) < 0 ? -errno : 0;
}

int job_console_watch(Job *j, sd_event *e, void (*closed)(void *userdata), void *userdata) {
        JobConsole *c = &j->console;
        int r;

        c->event = e;
        c->closed = closed;
        c->userdata = userdata;
        c->owner = job_owner(j);
        if (interactive(j) && !(c->out = malloc(CONSOLE_BACKLOG)))
                return -ENOMEM;
        r = console_dir_make(j->paths.console);
        if (r < 0)
                return log_error_errno(r, "Cannot make the directory of %s: %m", j->paths.console);
        r = console_listen(j->paths.console, SOCK_SEQPACKET, 0600, &c->listen);
        if (r < 0)
                return log_error_errno(r, "Cannot listen on %s: %m", j->paths.console);
        /* Connecting needs write access to the socket: the submitter's, besides root's. SO_PEERCRED checks the
         * caller again. */
        if (c->owner != 0 && chown(j->paths.console, c->owner, (gid_t) -1) < 0)
                return log_error_errno(errno, "Cannot give %s to uid %u: %m", j->paths.console, (unsigned) c->owner);
        r = sd_event_add_io(e, &c->listen_src, c->listen, EPOLLIN, on_listen, j);
        if (r >= 0 && c->stdin_write >= 0) {
                r = sd_event_add_io(e, &c->stdin_src, c->stdin_write, EPOLLOUT, on_stdin_writable, c);
                if (r >= 0)
                        r = sd_event_source_set_enabled(c->stdin_src, SD_EVENT_OFF);
        }
        if (r < 0 || c->master < 0)
                return r;
        r = sd_event_add_io(e, &c->master_src, c->master, EPOLLIN, on_master, j);
        return r < 0 ? r : 1;
}

void job_console_stop(Job *j) {
        JobConsole *c = &j->console;

        c->listen_src = sd_event_source_disable_unref(c->listen_src);
        if (c->listen >= 0) {
                c->listen = safe_close(c->listen);
                (void) unlink(j->paths.console);
        }
}

void job_console_done(JobConsole *c) {
        /* What the attached caller has not taken yet, within a bound: the job has ended. */
        if (c->attached && c->attached->fd >= 0 && c->out_len > 0) {
                struct timeval tv = { CONSOLE_FLUSH_USEC / 1000000, 0 };
                (void) setsockopt(c->attached->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
                output_flush(c, false);
        }
        while (c->conns)
                job_console_conn_free(c->conns);
        job_init_done(&c->init);
        sd_event_source_disable_unref(c->listen_src);
        sd_event_source_disable_unref(c->master_src);
        sd_event_source_disable_unref(c->stdin_src);
        safe_close(c->listen);
        safe_close(c->runtime_listen);
        safe_close(c->master);
        safe_close(c->stdin_write);
        free(c->out);
        free(c->in);
        *c = (JobConsole) JOB_CONSOLE_NULL;
}
