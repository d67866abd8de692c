/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-console.c: the caller's end of a job's console socket (console.h; docs/job-spec.md, "Interactive
 * jobs"): `pondctl run -t/-i` after the submission, `pondctl attach ID` and `pondctl exec ID -- CMD`. A tty
 * job's output comes through the socket, the caller's terminal in raw mode, its size sent at the start and
 * on every SIGWINCH; Ctrl-] detaches (the job runs on). A stdin job's output is its log, as for any job:
 * only stdin goes through the socket. */
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "basic/size.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "console/console.h"
#include "ctl.h"

/* Ctrl-]: the byte that detaches a tty caller (as telnet's escape). */
#define CTL_DETACH_BYTE 0x1d
#define CTL_CONNECT_TICK_USEC (20ULL * 1000)
#define CTL_CONNECT_UNIT_POLL_USEC (1000ULL * 1000)

static volatile sig_atomic_t winch, quit;

static void on_winch(int sig) {
        winch = 1;
}

static void on_quit(int sig) {
        quit = 1;
}


static void send_winsize(int sock) {
        struct winsize ws;

        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0)
                return;
        (void) console_send(sock, CONSOLE_WINSIZE, &(ConsoleWinsize) { ws.ws_row, ws.ws_col },
                            sizeof(ConsoleWinsize), false);
}

/* Connects to the job's console, waiting while the job is being set up (the socket exists while the payload
 * runs). 0 and the fd; -ESRCH when the job has ended (or never got to run); other errors as they are. The
 * unit is asked now and then, each time over a connection made for the question (ctl_wait()'s reason). */
static int connect_wait(const JobPaths *paths, const char *job_id, bool wait, int *ret_fd) {
        _cleanup_free_ char *unit = NULL, *result = NULL;
        uint64_t next_query = 0;

        if (unit_name(UNIT_JOB_SERVICE, job_id, &unit) < 0 || asprintf(&result, "%s/%s", paths->results, job_id) < 0)
                return -ENOMEM;
        for (;;) {
                _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
                uint64_t now = clock_usec(CLOCK_MONOTONIC);
                int r = console_connect(paths->console, ret_fd);

                if (r >= 0 || (r != -ENOENT && r != -ECONNREFUSED))
                        return r;
                if (!wait || access(result, F_OK) >= 0)
                        return -ESRCH;
                if (now >= next_query) {
                        next_query = now + CTL_CONNECT_UNIT_POLL_USEC;
                        if (ctl_unit_get_state_once(unit, false, &st) >= 0 && !ctl_unit_state_is_running(&st))
                                return -ESRCH;
                }
                (void) nanosleep(&(struct timespec) { 0, CTL_CONNECT_TICK_USEC * 1000 }, NULL);
        }
}

/* ATTACH, and the supervisor's answer: 't' or 'i', or < 0 having said why. */
static int attach_request(int sock, const char *job_id) {
        char buf[CONSOLE_PACKET_MAX + 1]; /* + 1: room for a NUL after the longest packet */
        ssize_t n;
        int r = console_send(sock, CONSOLE_ATTACH, NULL, 0, false);

        if (r < 0)
                return log_error_errno(r, "Cannot attach to job %s: %m", job_id);
        do
                n = recv(sock, buf, sizeof buf - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n > 1 && buf[0] == CONSOLE_MODE && (buf[1] == 't' || buf[1] == 'i'))
                return buf[1];
        if (n > 0 && buf[0] == CONSOLE_ERROR) {
                buf[n] = 0;
                return ctl_log_error_errno_untrusted(EPERM, "Cannot attach to job %s: %s", job_id, buf + 1);
        }
        if (n <= 0)
                return -ESRCH; /* the job ended as we attached */
        return log_error_errno(EPROTO, "Cannot attach to job %s: not a console's answer.", job_id);
}

