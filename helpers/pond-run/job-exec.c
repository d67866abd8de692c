/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-exec.c: `pondctl exec ID -- CMD` (docs/job-spec.md, "Interactive jobs"): CMD runs beside the job's
 * payload with the posture of the payload itself. Where the job's init serves execs (job-init.c: every
 * confined job its backend passes a channel to), the init forks CMD: it inherits the init's user,
 * capabilities, seccomp filter, Landlock, namespaces, cgroup and rlimits by construction, and the call
 * takes the options of console.h's ConsoleExecRequest (cwd, env, stdin bytes, a timeout, an output cap).
 * Elsewhere (profile none) the runtime's exec runs the bundle's own process object with its args replaced
 * (the same user, capabilities, no_new_privs, cwd, env, rlimits), the exec step moved into the job's scope
 * before it runs; a backend whose exec would not apply the job's seccomp filter is refused. Audited at its
 * start and end (the caller's uid, argv, rc, duration) and recorded in the job's transcript before it may
 * run (job-transcript.c: an exec it cannot hold is refused); its stdout, stderr and exit status go back to
 * the caller. Refused once the payload's init has exited. */
#include <assert.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"
#include "oci/oci.h"

/* The knob exec_concurrency bounds the execs of one job at once, through the init or the runtime. */
static_assert(POLICY_EXEC_CONCURRENCY_MAX <= INIT_SLOTS, "the init serves every exec the policy allows");
#define JOB_EXEC_CONFIG_MAX (4 * 1024 * 1024)

#define refuse(c, r, ...) job_console_conn_refuse(c, "Exec", r, __VA_ARGS__)

/* "a b c", at most size - 1 bytes (an audit record, not a command line to run). */
static const char *argv_words(char **argv, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = 0;
        for (char **a = argv; *a && n + 1 < size; a++)
                n += (size_t) snprintf(buf + n, size - n, "%s%s", a == argv ? "" : " ", *a);
        return buf;
}

/* The bundle's process object with args = the payload's prefix (pond-init and its flags) + argv. */
static int process_file(Job *j, char **argv, unsigned number, char **ret_path) {
        _cleanup_free_ char *config_path = NULL, *buf = NULL, *name = NULL, *path = NULL;
        _cleanup_json_ json_object *config = NULL, *process = NULL;
        _cleanup_close_ int dfd = -EBADF;
        json_object *args, *new_args;
        size_t len, n_args, n_cmd = strv_length(j->input.spec->command);
        const char *s;
        int r;

        if (asprintf(&config_path, "%s/config.json", j->paths.bundle) < 0 ||
            asprintf(&name, "exec-%u.json", number) < 0 || asprintf(&path, "%s/%s", j->paths.run, name) < 0)
                return -ENOMEM;
        r = read_full_file(config_path, JOB_EXEC_CONFIG_MAX, &buf, &len);
        if (r < 0)
                return r;
        config = json_tokener_parse(buf);
        if (!json_object_object_get_ex(config, "process", &process) ||
            !json_object_object_get_ex(process, "args", &args) || !json_object_is_type(args, json_type_array))
                return -EBADMSG;
        n_args = json_object_array_length(args);
        if (n_args < n_cmd)
                return -EBADMSG;
        json_object_get(process);
        new_args = json_object_new_array();
        if (!new_args)
                return -ENOMEM;
        for (size_t i = 0; i < n_args - n_cmd; i++)
                json_object_array_add(new_args, json_object_get(json_object_array_get_idx(args, i)));
        for (char **a = argv; *a; a++)
                json_object_array_add(new_args, json_object_new_string(*a));
        if (json_object_object_add(process, "args", new_args) < 0 ||
            json_object_object_add(process, "terminal", json_object_new_boolean(false)) < 0)
                return -ENOMEM;
        json_object_object_del(process, "consoleSize");
        dfd = open(j->paths.run, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        s = json_object_to_json_string_ext(process, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        r = write_file_atomic_at(dfd, name, s, strlen(s), 0600);
        if (r < 0)
                return r;
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* An exec counts against JOB_EXEC_MAX from its start until it has ended, whichever way. */
static void uncount(ConsoleConn *c) {
        if (c->counted) {
                c->job->console.execs_running--;
                c->counted = false;
        }
}

/* Once the exec has exited and its output is drained and taken: its status to the caller (queued if the
 * caller is slow: the supervisor never blocks on one), then the connection goes. */
static void maybe_finish(ConsoleConn *c) {
        Job *j = c->job;
        struct { int32_t status; uint32_t flags; } x = { c->status, 0 };

        if (!c->exited || c->pipe[0] >= 0 || c->pipe[1] >= 0)
                return;
        /* all its output has passed (through the init: ended with its INIT_EXIT already) */
        job_transcript_end(j, c->number, c->status, c->exit_flags, false);
        if (c->pending)
                return;
        if (!c->exit_sent) {
                if (c->exit_flags & INIT_EXIT_TIMED_OUT)
                        x.flags |= CONSOLE_EXIT_TIMED_OUT;
                if (c->exit_flags & INIT_EXIT_TRUNCATED)
                        x.flags |= CONSOLE_EXIT_TRUNCATED;
                unsigned long long ms = (clock_usec(CLOCK_MONOTONIC) - c->started_usec) / 1000;

                audit_event(&j->audit, POND_EVENT_EXEC, x.status, "exec %u ended: rc %d in %llu ms%s%s", c->number,
                            (int) x.status, ms,
                            x.flags & CONSOLE_EXIT_TIMED_OUT ? ", timed out" : "",
                            x.flags & CONSOLE_EXIT_TRUNCATED ? ", output truncated" : "");
                uncount(c);
                c->exit_sent = true;
                if (job_console_conn_send(c, CONSOLE_EXIT, &x, sizeof x) == -EAGAIN)
                        return;
        }
        job_console_conn_free(c);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ConsoleConn *c = userdata;
        int i = fd == c->pipe[0] ? 0 : 1;
        char buf[CONSOLE_DATA_MAX];
        ssize_t n;
        int r;

        if (c->pending)
                return 0; /* the caller has not taken the last packet: the pipe holds the rest */
        n = read(fd, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                c->pipe_src[i] = sd_event_source_disable_unref(c->pipe_src[i]);
                c->pipe[i] = safe_close(c->pipe[i]);
                maybe_finish(c);
                return 0;
        }
        job_transcript_output(c->job, c->number, i == 0 ? CONSOLE_STDOUT : CONSOLE_STDERR, buf, (size_t) n);
        r = job_console_conn_send(c, i == 0 ? CONSOLE_STDOUT : CONSOLE_STDERR, buf, (size_t) n);
        if (r == -EAGAIN)
                /* the caller is slow: the exec waits for it (job_exec_resume()) */
                for (int k = 0; k < 2; k++)
                        if (c->pipe_src[k])
                                (void) sd_event_source_set_enabled(c->pipe_src[k], SD_EVENT_OFF);
        return 0;
}

void job_exec_resume(ConsoleConn *c) {
        job_init_exec_taken(c);
        for (int k = 0; k < 2; k++)
                if (c->pipe_src[k])
                        (void) sd_event_source_set_enabled(c->pipe_src[k], SD_EVENT_ON);
        maybe_finish(c);
}

static int on_exec_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        ConsoleConn *c = userdata;

        /* reaped by sd-event: the pidfd is ours to close */
        c->child_src = sd_event_source_disable_unref(c->child_src);
        c->pid.fd = safe_close(c->pid.fd);
        c->pid = PIDREF_NULL;
        c->exited = true;
        c->status = si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
        maybe_finish(c);
        return 0;
}

/* The child waits for go: it runs only once it is in the job's scope. */
static int fork_exec(Job *j, ConsoleConn *c, char **argv, int *ret_go) {
        _cleanup_close_ int go_read = -EBADF, go_write = -EBADF, out_w = -EBADF, err_w = -EBADF;
        struct rlimit limits[OCI_JOB_RLIMITS];
        int resources[OCI_JOB_RLIMITS];
        int go[2], out[2], err[2], r;

        oci_job_rlimits(j->input.resolved, resources, limits);
        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        go_read = go[0];
        go_write = go[1];
        if (pipe2(out, O_CLOEXEC) < 0)
                return -errno;
        c->pipe[0] = out[0];
        out_w = out[1];
        if (pipe2(err, O_CLOEXEC) < 0)
                return -errno;
        c->pipe[1] = err[0];
        err_w = err[1];
        r = safe_fork_full("(pond-exec)", (const int[3]) { -EBADF, out_w, err_w }, &go_read, 1,
                           FORK_EXEC_FLAGS | FORK_REARRANGE_STDIO, &c->pid);
        if (r < 0)
                return r;
        if (r == 0) {
                char x;

                if (read(go_read, &x, 1) != 1)
                        _exit(127); /* never outside the scope */
                /* under a user namespace the runtime leaves them to its caller, as for the create step */
                for (size_t i = 0; j->userns.on && i < OCI_JOB_RLIMITS; i++)
                        if (setrlimit(resources[i], &limits[i]) < 0)
                                _exit(127);
                runtime_execv(argv);
        }
        *ret_go = TAKE_FD(go_write);
        return 0;
}

static int runtime_job(Job *j, char **ret_log) {
        return asprintf(ret_log, "%s/" JOB_RUNTIME_LOG, j->paths.run) < 0 ? -ENOMEM : 0;
}

/* A runtime exec the job's end overtook: what its pipes hold now goes into the transcript, without waiting,
 * and it ends there without a status (its process went with the job's scope). */
static void drain_recorded(ConsoleConn *c) {
        char buf[CONSOLE_DATA_MAX];

        if (c->init_slot >= 0 || !job_transcript_running(c->job, c->number))
                return;
        for (int i = 0; i < 2; i++)
                for (ssize_t n; c->pipe[i] >= 0 && (n = read(c->pipe[i], buf, sizeof buf)) > 0;)
                        job_transcript_output(c->job, c->number, i == 0 ? CONSOLE_STDOUT : CONSOLE_STDERR, buf,
                                              (size_t) n);
        job_transcript_end(c->job, c->number, -1, 0, true);
}

/* The release hook of an exec's connection (job_console_conn_free()). */
static void exec_release(ConsoleConn *c) {
        drain_recorded(c);
        job_init_exec_abandon(c);
        if (c->exec_req) {
                console_exec_request_done(c->exec_req);
                free(c->exec_req);
                c->exec_req = NULL;
        }
        c->child_src = sd_event_source_disable_unref(c->child_src);
        for (int i = 0; i < 2; i++) {
                c->pipe_src[i] = sd_event_source_disable_unref(c->pipe_src[i]);
                c->pipe[i] = safe_close(c->pipe[i]);
        }
        uncount(c);
        sigkill_wait(&c->pid); /* the job ended under it: its process in the scope went with the scope */
}

static int exec_runtime(ConsoleConn *c, const ConsoleExecRequest *req) {
        Job *j = c->job;
        JobConsole *con = &j->console;
        _cleanup_free_ char *file = NULL, *log_file = NULL, *why = NULL;
        _cleanup_strv_free_ char **rt_argv = NULL;
        _cleanup_close_ int go = -EBADF;
        char **argv = req->argv;
        char words[512];
        int r;

        if (req->cwd || req->env || req->timeout_ms || req->output_max || req->want_stdin)
                return refuse(c, -EOPNOTSUPP, "exec into job %s: cwd, env, stdin, timeout and output cap need the "
                              "job's init, which this job does not have (profile %s, backend %s)", j->paths.id,
                              j->input.resolved->profile, j->input.provider->name);
        if (!j->input.provider->exec_argv)
                return refuse(c, -EOPNOTSUPP, "exec is not available with backend %s", j->input.provider->name);
        /* the same posture or none: an exec without the job's filter would be a way around it */
        if (j->input.resolved->confined && !j->input.provider->exec_keeps_seccomp)
                return refuse(c, -EOPNOTSUPP, "exec into job %s refused: %s's exec would not apply the job's seccomp "
                              "filter (gVisor installs it on the container's first process only), and the job's "
                              "init serves no execs (%s passes it no channel beside a payload's %s)", j->paths.id,
                              j->input.provider->name, j->input.provider->name,
                              j->input.spec->tty ? "terminal" : "stdin");
        if (con->execs_running >= j->input.resolved->exec_concurrency)
                return refuse(c, -EBUSY, "job %s has %u execs running already, its exec_concurrency",
                              j->paths.id, con->execs_running);
        r = process_file(j, argv, ++con->n_execs, &file);
        if (r >= 0)
                r = runtime_job(j, &log_file);
        if (r >= 0)
                r = j->input.provider->exec_argv(&(RuntimeJob) { .state_root = j->paths.runtime_root,
                                                                 .container_id = j->paths.container,
                                                                 .log_file = log_file,
                                                                 .bundle = j->paths.bundle,
                                                                 .host_network = j->input.resolved->net == NET_OPEN,
                                                                 .netns = j->network.up ?
                                                                          j->network.net.netns_path : NULL },
                                                 file, &rt_argv);
        if (r < 0)
                return refuse(c, r, "exec into job %s: cannot prepare it: %s", j->paths.id, strerror(-r));
        r = fork_exec(j, c, rt_argv, &go);
        if (r < 0)
                return refuse(c, r, "exec into job %s: cannot fork: %s", j->paths.id, strerror(-r));
        r = scope_attach(j->bus, j->paths.scope, c->pid.pid);
        if (r < 0) {
                sigkill_wait(&c->pid);
                return refuse(c, r, "exec into job %s: cannot move it into %s: %s", j->paths.id, j->paths.scope,
                              strerror(-r));
        }
        for (int i = 0; r >= 0 && i < 2; i++) {
                (void) fcntl(c->pipe[i], F_SETFL, O_NONBLOCK);
                r = sd_event_add_io(con->event, &c->pipe_src[i], c->pipe[i], EPOLLIN, on_output, c);
        }
        if (r >= 0)
                r = sd_event_add_child_pidfd(con->event, &c->child_src, c->pid.fd, WEXITED, on_exec_exit, c);
        if (r < 0) {
                sigkill_wait(&c->pid);
                return refuse(c, r, "exec into job %s: %s", j->paths.id, strerror(-r));
        }
        /* recorded before it may run: an exec the transcript cannot hold does not run */
        r = job_transcript_begin(c, req, "runtime", false, &why);
        if (r < 0) {
                sigkill_wait(&c->pid);
                return refuse(c, r, "exec into job %s refused: %s", j->paths.id, why ?: strerror(-r));
        }
        audit_event(&j->audit, POND_EVENT_EXEC, AUDIT_NO_RC, "exec %u by uid %u in %s: %s", c->number,
                    (unsigned) c->uid, j->paths.scope, argv_words(argv, words, sizeof words));
        con->execs_running++;
        c->counted = true;
        if (write(go, "g", 1) != 1)
                log_warning_errno(errno, "Cannot let exec %u go: %m", c->number); /* it exits 127: reported */
        return 0;
}

/* Through the job's init: one frame to it; the output and the exit come back through job-init.c. */
static int exec_init(ConsoleConn *c, const ConsoleExecRequest *req) {
        Job *j = c->job;
        JobConsole *con = &j->console;
        _cleanup_free_ char *why = NULL;
        char words[512];
        int r;

        if (con->execs_running >= j->input.resolved->exec_concurrency)
                return refuse(c, -EBUSY, "job %s has %u execs running already, its exec_concurrency",
                              j->paths.id, con->execs_running);
        /* recorded before it is sent: an exec the transcript cannot hold does not run */
        r = job_transcript_begin(c, req, "init", false, &why);
        if (r < 0)
                return refuse(c, r, "exec into job %s refused: %s", j->paths.id, why ?: strerror(-r));
        c->progress = maybe_finish;
        r = job_init_exec(c, req, 0);
        if (r < 0)
                job_transcript_abort(j, c->number);
        if (r == -EBUSY)
                return refuse(c, r, "job %s has %d execs running or ending already, the most its init serves",
                              j->paths.id, INIT_SLOTS);
        if (r < 0)
                return refuse(c, r, "exec into job %s: cannot send it to the job's init: %s", j->paths.id,
                              strerror(-r));
        audit_event(&j->audit, POND_EVENT_EXEC, AUDIT_NO_RC, "exec %u by uid %u through the job's init: %s",
                    c->number, (unsigned) c->uid, argv_words(req->argv, words, sizeof words));
        con->execs_running++;
        c->counted = true;
        return 0;
}

static int exec_start(ConsoleConn *c, const ConsoleExecRequest *req) {
        Job *j = c->job;

        c->started_usec = clock_usec(CLOCK_MONOTONIC);
        if (j->console.listen < 0 || j->outcome.ended_usec != 0 || j->runtime.init_pid <= 0)
                return refuse(c, -ESRCH, "job %s is not running: exec refused", j->paths.id);
        if (job_init_serves(j))
                return exec_init(c, req);
        return exec_runtime(c, req);
}

int job_exec_request(ConsoleConn *c, const char *buf, size_t n) {
        _cleanup_(console_exec_request_done) ConsoleExecRequest req = {};
        const char *err = NULL;
        int r;

        c->release = exec_release;
        if (buf[0] == CONSOLE_EXEC)
                r = console_unpack_argv(buf + 1, n - 1, &req.argv);
        else
                r = console_unpack_exec(buf + 1, n - 1, &req, &err);
        if (r < 0)
                return refuse(c, r, "%s", err ?: "exec request: malformed command");
        if (!req.want_stdin)
                return exec_start(c, &req);
        /* its stdin first, up to the caller's end of file */
        c->exec_req = malloc(sizeof *c->exec_req);
        if (!c->exec_req)
                return refuse(c, -ENOMEM, "out of memory");
        *c->exec_req = req;
        req = (ConsoleExecRequest) {};
        return 0;
}

int job_exec_input(ConsoleConn *c, const char *buf, size_t n) {
        ConsoleExecRequest *req = c->exec_req;
        char *p;
        int r;

        if (!req)
                return 0; /* running: an exec takes no input */
        if (buf[0] == CONSOLE_INPUT) {
                if (req->stdin_len + n - 1 > INIT_STDIN_MAX)
                        return refuse(c, -E2BIG, "exec into job %s: stdin beyond %d bytes", c->job->paths.id,
                                      INIT_STDIN_MAX);
                p = realloc(req->stdin_data, req->stdin_len + n - 1 ?: 1);
                if (!p)
                        return refuse(c, -ENOMEM, "out of memory");
                memcpy(p + req->stdin_len, buf + 1, n - 1);
                req->stdin_data = p;
                req->stdin_len += n - 1;
                return 0;
        }
        if (buf[0] != CONSOLE_EOF)
                return 0;
        c->exec_req = NULL;
        r = exec_start(c, req);
        console_exec_request_done(req);
        free(req);
        return r;
}
