/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl.h: pondctl's verbs and the pieces they share: building and rewriting job specs (ctl-spec.c), the
 * spool and submission (ctl-submit.c), the job's unit over D-Bus (ctl-bus.c), following the job's log
 * (ctl-log.c), waiting for, verifying and summarizing a result (ctl-wait.c), and the verbs themselves
 * (ctl-run.c, ctl-jobs.c, ctl-verify.c). Verbs return the process exit status. */
#pragma once

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "basic/dirs.h"
#include "basic/log.h"
#include "basic/paths.h"
#include "basic/process-util.h"
#include "basic/unit-name.h"
#include "ctl-escape.h"
#include "ctl-options.h"
#include "policy/policy.h"
#include "policy/spec.h"
#include "result/output.h"
#include "secrets/keys.h"

/* pondctl's exit statuses, one table for every verb (pondctl(1), EXIT STATUS). run and wait also exit with
 * the job's own rc; their statuses from 124 on follow timeout(1) and env(1). */
enum {
        CTL_EXIT_OK = 0,
        CTL_EXIT_ERROR = 1,        /* the verb failed (no bus, I/O); verify/result: the result did not verify */
        CTL_EXIT_NOT_ELIGIBLE = 2, /* dispatch-check: a valid block this worker may not take */
        CTL_EXIT_NOT_COMPARABLE = 2, /* quorum: the results are not re-runs of one job, or one did not complete */
        CTL_EXIT_DISAGREE = 3,     /* quorum: too few results have the same output */
        CTL_EXIT_NOT_FOUND = 4,    /* no such job (as `systemctl status` for no such unit) */
        CTL_EXIT_USAGE = 64,       /* unknown verb or option, missing or extra argument (EX_USAGE) */
        CTL_EXIT_LOST = 123,       /* run, wait: the system bus was out of reach until pondctl's deadline, and
                                    * the job has no result yet: it may still run (pondctl wait ID) */
        CTL_EXIT_TIMEOUT = 124,    /* the job ran out of wall clock */
        CTL_EXIT_REFUSED = 125,    /* refused (locally or by the worker), or a usage error of run/wait */
        CTL_EXIT_FAILED = 126,     /* pond failed: status failed, or the unit failed without a result */
        CTL_EXIT_UNVERIFIED = 127, /* the result did not verify */
        CTL_EXIT_SIGNAL_BASE = 128,/* 128 + N: the job was killed by signal N */
        CTL_EXIT_CANCELLED = 130,
};

/* Verbs log once and return an exit status: `return ctl_fail(CTL_EXIT_ERROR, "No job %s.", id);` */
#define ctl_fail(status, ...) (log_error(__VA_ARGS__), (status))
#define ctl_fail_errno(status, error, ...) (log_error_errno((error), __VA_ARGS__), (status))

#define CTL_SPEC_MAX (1024 * 1024)
#define CTL_JOB_ID_PREFIX "j-"

/* ctl-spec.c: what `pondctl run` options say about the spec; NULL / 0 / empty means "not given". */
typedef struct CtlSpecOptions {
        const char *job_id;
        const char *tenant;
        const char *profile, *backend, *tier, *image;
        const char *checkout;      /* already absolute */
        const char *memory, *tmpfs_size;
        double cpus;               /* > 0 if given */
        uint64_t pids;
        uint64_t timeout_s;
        char **allow_hosts;        /* NULL-terminated or NULL */
        char **outputs;
        char **env;                /* "K=V" */
        char **command;
        bool tty;                  /* -t: "tty": true (and "stdin") */
        bool stdin_open;           /* -i: "stdin": true */
        bool kill_on_hangup;       /* --kill-on-hangup: "kill_on_hangup": true */
} CtlSpecOptions;

/* The JSON object of a spec: base (a parsed spec file, or NULL for an empty one) with the options applied.
 * Scalars and lists given as options replace the spec's; env and sandbox.overrides are merged by key. A
 * missing job_id is generated, a missing tenant is "local". -EINVAL with *ret_error for a bad option. */