/* A tty job: the caller's terminal raw, input and size to the job, the job's output to stdout. 1 if the
 * caller detached, 2 if pondctl was told to stop (SIGTERM, SIGHUP, SIGINT: a hangup to the job, and the
 * terminal restored), 0 when the job's end closed the socket. */
static int relay_tty(int sock) {
        static const int quit_signals[] = { SIGTERM, SIGHUP, SIGINT };
        struct sigaction sa = { .sa_handler = on_winch }, sq = { .sa_handler = on_quit }, old, old_quit[3];
        struct termios saved, raw;
        bool is_tty = isatty(STDIN_FILENO), stdin_open = true;
        char buf[CONSOLE_PACKET_MAX];
        int ret = 0;

        if (is_tty && tcgetattr(STDIN_FILENO, &saved) >= 0) {
                raw = saved;
                cfmakeraw(&raw);
                (void) tcsetattr(STDIN_FILENO, TCSANOW, &raw);
        } else
                is_tty = false;
        sigemptyset(&sa.sa_mask);
        sigemptyset(&sq.sa_mask);
        (void) sigaction(SIGWINCH, &sa, &old);
        quit = 0;
        for (size_t i = 0; i < ELEMENTSOF(quit_signals); i++)
                (void) sigaction(quit_signals[i], &sq, &old_quit[i]);
        send_winsize(sock);
        for (;;) {
                struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
                                       { .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN } };
                ssize_t n;

                if (winch) {
                        winch = 0;
                        send_winsize(sock);
                }
                if (quit) {
                        ret = 2;
                        break;
                }
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                /* a resize signalled while poll() returned goes before the input typed after it */
                if (winch) {
                        winch = 0;
                        send_winsize(sock);
                }
                if (p[0].revents) {
                        n = recv(sock, buf, sizeof buf, MSG_DONTWAIT);
                        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (n <= 0)
                                break; /* the job ended */
                        if (buf[0] == CONSOLE_STDOUT && write_all(STDOUT_FILENO, buf + 1, (size_t) n - 1) < 0)
                                break;
                }
                if (p[1].revents) {
                        char *d;

                        n = read(STDIN_FILENO, buf, CONSOLE_DATA_MAX);
                        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (n <= 0) {
                                stdin_open = false; /* the job goes on; its output still comes */
                                (void) console_send(sock, CONSOLE_EOF, NULL, 0, false);
                                continue;
                        }
                        d = memchr(buf, CTL_DETACH_BYTE, (size_t) n);
                        if (d)
                                n = d - buf;
                        if (n > 0 && console_send(sock, CONSOLE_INPUT, buf, (size_t) n, false) < 0)
                                break;
                        if (d) {
                                (void) console_send(sock, CONSOLE_DETACH, NULL, 0, false);
                                ret = 1;
                                break;
                        }
                }
        }
        (void) sigaction(SIGWINCH, &old, NULL);
        for (size_t i = 0; i < ELEMENTSOF(quit_signals); i++)
                (void) sigaction(quit_signals[i], &old_quit[i], NULL);
        if (is_tty)
                (void) tcsetattr(STDIN_FILENO, TCSANOW, &saved);
        return ret;
}

/* A stdin job: stdin to the job until its end (then EOF), in a child while the parent follows the log; the
 * job's end (the socket hung up) ends it too, also while stdin has nothing to say. */
static int pump_stdin(int sock) {
        char buf[CONSOLE_DATA_MAX];

        for (;;) {
                struct pollfd p[2] = { { .fd = STDIN_FILENO, .events = POLLIN }, { .fd = sock, .events = POLLRDHUP } };
                ssize_t n;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[1].revents)
                        return 0;
                n = read(STDIN_FILENO, buf, sizeof buf);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        return console_send(sock, CONSOLE_EOF, NULL, 0, false);
                if (console_send(sock, CONSOLE_INPUT, buf, (size_t) n, false) < 0)
                        return -EPIPE;
        }
}

