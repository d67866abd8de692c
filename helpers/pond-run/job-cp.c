/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-cp.c: `pondctl cp` (docs/job-spec.md, "Copying files"): one regular file into the running job (put) or
 * out of it (get). The caller names a direction and a path only; the supervisor checks the path (absolute,
 * normalized, strictly below one of the job's writable directories: /workspace where the profile's file
 * system is writable, the job's home, /tmp) and builds the command itself: pond-init's copy mode
 * (`/dev/.pond-init --put PATH --beneath ROOT --size N --mode M` or `--get PATH --beneath ROOT --max N`),
 * forked by the job's init as an exec (job-init.c), so the copy has the payload's posture and resolves the
 * path beneath ROOT without following links. A put's bytes stream to it one chunk at a time (the caller is
 * not read while the init holds one); a get's come back as the exec's stdout. At most CONSOLE_COPY_MAX
 * bytes either way. Audited at its start and end (the caller's uid, direction, path, bytes, sha256). */
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "console/copy.h"
#include "job.h"
#include "policy/home.h"
#include "policy/landlock.h"

typedef struct JobCopy {
        ConsoleCopyRequest req;
        crypto_hash_sha256_state sha;
        uint64_t bytes;                 /* put: forwarded to the init; get: sent to the caller */
        bool eof;                       /* put: the caller's end came */
        bool over;                      /* put: more than announced came: forwarded once, then dropped */
        bool counted;                   /* it holds one of the init's slots (JobConsole.execs_running) */
} JobCopy;

#define refuse(c, r, ...) job_console_conn_refuse(c, "Copy", r, __VA_ARGS__)

/* The job's writable directories, as the payload sees them (its Landlock rules grant the same). */
static void copy_roots(const Job *j, const char *roots[4]) {
        size_t n = 0;

        if (j->staging.stage.workspace && !j->staging.stage.readonly && j->input.resolved->fs != FS_READONLY)
                roots[n++] = "/workspace";
        if (j->home.path)
                roots[n++] = HOME_DIR;
        roots[n++] = "/tmp";
        roots[n] = NULL;
}

static void uncount(ConsoleConn *c) {
        if (c->copy && c->copy->counted) {
                c->job->console.execs_running--;
                c->copy->counted = false;
        }
}

static void copy_release(ConsoleConn *c) {
        job_init_exec_abandon(c);
        uncount(c);
        if (c->copy) {
                console_copy_request_done(&c->copy->req);
                free(c->copy);
                c->copy = NULL;
        }
}

static void hex_digest(JobCopy *cp, char hex[crypto_hash_sha256_BYTES * 2 + 1]) {
        uint8_t d[crypto_hash_sha256_BYTES];

        crypto_hash_sha256_final(&cp->sha, d);
        sodium_bin2hex(hex, crypto_hash_sha256_BYTES * 2 + 1, d, sizeof d);
}

/* The copy ended (its INIT_EXIT): audited, its status to the caller once the pending packet went; the
 * connection goes once a put's caller has said its end (a put that failed early drops the rest). */
static void copy_finish(ConsoleConn *c) {
        JobCopy *cp = c->copy;
        struct { int32_t status; uint32_t flags; } x = { c->status, 0 };
        char hex[crypto_hash_sha256_BYTES * 2 + 1];

        if (!c->exited || c->pending || !cp)
                return;
        if (c->src)
                (void) sd_event_source_set_enabled(c->src, SD_EVENT_ON);
        if (!c->exit_sent) {
                unsigned long long ms = (clock_usec(CLOCK_MONOTONIC) - c->started_usec) / 1000;

                /* a get cut at the cap is a failure, never a short file */
                if (c->exit_flags & INIT_EXIT_TRUNCATED && x.status == 0)
                        x.status = 1;
                hex_digest(cp, hex);
                audit_event(&c->job->audit, POND_EVENT_COPY, x.status, "cp %u ended: %s %s, %llu bytes, sha256 %s: %s "
                            "in %llu ms", c->number, cp->req.put ? "put" : "get", cp->req.path,
                            (unsigned long long) cp->bytes, hex, x.status == 0 ? "done" : "failed", ms);
                uncount(c);
                c->exit_sent = true;
                if (job_console_conn_send(c, CONSOLE_EXIT, &x, sizeof x) == -EAGAIN)
                        return;
        }
        if (!cp->req.put || cp->eof || c->fd < 0)
                job_console_conn_free(c);
}

void job_cp_resume(ConsoleConn *c) {
        job_init_exec_taken(c);
        copy_finish(c);
}

static void on_get_output(ConsoleConn *c, const char *data, size_t len) {
        crypto_hash_sha256_update(&c->copy->sha, (const unsigned char *) data, len);
        c->copy->bytes += len;
}

/* The init wrote the last chunk: the caller is read again. */
static void on_stdin_taken(ConsoleConn *c) {
        if (c->src)
                (void) sd_event_source_set_enabled(c->src, SD_EVENT_ON);
}

static int copy_argv(const ConsoleCopyRequest *req, const char *root, char ***ret) {
        char size[32], mode[16];

        snprintf(size, sizeof size, "%" PRIu64, req->put ? req->size : (uint64_t) CONSOLE_COPY_MAX);
        snprintf(mode, sizeof mode, "%04" PRIo32, req->mode);
        if (req->put)
                return strv_build(ret, LANDLOCK_INIT_PATH, "--put", req->path, "--beneath", root, "--size", size,
                                  "--mode", mode, NULL);
        return strv_build(ret, LANDLOCK_INIT_PATH, "--get", req->path, "--beneath", root, "--max", size, NULL);
}

static int copy_start(ConsoleConn *c, JobCopy *cp) {
        Job *j = c->job;
        JobConsole *con = &j->console;
        const char *roots[4], *root = NULL, *why = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *twhy = NULL;
        ConsoleExecRequest ex = {};
        int r;

        if (j->console.listen < 0 || j->outcome.ended_usec != 0 || j->runtime.init_pid <= 0)
                return refuse(c, -ESRCH, "job %s is not running: cp refused", j->paths.id);
        if (!job_init_serves(j))
                return refuse(c, -EOPNOTSUPP, "cp with job %s refused: it goes through the job's init, which serves "
                              "this job no requests (profile %s, backend %s%s)", j->paths.id,
                              j->input.resolved->profile, j->input.provider->name,
                              !j->input.resolved->confined ? ": pondctl exec ID -- cat PATH reads a file there" :
                              j->input.provider->init_channel == RUNTIME_INIT_CHANNEL_NONE ? "" :
                              ", whose terminal or stdin takes the init's channel");
        copy_roots(j, roots);
        if (copy_path_check(cp->req.path, (char *const *) roots, &root, &why) < 0)
                return refuse(c, -EINVAL, "cp %s: %s (the job's writable directories: %s%s%s%s%s)", cp->req.path,
                              why, roots[0], roots[1] ? ", " : "", roots[1] ?: "", roots[1] && roots[2] ? ", " : "",
                              roots[1] && roots[2] ? roots[2] : "");
        if (con->execs_running >= j->input.resolved->exec_concurrency)
                return refuse(c, -EBUSY, "job %s has %u execs or copies running already, its exec_concurrency",
                              j->paths.id, con->execs_running);
        r = copy_argv(&cp->req, root, &argv);
        if (r < 0)
                return refuse(c, r, "out of memory");
        ex = (ConsoleExecRequest) { .argv = argv, .cwd = (char *) "/", .output_max = CONSOLE_COPY_MAX };
        /* a tool call as an exec is: in the signed transcript, its put's bytes as its stdin, a get's as its
         * stdout; one the transcript cannot hold does not run */
        r = job_transcript_begin(c, &ex, "init", cp->req.put, &twhy);
        if (r < 0)
                return refuse(c, r, "cp with job %s refused: %s", j->paths.id, twhy ?: strerror(-r));
        c->progress = copy_finish;
        c->observe = cp->req.put ? NULL : on_get_output;
        c->stdin_taken = on_stdin_taken;
        r = job_init_exec(c, &ex, cp->req.put ? INIT_EXEC_STDIN_STREAM : 0);
        if (r < 0)
                job_transcript_abort(j, c->number);
        if (r < 0)
                return refuse(c, r, "cp into job %s: cannot send it to the job's init: %s", j->paths.id,
                              r == -EBUSY ? "every slot is busy" : strerror(-r));
        audit_event(&j->audit, POND_EVENT_COPY, AUDIT_NO_RC, "cp %u by uid %u through the job's init: %s %s%s",
                    c->number, (unsigned) c->uid, cp->req.put ? "put" : "get", cp->req.path,
                    cp->req.put ? " (its bytes follow)" : "");
        con->execs_running++;
        cp->counted = true;
        if (cp->req.put && console_send(c->fd, CONSOLE_MODE, "p", 1, false) < 0)
                return -EPIPE; /* the caller went: freed, its copy ends short */
        return 0;
}

int job_cp_request(ConsoleConn *c, const char *buf, size_t n) {
        const char *err = NULL;
        int r;

        c->release = copy_release;
        c->copy = calloc(1, sizeof *c->copy);
        if (!c->copy)
                return refuse(c, -ENOMEM, "out of memory");
        crypto_hash_sha256_init(&c->copy->sha);
        c->started_usec = clock_usec(CLOCK_MONOTONIC);
        r = console_unpack_copy(buf + 1, n - 1, &c->copy->req, &err);
        if (r < 0)
                return refuse(c, r, "%s", err ?: "copy request: malformed");
        return copy_start(c, c->copy);
}

/* A put's bytes: each packet to the init as one chunk, the caller not read until the init took it. Once the
 * copy ended (it failed early), or beyond the announced size, they are dropped. */
int job_cp_input(ConsoleConn *c, const char *buf, size_t n) {
        JobCopy *cp = c->copy;
        int r;

        if (!cp || !cp->req.put || cp->eof)
                return 0;
        if (buf[0] == CONSOLE_EOF) {
                cp->eof = true;
                if (c->exit_sent && !c->pending) {
                        job_console_conn_free(c);
                        return 0;
                }
                r = c->exited ? 0 : job_init_exec_stdin(c, NULL, 0);
                return r < 0 ? refuse(c, r, "cp: cannot end the copy's input: %s", strerror(-r)) : 0;
        }
        if (buf[0] != CONSOLE_INPUT || c->exited || cp->over || n <= 1)
                return 0;
        /* one byte beyond the announced size reaches the copy, which then fails: never a file cut short */
        cp->over = cp->bytes + (n - 1) > cp->req.size;
        cp->bytes += n - 1;
        crypto_hash_sha256_update(&cp->sha, (const unsigned char *) buf + 1, n - 1);
        job_transcript_input(c->job, c->number, buf + 1, n - 1);
        r = job_init_exec_stdin(c, buf + 1, n - 1);
        if (r < 0)
                return refuse(c, r, "cp: cannot pass the bytes on to the job's init: %s", strerror(-r));
        return sd_event_source_set_enabled(c->src, SD_EVENT_OFF);
}