int ctl_spec_build(json_object *base, const CtlSpecOptions *o, json_object **ret, char **ret_error);

/* "j-" + UTC yyyymmddThhmmss + "-" + 8 random hex digits. */
int ctl_job_id_generate(char **ret);

/* The bytes a spec object is submitted as: json-c, pretty, plus "\n". */
int ctl_spec_serialize(json_object *spec, char **ret, size_t *ret_len);

/* The bytes submit writes for spec file contents buf: verbatim without checkout, else re-serialized with
 * "checkout" set to it. Used by submit and hash-input so that both see the same bytes. */
int ctl_spec_rewrite(const char *buf, size_t len, const char *checkout, char **ret, size_t *ret_len,
                     char **ret_error);

/* Reads a spec file, or stdin for "-" (bounded either way). *ret_error says why on -EINVAL. */
int ctl_spec_read(const char *path, char **ret, size_t *ret_len, char **ret_error);
int ctl_spec_validate(const char *buf, size_t len, JobSpec **ret, char **ret_error);

/* realpath(3) of a checkout directory, which must exist and be a directory. */
int ctl_checkout_resolve(const char *path, char **ret);

/* ctl-bus.c: the job's unit, pond-job@ID.service. */
typedef struct CtlUnitState {
        bool loaded;        /* false: systemd does not know the unit (never started or garbage-collected) */
        bool job_pending;   /* a start/stop job is queued for it */
        char *active_state; /* "inactive" if not loaded */
        char *sub_state;
        char *status_text;
} CtlUnitState;

int ctl_bus_open(sd_bus **ret);
/* How long run, wait and submit keep trying a system bus that refuses them or does not answer (dbus-daemon's
 * connections for one uid used up by a burst of jobs, systemd busy starting hundreds of units) before they
 * say they lost sight of the job (CTL_EXIT_LOST). */
#define CTL_BUS_DEADLINE_USEC (10ULL * 60 * 1000 * 1000)
/* Whether a failed bus call may pass by itself (a connection refused or reset, a call that timed out). */
bool ctl_bus_error_transient(int r);
/* Sleeps *pause (doubled for the next time, up to 2 s). */
void ctl_bus_backoff(uint64_t *pause);
/* StartUnit/StopUnit (method) with mode "replace"; *ret_error says why in words on failure. */
int ctl_unit_call(sd_bus *bus, const char *method, const char *unit, char **ret_error);
int ctl_unit_get_state(sd_bus *bus, const char *unit, bool with_status, CtlUnitState *ret);
/* The same, each over a connection of its own, made for the call and closed after it: dbus-daemon counts
 * every open connection against the caller's uid (max_connections_per_user), so what waits long holds none
 * between calls. */
int ctl_unit_call_once(const char *method, const char *unit, char **ret_error);
int ctl_unit_get_state_once(const char *unit, bool with_status, CtlUnitState *ret);
void ctl_unit_state_done(CtlUnitState *s);
/* Whether systemd has the unit loaded now (Manager.GetUnit, which loads nothing): 1, 0, or -errno. */
int ctl_unit_is_known(sd_bus *bus, const char *unit);
bool ctl_unit_state_is_running(const CtlUnitState *s);
/* Asks systemd for change signals of unit and sets *changed when one arrives; best effort. */
int ctl_unit_watch(sd_bus *bus, const char *unit, bool *changed, sd_bus_slot **ret_slot);

/* ctl-log.c: the job's log (output.h): index lines "seq stream offset length usec", chunks in order. */
typedef struct CtlIndexEntry {
        uint64_t seq;
        OutputStream stream;
        uint64_t offset, length, usec;
} CtlIndexEntry;

int ctl_index_line_parse(const char *line, size_t len, CtlIndexEntry *ret);

#define CTL_INDEX_LINE_MAX 256