static int fork_pump(int sock, PidRef *ret) {
        int r = safe_fork_full("(pondctl-stdin)", NULL, &sock, 1, FORK_RESET_SIGNALS | FORK_DEATHSIG, ret);

        if (r == 0)
                _exit(pump_stdin(sock) < 0 ? 1 : 0);
        return r < 0 ? r : 0;
}

int ctl_console_session(CtlConsole *c) {
        _cleanup_close_ int sock = -EBADF;
        int mode, r;

        c->detached = false;
        r = connect_wait(c->paths, c->job_id, c->wait, &sock);
        if (r == -ESRCH) {
                if (!c->wait)
                        log_error("Job %s is not running: nothing to attach to.", c->job_id);
                return r;
        }
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the console of job %s: %m", c->job_id);
        mode = attach_request(sock, c->job_id);
        if (mode == -ESRCH && !c->wait)
                log_error("Job %s ended as it was attached to.", c->job_id);
        if (mode < 0)
                return mode;
        c->tty = mode == 't';
        if (c->tty) {
                r = relay_tty(sock);
                c->detached = r > 0;
                c->hung_up = r == 2;
                return 0;
        }
        r = fork_pump(sock, &c->pump);
        if (r < 0)
                return log_error_errno(r, "Cannot fork the stdin relay: %m");
        return 0;
}

void ctl_console_done(CtlConsole *c) {
        sigkill_wait(&c->pump);
}