typedef struct CtlLogFollower {
        char *dir;
        int index_fd;
        uint64_t index_read;                /* bytes of the index read so far (whole lines or not) */
        crypto_hash_sha256_state index_sha; /* of those bytes: a switch checks the new index begins so */
        int fds[_OUTPUT_STREAM_MAX];
        int out[_OUTPUT_STREAM_MAX]; /* where each stream is copied; -EBADF once the reader went away */
        char line[CTL_INDEX_LINE_MAX];
        size_t line_len;
        uint64_t chunks;
} CtlLogFollower;

#define CTL_LOG_FOLLOWER_NULL { .index_fd = -EBADF, .fds = { -EBADF, -EBADF }, .out = { -EBADF, -EBADF } }

int ctl_log_follower_init(CtlLogFollower *f, const char *log_dir, int out_fd, int err_fd);
/* Copies every chunk indexed so far; a log dir that does not exist yet is not an error. */
int ctl_log_follower_drain(CtlLogFollower *f);
void ctl_log_follower_done(CtlLogFollower *f);
/* Continues from the same place in another copy of the same log (the result's hard links of the live log):
 * the new index must begin with exactly the bytes read so far (-EBADMSG otherwise, nothing changed), so that
 * no chunk is shown twice or skipped. Stream files are reopened from the new dir. */
int ctl_log_follower_switch(CtlLogFollower *f, const char *log_dir);
/* The log dir of a job: its spool's log/ while it exists, else the copy in its result. */
int ctl_job_log_dir(const JobPaths *p, const char *job_id, char **ret);

/* ctl-wait.c */
/* The exit status a result stands for (see the enum); *ret_reason names the reason for a non-rc status. */
int ctl_exit_status_from_result(json_object *result, const char **ret_reason);
void ctl_print_summary(FILE *f, json_object *result, const char *dir);
int ctl_load_public_key(const char *pubkey_file, uint8_t ret_pk[KEY_SIGN_PUBLIC_SIZE]);
int ctl_result_dir(const JobPaths *p, const char *job_id, char **ret);

typedef struct CtlWait CtlWait;
struct CtlWait {
        /* -H: the worker's bus, over which the unit is watched. Local: NULL, or a connection of the caller's,
         * used once and closed (sd_bus_close(); the caller still drops its reference): the job is followed
         * through its files, and the unit asked over a connection made for each question. */
        sd_bus *bus;
        const char *job_id;
        const JobPaths *paths;
        CtlLogFollower *log;  /* NULL: do not stream */
        const uint8_t *pk;
        bool quiet;
        json_object **ret_result; /* if not NULL: the verified result, when there is one */
        /* -H: the result is on the worker. Set: wait until the unit has stopped, then fetch and verify it
         * here: 0 with *ret_dir (where the verified result now is) and *ret_result; -ENOENT: the worker has no
         * result for the job; -EBADMSG: it did not verify (*ret_error says why) and nothing of it was kept;
         * other: failed, having said why. */
        int (*fetch)(struct CtlWait *w, char **ret_dir, json_object **ret_result, char **ret_error);
        void *userdata;
        bool *seen_running; /* ctl_wait()'s own */
        sd_bus *reconnected; /* ctl_wait()'s own: -H, the bus made again after an interrupt */
};

/* Waits until the result exists and the unit has stopped, cancelling the job on SIGINT/SIGTERM; verifies,
 * summarizes, and returns the exit status. */
int ctl_wait(CtlWait *w);
/* What `wait --json` prints: {job_id, exit_status, verified, status, reason, result_dir, result}; result is
 * the verified result.json (NULL: none verified, then verified is false and status, reason are null). */
int ctl_wait_to_json(const char *job_id, const char *result_dir, int exit_status, json_object *verified,
                     json_object **ret);