int ctl_verb_attach(int argc, char *argv[]) {
        _cleanup_(ctl_console_done) CtlConsole c = { .pump = PIDREF_NULL };
        _cleanup_(job_paths_done) JobPaths paths = {};
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        const char *id;
        siginfo_t si;
        int r;

        if (ctl_job_id_arg(argc, argv, 1, &id) < 0)
                return CTL_EXIT_USAGE;
        if (job_paths_init(&paths, id) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        if (!ctl_job_known(&paths, id))
                return ctl_fail(CTL_EXIT_NOT_FOUND, "No job %s.", id);
        if (ctl_load_public_key(NULL, pk) < 0)
                return CTL_EXIT_UNVERIFIED;
        c = (CtlConsole) { .paths = &paths, .job_id = id, .pump = PIDREF_NULL };
        r = ctl_console_session(&c);
        if (r < 0)
                return CTL_EXIT_ERROR;
        if (c.detached) {
                log_info("%s job %s; it runs on%s (pondctl attach %s).", c.hung_up ? "Hung up on" : "Detached from",
                         id, c.hung_up ? " unless it asked for kill_on_hangup" : "", id);
                return CTL_EXIT_OK;
        }
        if (!c.tty) {
                /* stdin only: until the caller's stdin ends; the output is the job's log (pondctl logs -f) */
                r = pidref_wait(&c.pump, USEC_INFINITY, &si);
                return r < 0 || !siginfo_exited_ok(&si) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
        }
        return ctl_wait(&(CtlWait) { .job_id = id, .paths = &paths, .pk = pk, .quiet = true });
}

static const char *state_of(const JobPaths *paths, const char *id, sd_bus *bus, char **buf) {
        _cleanup_json_ json_object *result = NULL;
        _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
        _cleanup_free_ char *unit = NULL;

        (void) ctl_result_peek(paths, id, &result);
        if (!result && bus && unit_name(UNIT_JOB_SERVICE, id, &unit) >= 0)
                (void) ctl_unit_get_state(bus, unit, false, &st);
        *buf = strdup(ctl_job_state(result, bus ? &st : NULL));
        return *buf ?: "unknown";
}

/* The exec's end without a status: said, in the JSON object too with --json. */
static int exec_lost(CtlExecCapture *cap, const char *id, char **argv, int status, bool refused, const char *reason) {
        if (cap->on)
                (void) ctl_exec_json_print(cap, id, argv, &(CtlExecEnd) { .reason = reason, .refused = refused });
        return refused ? ctl_fail_untrusted(status, "Exec refused: %s", reason)
                       : ctl_fail(status, "Job %s %s.", id, reason);
}

/* The exec's output as it comes (kept instead with --json), then its status: the verb's exit status. */
static int exec_relay(int sock, const char *id, char **argv, CtlExecCapture *cap) {
        char buf[CONSOLE_PACKET_MAX + 1]; /* + 1: room for a NUL after the longest packet */

        for (;;) {
                ssize_t n = recv(sock, buf, sizeof buf - 1, 0);
                int32_t status;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return exec_lost(cap, id, argv, CTL_EXIT_FAILED, false,
                                         "ended during the exec: no exit status");
                switch (buf[0]) {
                case CONSOLE_STDOUT:
                case CONSOLE_STDERR: {
                        int stream = buf[0] == CONSOLE_STDOUT ? 0 : 1;
                        int out = stream == 0 ? STDOUT_FILENO : STDERR_FILENO;

                        if (!cap->on)
                                (void) write_all(out, buf + 1, (size_t) n - 1);
                        else if (ctl_exec_capture_add(cap, stream, buf + 1, (size_t) n - 1) < 0)
                                return ctl_fail(CTL_EXIT_ERROR, "Out of memory for the exec's output.");
                        break;
                }
                case CONSOLE_EXIT: {
                        uint32_t flags = 0;

                        if (n - 1 != sizeof status && n - 1 != sizeof status + sizeof flags)
                                return CTL_EXIT_FAILED;
                        memcpy(&status, buf + 1, sizeof status);
                        if (n - 1 > (ssize_t) sizeof status)
                                memcpy(&flags, buf + 1 + sizeof status, sizeof flags);
                        if (cap->on) {
                                if (ctl_exec_json_print(cap, id, argv, &(CtlExecEnd) { .status = status,
                                                                                       .flags = flags }) < 0)
                                        return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
                                return status & 0xff;
                        }
                        if (flags & CONSOLE_EXIT_TIMED_OUT)
                                log_error("pondctl: the exec timed out: its process group was killed.");
                        if (flags & CONSOLE_EXIT_TRUNCATED)
                                log_error("pondctl: the exec's output went beyond its cap: the rest was dropped.");
                        return status & 0xff;
                }
                case CONSOLE_ERROR:
                        buf[n] = 0;
                        return exec_lost(cap, id, argv, CTL_EXIT_REFUSED, true, buf + 1);
                default:
                        break;
                }
        }
}

#define EXEC_USAGE "Usage: pondctl exec [--cwd DIR] [--env NAME=VALUE]... [--timeout SECONDS] " \
        "[--max-output BYTES] [-i] [--json] ID -- CMD [ARGS...]"

/* The exec's options (before ID) into req, and the index of ID: 0, or the verb's exit status having said
 * why not. */
static int exec_options(int argc, char *argv[], ConsoleExecRequest *req, CtlExecCapture *cap, int *ret_at) {
        static const struct option options[] = {
                { "cwd", required_argument, NULL, 'C' },
                { "env", required_argument, NULL, 'e' },
                { "timeout", required_argument, NULL, 'T' },
                { "max-output", required_argument, NULL, 'M' },
                { "stdin", no_argument, NULL, 'i' },
                { "json", no_argument, NULL, 'j' },
                {}
        };
        double secs;
        char *end;
        int c;

        optind = 0; /* full re-initialization: verbs parse their own options */
        while ((c = getopt_long(argc, argv, "+i", options, NULL)) >= 0)
                switch (c) {
                case 'C':
                        free(req->cwd);
                        req->cwd = strdup(optarg);
                        if (!req->cwd || optarg[0] != '/')
                                return ctl_fail(CTL_EXIT_USAGE, "Invalid --cwd '%s': an absolute path.", optarg);
                        break;
                case 'e':
                        if (!strchr(optarg, '=') || strv_push(&req->env, strdup(optarg)) < 0)
                                return ctl_fail(CTL_EXIT_USAGE, "Invalid --env '%s': NAME=VALUE.", optarg);
                        break;
                case 'T':
                        errno = 0;
                        secs = strtod(optarg, &end);
                        if (errno || *end || !(secs > 0) || secs * 1000 > CONSOLE_EXEC_TIMEOUT_MS_MAX)
                                return ctl_fail(CTL_EXIT_USAGE, "Invalid --timeout '%s': seconds, above 0, at most "
                                                "7 days.", optarg);
                        req->timeout_ms = (uint32_t) (secs * 1000) ?: 1;
                        break;
                case 'M':
                        if (parse_size(optarg, &req->output_max) < 0 || req->output_max == 0 ||
                            req->output_max > CONSOLE_EXEC_OUTPUT_MAX)
                                return ctl_fail(CTL_EXIT_USAGE, "Invalid --max-output '%s': bytes (K, M, G), 1 to "
                                                "1G.", optarg);
                        break;
                case 'i':
                        req->want_stdin = true;
                        break;
                case 'j':
                        cap->on = true;
                        break;
                default:
                        return ctl_fail(CTL_EXIT_USAGE, EXEC_USAGE);
                }
        /* ID -- CMD...: the "--" is required (CMD may have options of its own) */
        if (argc - optind < 3 || !streq(argv[optind + 1], "--"))
                return ctl_fail(CTL_EXIT_USAGE, EXEC_USAGE);
        *ret_at = optind;
        return 0;
}

/* -i: stdin to its end, as CONSOLE_INPUT packets, then CONSOLE_EOF. */
static int exec_send_stdin(int sock) {
        char buf[CONSOLE_DATA_MAX];

        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf, sizeof buf);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return console_send(sock, CONSOLE_EOF, NULL, 0, false);
                n = console_send(sock, CONSOLE_INPUT, buf, (size_t) n, false);
                if (n < 0)
                        return (int) n;
        }
}