/* ctl-console.c: the caller's end of a job's console socket (console.h). */
typedef struct CtlConsole {
        const JobPaths *paths;
        const char *job_id;
        bool wait;                /* wait for the console while the job is being set up (run) */
        bool tty;                 /* out: a tty job (output came through the console), else stdin only */
        bool detached;            /* out: the caller detached (Ctrl-]); the job runs on */
        bool hung_up;             /* out: pondctl was signalled while attached: a hangup (kill_on_hangup) */
        PidRef pump;              /* a stdin job: the child relaying stdin while the log is followed */
} CtlConsole;

/* Attaches: a tty job is relayed until it ends or the caller detaches; a stdin job's stdin is relayed by a
 * child (c->pump) and this returns at once. -ESRCH: the job is not running (not said when c->wait). */
int ctl_console_session(CtlConsole *c);
void ctl_console_done(CtlConsole *c);
/* ctl-result-tar.c: a result directory as a plain tar stream (directories and regular files only). */
int ctl_result_tar_export(int result_dirfd, int out_fd);

/* What an unpacked stream may hold at most; past any of it the stream is refused. */
typedef struct CtlTarLimits {
        uint64_t max_bytes; /* of all files together */
        uint64_t max_files;
        uint64_t max_dirs;
        unsigned max_depth; /* components of a path */
        size_t max_path;    /* bytes of a path */
} CtlTarLimits;

/* What one valid result can hold, and a little more (ctl-result-tar.c says how much). */
extern const CtlTarLimits ctl_tar_limits_result;

/* Unpacks a stream from ctl_result_tar_export() below dest_dirfd (empty), within limits (NULL: a result's):
 * relative paths without . or .., files and directories only, each created new and never through a
 * symlink. -EBADMSG with *ret_error naming the entry; dest may be left partly written. */
int ctl_result_tar_import(int in_fd, int dest_dirfd, const CtlTarLimits *limits, char **ret_error);

/* Checks a tree unpacked at dir before it is put in place (verifies it): 0, or a negative errno with
 * *ret_error. */
typedef int (*CtlTarCheck)(const char *dir, void *userdata, char **ret_error);

/* Unpacks a stream as ctl_result_tar_import() does into a new hidden directory in parent (0700), runs check
 * (if not NULL) on it, and only then renames it to parent/name (*ret_dir, if not NULL). On any failure (the
 * stream, check, *interrupted set by a signal handler, the rename) the whole temporary tree is removed and
 * nothing is left in parent. -EEXIST: parent/name exists already (looked at before anything is read).
 * Returns what failed, with *ret_error. */
int ctl_result_tar_unpack(int in_fd, const char *parent, const char *name, const CtlTarLimits *limits,
                          const volatile sig_atomic_t *interrupted, CtlTarCheck check, void *userdata,
                          char **ret_dir, char **ret_error);

/* ctl-remote.c: -H [USER@]HOST (pondctl(1), "REMOTE WORKERS"). ctl_host() is NULL without -H. */
bool ctl_host_is_valid(const char *host);
int ctl_host_set(const char *host);
const char *ctl_host(void);
/* The system bus: the worker's over ssh with -H (sd_bus_open_system_remote()), else the local one. */
int ctl_host_bus_open(sd_bus **ret);
/* The remote shell's command line for the worker's pondctl with argv, each argument single-quoted. */
int ctl_remote_command_line(char *const *argv, char **ret);
/* `ssh -xT -- HOST 'pondctl' ARGV...` with stdin_fd/stdout_fd (-EBADF: /dev/null), stderr shared. */
int ctl_remote_spawn(char *const *argv, int stdin_fd, int stdout_fd, PidRef *ret);
/* The remote pondctl's exit status; ssh's own failure (255) or a signal: CTL_EXIT_ERROR, logged. */
int ctl_remote_exit_status(PidRef *p);
/* What of the worker's pondctl's output is escaped on its way here (ctl-escape.h): all of it, but for --json
 * on stdout (json-c's, for scripts) and the job's own output (logs). */
typedef enum CtlRemoteEscape {
        CTL_REMOTE_ESCAPE_STDOUT = 1 << 0,
        CTL_REMOTE_ESCAPE_STDERR = 1 << 1,
} CtlRemoteEscape;
/* Runs the worker's pondctl with argv, in (if not NULL) on its stdin, its stdout to stdout_fd and its stderr
 * to ours, escaped as asked. Returns its exit status. */
int ctl_remote_run(char *const *argv, const char *in, size_t in_len, int stdout_fd, CtlRemoteEscape escape);
/* Feeds in to feed_fd (if >= 0; closed at the end) while relaying from[i] to to[i] (each from[i] < 0: none),
 * line by line, escaped (ctl-escape.h) but for the newlines ending lines; a line longer than
 * CTL_RELAY_LINE_MAX goes in pieces. Until every from[i] ended; a to[i] that fails is given up on (what
 * comes is read and dropped). The from and to fds stay the caller's. */
#define CTL_RELAY_LINE_MAX 16384
int ctl_remote_relay(int feed_fd, const char *in, size_t in_len, const int from[2], const int to[2]);
/* `pondctl export ID` on the worker, unpacked within the limits of a result into a temporary directory in
 * parent (ctl_result_tar_unpack()); check (verification) sees it once ssh has said the export was whole, and
 * only if check passes is it renamed to parent/ID (*ret_dir). Nothing is left in parent otherwise, an
 * interrupt (SIGINT, SIGTERM, SIGHUP) included. Returns 0; check's own error with *ret_error; -ENOENT: the
 * worker has no result for job_id; -EEXIST: parent/ID exists; another error, having logged why. */
int ctl_remote_fetch_result(const char *job_id, const char *parent, CtlTarCheck check, void *userdata,
                            char **ret_dir, char **ret_error);

/* ctl-host.c: the verbs -H gives (run submit status logs wait cancel list result); NULL if not one. */
typedef int (*CtlVerbFunc)(int argc, char *argv[]);
CtlVerbFunc ctl_host_verb(const char *name);
/* run -H: submits spec (already checked) through the worker's pondctl, shows its `logs -f`, waits over the
 * remote bus, fetches (into INTO/ID, or a temporary directory: into NULL) and verifies the result with pk.
 * Returns the exit status, as run does. */
int ctl_host_run(const char *id, const char *spec, size_t len, const uint8_t *pk, bool quiet, const char *into);
/* ctl-verify.c: result_verify() of dir with pk (job_id, input_sha: NULL or what the result must say); with
 * ret_json, also the bytes of result.json the signature covers (read before and after, -ESTALE with
 * *ret_error if they changed). *ret_error says why on failure (NULL for -ENOMEM). */
int ctl_result_verify(const char *dir, const uint8_t *pk, const char *job_id, const char *input_sha,
                      json_object **ret_result, char **ret_json, size_t *ret_len, char **ret_error);
/* What `result` and `verify` print for a result in dir that ctl_result_verify() returned r for: "FAILED:
 * why" (exit 1), the bytes of result.json (as_json), or "OK" and ctl_result_print(). The exit status. */
int ctl_result_report(const char *dir, int r, json_object *result, const char *json, size_t len,
                      const char *error, bool as_json);
/* The human summary of a verified result: ctl_print_summary(), its fields, usage, one line per artifact;
 * every string from the result escaped (ctl-escape.h). */
void ctl_result_print(FILE *f, json_object *result, const char *dir);

/* ctl-submit.c */
/* Writes spec to STATEDIR/jobs/ID/job.json (a new spool entry; ids are never reused) and starts the unit,
 * connecting *bus first if it is NULL. Returns 0, or the exit status to fail with having logged why:
 * CTL_EXIT_REFUSED for a used id, CTL_EXIT_FAILED otherwise. A failed start leaves no spool entry. */
int ctl_submit(sd_bus **bus, const JobPaths *paths, const char *job_id, const char *spec, size_t len);