int ctl_verb_exec(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *packed = NULL, *state = NULL;
        _cleanup_(console_exec_request_done) ConsoleExecRequest req = {};
        _cleanup_(ctl_exec_capture_done) CtlExecCapture cap = { .started_usec = clock_usec(CLOCK_MONOTONIC) };
        _cleanup_close_ int sock = -EBADF;
        bool plain;
        const char *id;
        size_t len;
        int r, at;

        r = exec_options(argc, argv, &req, &cap, &at);
        if (r != 0)
                return r;
        if (ctl_job_id_arg(at + 1, argv, at, &id) < 0)
                return CTL_EXIT_USAGE;
        plain = !req.cwd && !req.env && !req.timeout_ms && !req.output_max && !req.want_stdin;
        if (job_paths_init(&paths, id) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        if (!ctl_job_known(&paths, id))
                return ctl_fail(CTL_EXIT_NOT_FOUND, "No job %s.", id);
        /* a plain exec asks as pondctl always did: the runtime's exec (profile none) takes only that */
        req.argv = argv + at + 2; /* argv's, not req's: borrowed for the packing only */
        r = plain ? console_pack_argv(req.argv, &packed, &len) : console_pack_exec(&req, &packed, &len);
        req.argv = NULL;
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_USAGE, r, "The command is too long or empty: %m");
        r = console_connect(paths.console, &sock);
        if (r == -ENOENT || r == -ECONNREFUSED) {
                _cleanup_free_ char *why = NULL;

                (void) ctl_bus_open(&bus);
                why = strdupf("job %s is not running (%s)", id, state_of(&paths, id, bus, &state));
                return exec_lost(&cap, id, argv + at + 2, CTL_EXIT_REFUSED, true, why ?: "job not running");
        }
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot connect to the console of job %s: %m", id);
        (void) signal(SIGPIPE, SIG_IGN);
        r = console_send(sock, plain ? CONSOLE_EXEC : CONSOLE_EXEC_REQUEST, packed, len, false);
        if (r >= 0 && req.want_stdin)
                r = exec_send_stdin(sock);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot ask job %s for the exec: %m", id);
        return exec_relay(sock, id, argv + at + 2, &cap);
}