/* ctl-list.c: what list and status --json say about a job. */
typedef struct CtlJobInfo {
        const char *job_id;
        const char *state;       /* pending running completed refused failed cancelled unknown */
        const char *profile;     /* NULL: not known */
        bool has_rc;
        int rc;
        const char *signal;      /* "SIGKILL", or NULL */
        uint64_t submitted_usec; /* CLOCK_REALTIME of the spool entry's job.json; 0: not known */
} CtlJobInfo;

/* The state a job is in: the result's status if there is a result (an unknown status counts as failed),
 * else from the unit (st NULL: no system bus, "unknown"). */
const char *ctl_job_state(json_object *result, const CtlUnitState *st);
/* profile, rc and signal from a (peeked) result. */
void ctl_job_info_from_result(CtlJobInfo *i, json_object *result);
/* {job_id, state, profile, rc, signal, submitted_usec}, every key present (null when not known). */
int ctl_job_info_to_json(const CtlJobInfo *i, json_object **ret);
/* The profile the spool's job.json asks for (*ret_profile NULL if none or unreadable) and when it was
 * written (*ret_usec untouched if unknown). */
void ctl_spool_info(const JobPaths *p, char **ret_profile, uint64_t *ret_usec);
/* ctl-usage.c: the job's usage read live from its scope (cgroup-usage.c: the result's "usage" keys, and
 * "live": true), NULL when there is no scope; and one line of a usage object, live or signed (status,
 * verify): numbers only, whatever else the object holds. */
json_object *ctl_usage_live(const JobPaths *p);
void ctl_usage_print(FILE *f, const char *prefix, json_object *usage);

/* What `status --json` prints: ctl_job_info_to_json()'s keys plus unit, active_state, sub_state, loaded,
 * status_text (null without a bus: st NULL) and result: null, or {status, exit_status, reason, verified:
 * false} from the peeked result. */
int ctl_status_to_json(const CtlJobInfo *i, const char *unit, const CtlUnitState *st, json_object *result,
                       json_object **ret);

typedef struct CtlListFilter {
        char **states;       /* NULL: any */
        uint64_t since_usec; /* 0: any */
        const char *profile; /* NULL: any */
} CtlListFilter;

typedef struct CtlListArgs {
        bool json;
        CtlListFilter filter;
} CtlListArgs;

/* --since: "@EPOCH", "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS]" (UTC, an optional Z), or "Ns" "Nm" "Nh" "Nd"
 * before now_usec. -EINVAL otherwise. */
int ctl_since_parse(const char *s, uint64_t now_usec, uint64_t *ret_usec);
/* --state: "a,b" adds each (known) state to *states once; -EINVAL for an unknown one. */
int ctl_states_add(const char *s, char ***states);
bool ctl_list_filter_match(const CtlListFilter *f, const CtlJobInfo *i);
/* -EINVAL for a usage error (logged), -ENOMEM. */
int ctl_list_parse_argv(int argc, char *argv[], uint64_t now_usec, CtlListArgs *ret);
void ctl_list_args_done(CtlListArgs *a);

/* ctl-dispatch.c: a refusal is an answer, not a crash: with json, {"refused": true, "reason"} on stdout for
 * the caller; logged once for the operator; CTL_EXIT_ERROR. */
int ctl_refusal(const char *reason, bool json);

/* JSON for scripts on stdout: json-c, pretty, no escaped slashes, and a newline. */
static inline void ctl_json_print(json_object *o) {
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* ctl-exec-json.c: `pondctl exec --json`'s kept output, and its one object. */
typedef struct CtlExecCapture {
        bool on;
        uint64_t started_usec;  /* CLOCK_MONOTONIC, before the connection */
        char *data[2];          /* stdout, stderr */
        size_t len[2];
} CtlExecCapture;
typedef struct CtlExecEnd {
        int status;             /* the exit status (128 + N for signal N), when reason is NULL */
        uint32_t flags;         /* CONSOLE_EXIT_* */
        const char *reason;     /* why there is no status */
        bool refused;           /* pond refused the call (else the job ended under it) */
} CtlExecEnd;
int ctl_exec_capture_add(CtlExecCapture *c, int stream, const char *buf, size_t n);
void ctl_exec_capture_done(CtlExecCapture *c);
int ctl_exec_json_print(const CtlExecCapture *c, const char *id, char **argv, const CtlExecEnd *end);

/* ctl-jobs.c */
/* argv[first] as the only positional argument, a valid job id; logs usage otherwise. */
int ctl_job_id_arg(int argc, char *argv[], int first, const char **ret);
/* Whether the job has a spool entry, an inbox file or a result. */
bool ctl_job_known(const JobPaths *p, const char *job_id);
/* `pondctl VERB [OPTIONS] ID` of one job: the options parsed by opts (ctl-options.h), the id checked, and
 * the job's paths (to be freed) if it is known and the caller may read it. 0 and *ret_id, or the exit
 * status having said why not: CTL_EXIT_USAGE, CTL_EXIT_NOT_FOUND, ctl_job_check_readable()'s, oom_status. */
int ctl_job_open(int argc, char *argv[], const CtlOption opts[], int oom_status, const char **ret_id,
                 JobPaths *paths);
/* 0 if the caller may read the job's result and log, else the exit status having said why: another user's
 * job (docs/operations.md, "Who may use pond"). */
int ctl_job_check_readable(const JobPaths *p, const char *job_id);
/* results/ID/result.json parsed but NOT verified: for status displays only. */
int ctl_result_peek(const JobPaths *p, const char *job_id, json_object **ret);

/* ctl-main.c: the command line. Returns the exit status: --help (global or after a verb, before any "--")
 * prints usage to stdout and gives 0; no verb prints usage to stderr and gives CTL_EXIT_USAGE. */
int ctl_main(int argc, char *argv[]);
/* Whether argv (argv[0] the verb) asks for the verb's usage: --help or -h before any "--". */
bool ctl_wants_help(int argc, char *argv[]);
/* The synopsis of a verb's arguments, or NULL for no such verb. */
const char *ctl_verb_usage_args(const char *verb);

/* Verbs: argv[0] is the verb. */
int ctl_verb_run(int argc, char *argv[]);
int ctl_verb_submit(int argc, char *argv[]);
int ctl_verb_status(int argc, char *argv[]);
int ctl_verb_logs(int argc, char *argv[]);
int ctl_verb_wait(int argc, char *argv[]);
int ctl_verb_cancel(int argc, char *argv[]);
int ctl_verb_list(int argc, char *argv[]);
int ctl_verb_result(int argc, char *argv[]);
int ctl_verb_verify(int argc, char *argv[]);
int ctl_verb_quorum(int argc, char *argv[]);
int ctl_verb_attach(int argc, char *argv[]);
int ctl_verb_exec(int argc, char *argv[]);
/* ctl-cp.c: `pondctl cp`: a file into or out of a running job. */
int ctl_verb_cp(int argc, char *argv[]);
int ctl_verb_keygen(int argc, char *argv[]);
int ctl_verb_hash_input(int argc, char *argv[]);
/* ctl-export.c: `pondctl export ID`: the result directory as a tar stream on stdout (what -H fetches). */
int ctl_verb_export(int argc, char *argv[]);
/* ctl-image.c */
int ctl_verb_image(int argc, char *argv[]);

/* ctl-run.c: `pondctl run` options (parsed separately so that tests can check spec building). */
typedef struct CtlRunArgs {
        CtlSpecOptions spec;
        const char *spec_file;
        const char *pubkey;
        const char *into;          /* -H: keep the fetched result at INTO/ID */
        bool quiet;
        char *checkout_abs;
} CtlRunArgs;

/* -EINVAL for a bad option value (a refusal: exit 125), -CTL_EUSAGE for an unknown option or no command. */
#define CTL_EUSAGE EBADRQC
int ctl_run_parse_argv(int argc, char *argv[], CtlRunArgs *ret);
void ctl_run_args_done(CtlRunArgs *a);
