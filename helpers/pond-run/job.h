/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job.h: one job through pond-run, phase by phase. supervise() (supervise.c) calls the phases in the order
 * below; each phase is the file of its name and owns one part of Job, which it creates and *_done() frees.
 * docs/architecture.md, "The job pipeline", lists them with what each leaves for the next. */
#pragma once

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "access/access.h"
#include "audit/audit.h"
#include "basic/paths.h"
#include "basic/process-util.h"
#include "cgroup/cgroup-usage.h"
#include "console/console.h"
#include "console/init-proto.h"
#include "hash/hash.h"
#include "net/net.h"
#include "policy/policy.h"
#include "policy/spec.h"
#include "result/output.h"
#include "result/transcript.h"
#include "resview/resview.h"
#include "rootfs/image.h"
#include "runtime/runtime.h"
#include "scope/scope.h"
#include "stage/stage.h"
#include "userns/userns.h"

/* Each of the runtime's create and start steps may take this long. */
#define RUNTIME_STEP_USEC (60ULL * 1000 * 1000)
/* The child making the job's namespace, veth and rules (milliseconds, normally). */
#define NETWORK_SETUP_USEC (60ULL * 1000 * 1000)
/* The runtime's own files in the job's run directory: its log, and its crash report (runsc). */
#define JOB_RUNTIME_LOG "runtime.log"
#define JOB_RUNTIME_PANIC_LOG "runtime-panic.log"
/* The runtime's own processes beside the container's init that are watched (runsc: the gofer). */
#define JOB_RUNTIME_HELPERS_MAX 8

/* What was issued and how it may run (job-accept.c). */
typedef struct JobInput {
        char *spec_buf;                 /* job.json exactly as issued (input_sha covers these bytes) */
        size_t spec_len;
        JobSpec *spec;
        Policy *policy;
        ResolvedPolicy *resolved;
        const RuntimeProvider *provider;
        LandlockDecision landlock;      /* the ABI pond-init applies, or why none (landlock.h) */
        Submitter submitter;            /* whose job it is (job-accept-intake.c): root, or a member of the group */
        bool have_submitter;
        int checkout_fd;                /* the checkout as opened at acceptance (a member's: found theirs there;
                                         * a bundle's: its extraction); everything after acceptance (staging,
                                         * input_sha) reads it from here, never from the path again. -EBADF: none,
                                         * or not openable (checkout_open_r says why) */
        const char *checkout_ns;        /* the mount namespace it was opened in: NS_MANAGER_MNT for the spec's
                                         * host path, NULL (ours) for a bundle's extraction */
        int checkout_open_r;            /* root's checkout that did not open at acceptance: the open's -errno */
} JobInput;

/* The job's place under the worker's admission ceiling (job-admit.c). */
typedef struct JobAdmission {
        int queue_fd;                   /* its queue file, flocked while it waits */
        bool queued, leased;
        /* The setup gate (admission/setup-gate.h): its slot, flocked from admission until the payload
         * started (or the setup failed), and its queue file while it waits for one. */
        unsigned setup_slots;           /* worker.json's max_setups */
        uint64_t max_wait_s;
        int setup_fd, setup_queue_fd;
} JobAdmission;

/* input_sha, whichever way it is computed (job-input-hash.c). */
typedef struct InputHash {
        pthread_t thread;
        bool running;                   /* a thread hashes the read-only view while the job runs */
        bool final;                     /* hex is the answer ("" if it could not be computed) */
        const char *spec;
        size_t spec_len;
        int checkout_fd;
        int r;
        bool cache_discarded;           /* the digest cache was unusable (reported once joined) */
        int cache_save_r;
        char hex[SHA256_HEX_SIZE];
        bool have_tree;                 /* tree holds the checkout's tree digest (not for a bundle) */
        uint8_t tree[SHA256_SIZE];
        struct timespec since;          /* CLOCK_REALTIME_COARSE before the checkout was first read */
        bool changed;                   /* the checkout changed from since until the payload ended (or, in place,
                                         * until it was hashed): input_sha is not given (result's input_changed) */
} InputHash;

/* The job's own host uid range and user namespace (job-userns.c): providers on the host kernel only. */
typedef struct JobUserns {
        bool on;                        /* the payload runs in the namespace below, as range.base + JOB_UID */
        bool leased;
        UidRange range;
        char *pin;                      /* RUNDIR/jobs/ID/userns: the namespace, pinned for the runtime */
        int fd;                         /* open on it: the network namespace is made in it, mounts mapped */
} JobUserns;

/* The job's /workspace and root filesystem (job-stage.c). */
typedef struct JobStaging {
        Stage stage;
        bool staged;
        ImageLayout image;
} JobStaging;

/* The job's network namespace, veth and rules, and what the job is told about them (job-network.c). */
typedef struct JobNetwork {
        JobNet net;
        bool leased;                    /* net.lease holds the job's addresses (job_network_lease()) */
        bool up;                        /* the job has its namespace at net.netns_path (once setup has ended
                                         * well: the container is not let go before, job_network_finish()) */
        PidRef setup;                   /* the child making namespace, veth and rules, until it has ended */
        int setup_error;                /* its error message, a pipe's read end, or -EBADF */
        char **env;                     /* proxy, broker and CA variables; the broker's dummy keys and URLs */
} JobNetwork;

/* One sidecar unit of the job (job-sidecar.c); its files are in JobPaths.sidecars[]. */
typedef struct JobSidecar {
        struct Job *job;                /* the job it belongs to (its unit's signals' userdata) */
        json_object *config;            /* built and checked at acceptance, completed by job_network; NULL:
                                         * this job has no such sidecar */
        bool up;                        /* its configuration is written: stopping it is part of every exit */
        UnitStart *starting;
        UnitStart *socket_starting;     /* its socket unit's start (a sidecar with one: the egress proxy) */
        bool start_pending;             /* the payload was let go before the unit's start ended (it has its
                                         * socket already): the end is handled as it comes */
        bool start_failed;              /* that start ended badly (the job failed) */
        sd_bus_slot *watch;             /* PropertiesChanged of its unit, while the payload runs */
        sd_bus_slot *watch_state;       /* the unit's ActiveState, while the payload runs: its death */
        sd_bus_slot *watch_exit;        /* its main process's exit, from its start on (a failed unit is
                                         * garbage-collected before its properties can be asked) */
        int32_t exit_code, exit_status; /* ExecMainCode (CLD_*), ExecMainStatus; 0: not seen */
        char *status_text;              /* its last StatusText (sd_notify STATUS=): why it did not start */
        json_object *stats;             /* its totals, read after its stop */
        uint64_t died_usec;             /* when it was seen dead while the payload ran, or 0 */
        char *died_state;               /* the unit's ActiveState then */
} JobSidecar;

/* The confined job's private $HOME: a size-capped tmpfs under the run directory with the spec's
 * home_files in it, bound at HOME_DIR (job-home.c). */
typedef struct JobHome {
        char *path;                     /* RUNDIR/jobs/ID/home, or NULL: no home (profile none) */
} JobHome;

/* The payload's processes and output (job-create.c, job-start.c, job-run-loop.c). */
typedef struct JobRuntime {
        OutputLog log;
        bool log_open;
        char *scope_cgroup;
        char **start_argv;              /* the runtime's start step, built with its create step */
        PidRef create;                  /* the runtime's create step, until it exits */
        pid_t init_pid;
        int out_pipe[2], err_pipe[2];
        int oom_fds[2];                 /* OOM notifications of the scope's and the payload's memcg (v1): hints */
        PidRef oom_pin;                 /* a sleeping process in the payload's v1 memcg only: keeps the memcg
                                         * and its oom_kill count until job_collect() has read them */
        bool pin_in_pids;               /* oom_pin is in the v1 pids hierarchy too: it adds one to pids.peak */
        int pin_report;                 /* the pin's report of where it placed itself (job-create.c), or -EBADF */
        pid_t helpers[JOB_RUNTIME_HELPERS_MAX]; /* the runtime's processes in the scope that are this
                                         * supervisor's children, beside the init (runsc's gofer) */
        char helper_names[JOB_RUNTIME_HELPERS_MAX][32];
        size_t n_helpers;
} JobRuntime;

/* One connection on the job's console socket (job-console.c): a caller attached to the tty or stdin, or
 * an exec into the running job (job-exec.c), which runs on to its end when its caller goes away. */
typedef enum ConsoleConnKind {
        CONSOLE_CONN_NEW,               /* its first packet says which */
        CONSOLE_CONN_ATTACHED,
        CONSOLE_CONN_EXEC,
        CONSOLE_CONN_COPY,              /* `pondctl cp` (job-cp.c) */
} ConsoleConnKind;

typedef struct ConsoleConn {
        struct Job *job;
        int fd;                         /* -EBADF once the caller is gone */
        sd_event_source *src;
        uid_t uid;                      /* the caller's (SO_PEERCRED) */
        const char *refusal;            /* answered to its first packet instead (not root, not the submitter) */
        bool detaching;                 /* it said CONSOLE_DETACH: its end is no hangup */
        ConsoleConnKind kind;
        PidRef pid;                     /* exec: the runtime's exec step, in the job's scope */
        sd_event_source *child_src;
        int pipe[2];                    /* exec: its stdout and stderr, read here */
        sd_event_source *pipe_src[2];
        ConsoleMessage pending_type;    /* exec: one packet the caller could not take yet (its pipes wait) */
        char *pending;
        size_t pending_len;
        bool exited;
        bool exit_sent;                 /* exec: its end is audited and its status sent (or queued) */
        bool counted;                   /* exec: it counts in JobConsole.execs_running */
        int status;                     /* exec: its rc, or 128 + N for signal N */
        uint32_t exit_flags;            /* exec through the init: INIT_EXIT_* (timed out, truncated) */
        int init_slot;                  /* exec through the init: its slot on the channel, or -1 */
        bool ack_owed;                  /* exec through the init: the caller has not taken the last chunk */
        uint64_t started_usec;          /* exec: when it was asked for (its duration is audited) */
        unsigned number;
        void (*progress)(struct ConsoleConn *c); /* exec through the init: it ended (job-exec.c) */
        ConsoleExecRequest *exec_req;   /* exec: a request waiting for its stdin's end */
        struct JobCopy *copy;           /* copy: its request and what passed (job-cp.c) */
        void (*observe)(struct ConsoleConn *c, const char *data, size_t len); /* through the init: each chunk of
                                         * stdout, before it goes to the caller (a copy hashes it) */
        void (*stdin_taken)(struct ConsoleConn *c); /* through the init: a streamed stdin's last chunk is
                                         * written, the next may go (job_init_exec_stdin()) */
        void (*release)(struct ConsoleConn *c); /* exec: its process and pipes, released with the connection */
        struct ConsoleConn *next;
} ConsoleConn;

/* The channel to the job's init (job-init.c; console/init-proto.h): the supervisor's end of a socket pair
 * whose other end the runtime passes into the container as pond-init's --channel. */
typedef struct JobInitChannel {
        bool on;                        /* the bundle starts pond-init with a channel */
        int fd;                         /* the supervisor's end (non-blocking), -EBADF once closed */
        int child_fd;                   /* the init's end, until the create step has it */
        sd_event_source *src;
        char *out;                      /* frames the init has not taken yet */
        size_t out_len;
        char *in;                       /* a frame being read: its header and at most INIT_CHUNK_MAX bytes */
        size_t in_len;
        struct Job *job;                /* whose init it is (its execs are recorded in the job's transcript) */
        ConsoleConn *conns[INIT_SLOTS]; /* whose exec each slot runs (NULL: its caller went away) */
        unsigned seq[INIT_SLOTS];       /* the transcript's number of each slot's exec (job-transcript.c), 0: none */
        bool busy[INIT_SLOTS];          /* until the slot's INIT_EXIT */
        bool stdin_open[INIT_SLOTS];    /* a streamed stdin whose end is not sent yet */
        bool stdin_flight[INIT_SLOTS];  /* an INIT_STDIN the init has not taken yet */
        bool stdin_end_owed[INIT_SLOTS]; /* its end goes once the chunk in flight is taken */
        bool payload_seen;              /* INIT_PAYLOAD arrived: payload_status is the payload's wait status */
        int payload_status;
} JobInitChannel;

/* The caller's input the payload has not read yet: beyond this the caller is not read from. */
#define CONSOLE_INPUT_MAX (256 * 1024)

/* The job's console (job-console.c): a tty job's pty master and a stdin job's pipe, and the socket pondctl
 * attaches and execs through (console.h; docs/job-spec.md, "Interactive jobs"). */
typedef struct JobConsole {
        int runtime_listen;             /* the runtime's --console-socket, until the master has arrived */
        int master;                     /* a tty job's pty master */
        int stdin_write;                /* a stdin job's pipe (the payload reads the other end) */
        bool stdin_eof;                 /* the caller's stdin ended: the pipe is closed once drained */
        int listen;                     /* JobPaths.console, while the payload runs */
        uid_t owner;                    /* who submitted the job (the spool entry's owner); root may too */
        sd_event *event;
        sd_event_source *listen_src, *master_src, *stdin_src;
        ConsoleConn *conns;
        ConsoleConn *attached;          /* at most one caller at a time */
        char *out;                      /* tty output no caller has taken yet: the last CONSOLE_BACKLOG bytes */
        size_t out_len;
        char *in;                       /* the caller's input the tty or pipe has not taken yet */
        size_t in_len;
        unsigned n_execs;               /* runtime execs prepared (their process files' numbers) */
        unsigned execs_running;
        JobInitChannel init;            /* execs through the job's init (job-init.c) */
        void (*closed)(void *userdata); /* the master's end (the run loop counts it as a stream) */
        void *userdata;
} JobConsole;

/* The transcript of the execs into the job (job-transcript.c): made at the first exec. */
typedef struct JobTranscript {
        Transcript *t;
        json_object *stats;             /* its totals once the job ended (job_collect()) */
        bool linked;                    /* its files are in the staged result: "execs" signs them */
} JobTranscript;

/* What the job sees of its resources, and its leased CPUs (job-resview.c). */
typedef struct JobView {
        ResourceView view;
        bool decided;                   /* at acceptance; from then on the result reports it */
        bool leased;                    /* a cpuset lease is held (the teardown gives it back anyway) */
} JobView;

/* What happened, as the result reports it (job_fail(), job-run-loop.c, job-collect.c). */
typedef struct JobOutcome {
        char *reason;                   /* the first failure's, see job_fail() */
        bool refused, failed;           /* refused before anything ran; pond itself failed */
        int exit_status;                /* rc, or -1 */
        int exit_signal;                /* signal number or 0 */
        bool timed_out, cancelled, oom_killed;
        bool runtime_failed;            /* the runtime died under the payload: the exit is not the payload's */
        uint64_t accepted_usec, started_usec, ended_usec, started_mono, ended_mono;
        bool usage_read;                /* usage holds the scope's counters (job-usage.c) */
        CgroupUsage usage;
} JobOutcome;

/* The result directory being staged: artifacts and log links in it, then the signed JSON (job-sign.c). */
typedef struct JobResult {
        int results_fd;
        int staged_fd;                  /* open while a stage is pending: job_result_done() aborts it */
        const char *job_id;
        json_object *artifacts;         /* output_sha, artifacts and their totals, from job_collect() */
} JobResult;

typedef struct Job {
        JobPaths paths;                 /* paths.id is the job id */
        AuditContext audit;
        sd_bus *bus;                    /* from job_stage() on */
        uint8_t *sign_sk;               /* sodium_malloc'd */
        JobInput input;
        JobAdmission admission;
        InputHash input_hash;
        JobUserns userns;
        JobStaging staging;
        JobNetwork network;
        JobSidecar sidecars[_POND_SIDECAR_MAX];
        JobHome home;
        JobView view;
        JobRuntime runtime;
        JobConsole console;
        JobTranscript transcript;
        JobOutcome outcome;
        JobResult result;
        unsigned teardown_next;         /* the first step job_teardown() has not run yet */
} Job;

#define INPUT_HASH_NULL { .checkout_fd = -EBADF }
#define JOB_RUNTIME_NULL { .create = PIDREF_NULL, .out_pipe = { -EBADF, -EBADF }, .err_pipe = { -EBADF, -EBADF }, \
                           .oom_fds = { -EBADF, -EBADF }, .oom_pin = PIDREF_NULL, .pin_report = -EBADF }
#define JOB_CONSOLE_NULL { .runtime_listen = -EBADF, .master = -EBADF, .stdin_write = -EBADF, .listen = -EBADF, \
                           .init = { .fd = -EBADF, .child_fd = -EBADF } }
#define JOB_OUTCOME_NULL { .exit_status = -1, .usage = CGROUP_USAGE_NULL }
#define JOB_USERNS_NULL { .fd = -EBADF }
#define JOB_RESULT_NULL { .results_fd = -EBADF, .staged_fd = -EBADF }
#define JOB_NETWORK_NULL { .setup = PIDREF_NULL, .setup_error = -EBADF }
#define JOB_INPUT_NULL { .checkout_fd = -EBADF }
#define JOB_ADMISSION_NULL { .queue_fd = -EBADF, .setup_fd = -EBADF, .setup_queue_fd = -EBADF }
#define JOB_NULL { .input = JOB_INPUT_NULL, .admission = JOB_ADMISSION_NULL, .input_hash = INPUT_HASH_NULL, \
                   .userns = JOB_USERNS_NULL, .runtime = JOB_RUNTIME_NULL, .console = JOB_CONSOLE_NULL, \
                   .network = JOB_NETWORK_NULL, .outcome = JOB_OUTCOME_NULL, .result = JOB_RESULT_NULL }

/* job-features.c: the features and the phases they hook (job_features[]). Every hook is optional. */
typedef struct JobFeature {
        const char *name;
        /* Acceptance (phase 1): its part of the spec; a refusal with its reason in *ret_error, else refusal. */
        int (*accept)(Job *j, char **ret_error);
        const char *refusal;
        /* The bundle (phase 4): what config.json names, made before it is built; then its additions to it. */
        int (*bundle)(Job *j);
        int (*config)(Job *j, json_object *config);
        /* The run loop (phase 7): its watches on the loop's event loop. */
        int (*watch)(Job *j, sd_event *e);
} JobFeature;
/* Each runs the phase's hooks in the table's order; the first failure ends it (accept: refused with the
 * feature's reason). */
int job_features_accept(Job *j);
int job_features_bundle(Job *j);
int job_features_config(Job *j, json_object *config);
int job_features_watch(Job *j, sd_event *e);

/* job-broker.c: the worker's sealing key may be given to the job's broker. */
int job_broker_accept(Job *j, char **ret_error);
/*    job-image.c: the image looked up, held, and allowed by the profile. */
int job_image_accept(Job *j, char **ret_error);

/* job.c: the job's id and paths. */
int job_init(Job *j, const char *job_id);
/* job-done.c: frees every part. */
void job_done(Job *j);
/* job-outcome.c: how the job ends, recorded in one place. job_end() marks the end and records its reason
 * (fmt NULL: the end alone), job_fail() the reason alone, each unless a reason is recorded already (the first
 * cause is the one the result names); both return r. A job may carry more than one mark (cancelled, then the
 * runtime failed under it): job_status() decides which the result says. */
typedef enum JobEnd {
        JOB_END_REFUSED,                /* refused before anything ran */
        JOB_END_FAILED,                 /* pond itself failed */
        JOB_END_CANCELLED,              /* stopped, a caller that hung up, the cost ceiling */
        JOB_END_RUNTIME_FAILED,         /* the runtime died under the payload: the exit is not the payload's */
} JobEnd;
int job_end(Job *j, JobEnd end, int r, const char *fmt, ...) _printf_(4, 5);
int job_fail(Job *j, int r, const char *fmt, ...) _printf_(3, 4);
void job_outcome_done(JobOutcome *o);
/* "refused", "failed", "cancelled" or "completed". */
const char *job_status(const Job *j);
/* The job's service, when pond-run runs in it: what the job's scope and sidecar sockets are bound to (not
 * when run by hand: tests, demo, where BindsTo= would start a service that is not there). */
const char *job_bound_service(const Job *j);

/* 1. job-accept.c: parse and resolve; any failure is a refusal and nothing has run. */
int job_accept(Job *j);
void job_input_done(JobInput *i);
/*    job-accept-intake.c: the spec as issued and whose it is: root's spool entry, or a member's inbox file
 *    (its owner is the submitter) taken into a new spool entry that only root and the submitter can read. */
int job_accept_intake(Job *j);
/* spool/phase (job-phase.c): the claim of a spool entry (-EEXIST: a supervisor took it before), how far the job got
 * (best effort), and what a restart finds there (-ENOENT: never claimed). */
int job_phase_claim(Job *j, int spool_fd);
void job_phase_record(Job *j, const char *phase);
int job_phase_read(const JobPaths *paths, char **ret_phase);
/*    The cleanup's view of the same, from the owner record (or root for a spool entry without one). */
void job_submitter_recall(Job *j);
/*    Whether the submitter may use the resolved profile (policy/access.json). */
int job_accept_submitter_profile(Job *j);
/*    Gives the submitter (not root) read access to a directory of the job (its spool entry, its result). */
int job_grant_submitter(const Job *j, int dirfd, const char *what);
/*    Whether fd (a host path the spec names) is the submitter's own: -EPERM otherwise (root: anything). */
int job_check_submitter_owns(const Job *j, int fd, const char *what, char **ret_error);
/*    job-accept-bundle.c: a bundle job's source, decrypted and extracted for exactly this job. */
int job_accept_bundle(Job *j, char **ret_error);

/* 1b. job-admit.c: the worker's admission ceiling: admitted (a lease), queued until there is room (at most
 *     max_wait_s), or refused; the lease is given back in the teardown's last step. */
int job_admit(Job *j);
int job_admission_release(Job *j);
/*    The setup gate: a slot among worker.json's max_setups, waited for in order (at most max_wait_s),
 *    taken before staging and given back once the payload started or the setup failed. */
int job_setup_gate_take(Job *j);
/*    The payload started (or the setup failed): systemd's waits no longer extend the start timeout, and the
 *    slot is given back unless a sidecar's start is still pending (job_sidecars_starting()), whose end
 *    gives it back (job-sidecar.c): a proxy's start loads systemd as much as the rest of the setup. */
void job_setup_started(Job *j, bool sidecars_starting);
void job_setup_gate_release(Job *j);

/* 2. job-stage.c: the runtime directories, /workspace, the image; starts hashing the input. */
/*    job-userns.c: the job's host uid range and user namespace, first (runc, confined profiles). */
bool job_userns_wanted(const Job *j);
int job_userns(Job *j);
/* The job user's ids on the host: in the job's range, or JOB_UID/JOB_GID where there is none. */
uid_t job_host_uid(const Job *j);
gid_t job_host_gid(const Job *j);
int job_userns_remove(Job *j);
int job_userns_release(Job *j);
void job_userns_done(JobUserns *u);
int job_stage(Job *j);                 /* the bus and the directories: first */
int job_stage_workspace(Job *j);       /* /workspace and the root: after the network (sidecars start meanwhile) */
int job_stage_hash_input(Job *j);
void job_staging_done(JobStaging *s);

/*    job-input-hash.c: input_sha. A bundle's hash is fixed at extraction; a checkout the job cannot change
 *    is hashed by a thread while the job runs; one it edits in place (profile none) before it runs; and
 *    the input of a job that never got that far when its result is written. */
void job_input_hash_fix(InputHash *h);
/* checkout_fd (taken, -EBADF: none): the tree to hash, already open: the job's read-only view, or the
 * checkout as accepted. */
int job_input_hash_start(InputHash *h, const char *spec, size_t spec_len, int checkout_fd, bool immutable);
/* *ret_hex is NULL when there is no hash; an error only when the thread's hashing failed. A job that never
 * started hashing gets its input hashed now, from the checkout as opened at acceptance (never its path
 * again): without that tree, input_sha is not computed (NULL). */
int job_input_hash_result(Job *j, const char **ret_hex);
void job_input_hash_done(InputHash *h);

/* 3. job-network.c: namespace, veth, nftables; the sidecars' configurations written and units started.
 *    job_network_begin() forks the child that makes them while the supervisor goes on staging;
 *    job_network_finish() waits for it (before the container is let go); job_network_stop() kills and reaps
 *    it (the teardown, before it removes the network). */
int job_network_lease(Job *j);
int job_network_begin(Job *j);
int job_network_finish(Job *j);
void job_network_stop(JobNetwork *n);
void job_network_done(JobNetwork *n);

/*    job-sidecar.c: the sidecar units, one table (pond-egress@ID, pond-broker@ID), one contract: a JSON
 *    configuration checked at acceptance with the sidecar's own parser, delivered as the credential
 *    config.json, the unit waited for before the payload runs (fail closed), its state watched while the
 *    payload runs, its totals read after its stop. */
int job_sidecars_configure(Job *j, char **ret_error);
int job_sidecars_write(Job *j);
int job_sidecars_start(Job *j);
int job_sidecars_wait(Job *j);
/* Whether a sidecar's start (one the payload did not wait for: the proxy's) is still pending. */
bool job_sidecars_starting(const Job *j);
/* Queues the stop of every sidecar that is up, without waiting: they wind down while the container is
 * deleted. Only once the payload's scope is gone (teardown). */
int job_sidecars_stop_begin(Job *j);
int job_sidecars_stop(Job *j);
/* The first sidecar seen dead while the payload ran, or _POND_SIDECAR_INVALID. */
PondSidecar job_sidecar_died(const Job *j);
const char *job_sidecar_name(PondSidecar s);
void job_sidecar_done(JobSidecar *s);
/*    job-egress.c, job-broker.c: what is particular to each sidecar. */
int job_egress_config(const Job *j, json_object **ret, char **ret_error);
int job_egress_check(const char *text, size_t len, char **ret_error);
int job_broker_config(const Job *j, json_object **ret, char **ret_error);
int job_broker_check(const char *text, size_t len, char **ret_error);
int job_broker_environment(json_object *config, const char *listen, char ***env);
int job_broker_values(json_object *config, const char *name, char **ret_base_url, const char **ret_dummy_key);
int job_broker_on_changed(sd_bus_message *m, void *userdata, sd_bus_error *error);

/* 4. job-write-bundle.c: the OCI bundle's config.json for the profile, and the home it binds. */
int job_write_bundle(Job *j);
/*    job-home.c: the confined job's home: home_files refused at acceptance where there is no home; the
 *    tmpfs mounted and the files rendered (broker URL, dummy key, job id) and written before the container
 *    is created; unmounted in the teardown. */
int job_home_accept(Job *j, char **ret_error);
int job_home(Job *j);
int job_home_teardown(Job *j);
void job_home_done(JobHome *h);

/*    job-resview.c: the job's view of its resources: decided at acceptance (refused when "required" and
 *    LXCFS is not there), CPUs leased and written into config.json with the bundle, watched while the job
 *    runs, the lease given back in the teardown. */
int job_resview_accept(Job *j, char **ret_error);
int job_resview_lease(Job *j);
int job_resview_apply(Job *j, json_object *config);
int job_resview_watch(Job *j, sd_event *e);
int job_resview_release(Job *j);
json_object *job_resview_json(const Job *j);
/* "cpuset 0-1, sees cpus 2 (affinity) 2 (/proc), memory N, from lxcfs/lxcfs", for the started record */
const char *job_resview_words(const Job *j, char *buf, size_t size);
void job_view_done(JobView *v);

/* 5. job-create.c: the runtime's create step, run inside pond-ID.scope; the container's init waits. */
int job_create_in_scope(Job *j);
void job_runtime_done(JobRuntime *rt);

/*    job-console.c: a tty job's pty master (received from the runtime's --console-socket) and a stdin job's
 *    pipe, relayed to one attached caller over the console socket while the output still goes to the
 *    log; the socket also takes exec requests (job-exec.c). A caller going away detaches, nothing more. */
int job_console_accept(Job *j, char **ret_error);
/* Before the create step: the runtime's console socket (tty), or the stdin pipe whose read end becomes the
 * create step's stdin (*ret_stdin; -EBADF: /dev/null). */
int job_console_prepare(Job *j, int *ret_stdin);
const char *job_console_runtime_socket(const Job *j);
/* After the create step: the master must have arrived (fail closed). */
int job_console_receive(Job *j);
/* While the payload runs: the console socket, the master. Returns 1 if the master is a stream the loop must
 * wait for (closed() is called at its end), 0 if there is none. */
int job_console_watch(Job *j, sd_event *e, void (*closed)(void *userdata), void *userdata);
/* The init has exited: no new connections, no new execs. */
void job_console_stop(Job *j);
void job_console_done(JobConsole *c);
/* job-console-conn.c, for job-console.c and job-exec.c: one packet to a connection's caller (queued when it
 * cannot take it), the events it waits for, its end (which calls its release hook). */
int job_console_conn_send(ConsoleConn *c, ConsoleMessage type, const void *data, size_t len);
void job_console_conn_free(ConsoleConn *c);
/* The caller told why its request (what: "Exec", "Copy") is refused, and the journal too; returns r. */
int job_console_conn_refuse(ConsoleConn *c, const char *what, int r, const char *fmt, ...) _printf_(4, 5);
void job_console_conn_update(ConsoleConn *c);

/*    job-exec.c: `pondctl exec ID -- CMD`: the runtime's exec of the job's own process (its user,
 *    capabilities, no_new_privs, cwd, env; pond-init's Landlock where the job has it; seccomp, namespaces and
 *    cgroup from the container), the step itself moved into the job's scope, audited, its output and status
 *    returned to the caller. Refused once the init has exited. */
/* The connection's first packet (CONSOLE_EXEC or CONSOLE_EXEC_REQUEST), and what follows it (a request's
 * stdin). < 0: c is to be freed (its caller was told why). */
int job_exec_request(ConsoleConn *c, const char *buf, size_t n);
int job_exec_input(ConsoleConn *c, const char *buf, size_t n);
/* The exec's pipes may go on (the caller took the pending packet). */
void job_exec_resume(ConsoleConn *c);

/*    job-cp.c: `pondctl cp`: one regular file into or out of the running job, through its init (pond-init
 *    --put/--get forked as an exec: the job's posture), below the job's writable directories only, at most
 *    CONSOLE_COPY_MAX bytes, audited with its sha256. Refused where the init serves no requests. */
/* The connection's first packet (CONSOLE_COPY), and what follows it (a put's bytes). < 0: c is to be freed
 * (its caller was told why). */
int job_cp_request(ConsoleConn *c, const char *buf, size_t n);
int job_cp_input(ConsoleConn *c, const char *buf, size_t n);
/* The caller took the pending packet. */
void job_cp_resume(ConsoleConn *c);
/*    job-transcript.c: every exec recorded as it runs (result/transcript.h): its call, its stdin, stdout
 *    and stderr hashed as they pass and kept within the job's budget, its end; linked into the result. */
/* Before the exec is let go: its number in c->number, or a refusal's reason in *ret_why. */
int job_transcript_begin(ConsoleConn *c, const ConsoleExecRequest *req, const char *via, bool stdin_stream,
                         char **ret_why);
/* CONSOLE_STDOUT or CONSOLE_STDERR bytes of exec seq, as they pass (its caller there or not). */
void job_transcript_output(Job *j, unsigned seq, ConsoleMessage type, const void *buf, size_t n);
/* A streamed stdin's bytes (a copy's), as they pass to the init. */
void job_transcript_input(Job *j, unsigned seq, const void *buf, size_t n);
bool job_transcript_running(const Job *j, unsigned seq);
/* Its end: status and INIT_EXIT_* flags; init_ended: the job ended under it, no status is known. */
void job_transcript_end(Job *j, unsigned seq, int status, uint32_t init_flags, bool init_ended);
/* Begun but never let go. */
void job_transcript_abort(Job *j, unsigned seq);
/* job_collect(): what still runs ended, the files linked into the staged result (if any exec was recorded). */
int job_transcript_collect(Job *j, int staged_fd);
/* result.json's "execs", or NULL when the result has no transcript. */
json_object *job_transcript_json(const Job *j);
void job_transcript_done(JobTranscript *jt);

/*    job-init.c: the channel to pond-init, which serves execs as the payload's sibling (console/init-proto.h;
 *    docs/threat-model.md, "The job's init"). The bundle starts pond-init with a channel when the job is
 *    confined and its backend can pass one (job_init_wanted()); the create step gets the init's end. */
bool job_init_wanted(const Job *j);
/* The channel's fd number inside the container (pond-init's --channel). */
int job_init_channel_fd(const Job *j);
int job_init_prepare(Job *j);
/* The create step has the init's end: the supervisor's copy goes. */
void job_init_handed_over(Job *j);
int job_init_watch(Job *j, sd_event *e);
/* The init can take an exec now (the channel is up). */
bool job_init_serves(const Job *j);
/* Sends c's exec (a free slot is the caller's to find: -EBUSY when none); flags INIT_EXEC_* (a streamed
 * stdin: job_init_exec_stdin()). */
int job_init_exec(ConsoleConn *c, const ConsoleExecRequest *req, uint32_t flags);
/* A chunk of c's streamed stdin (at most INIT_STDIN_MAX bytes; -EBUSY while one is in flight: c->stdin_taken
 * says when the next may go), or with len 0 its end (sent once the chunk in flight is taken). */
int job_init_exec_stdin(ConsoleConn *c, const void *data, size_t len);
/* The caller took the last chunk: the init may send the next. */
void job_init_exec_taken(ConsoleConn *c);
/* c goes (its caller left, or the job ended): its command runs on, its output dropped, its slot freed at its
 * INIT_EXIT. */
void job_init_exec_abandon(ConsoleConn *c);
/* The init has exited: what it still said is read; a payload killed by signal N (the init, PID 1 of the
 * job, exits 128 + N: it cannot die of the payload's signal) is reported as that signal. */
void job_init_ended(Job *j, JobOutcome *o);
void job_init_lost(Job *j);
void job_init_done(JobInitChannel *ch);

/* 6. job-start.c: once the sidecars are up, the container's init is let go. */
int job_start(Job *j);

/*    job-runtime-failed.c: whether the runtime died under the payload rather than the payload ending: its
 *    own processes beside the init watched (a runsc gofer killed), the init's end asked of the provider (a
 *    runsc sandbox killed or crashed). Such a job fails with a reason naming the runtime, and no exit code. */
int job_runtime_watch(Job *j, sd_event *e);
/* At the init's exit, before pond kills what is left of the payload. */
void job_runtime_check(Job *j, const siginfo_t *init);
/* The runtime's failure that ended (or wedged) the job: recorded once, the payload killed. */
void job_runtime_failed(Job *j, const char *what);

/* 7. job-run-loop.c: output, wall clock, cancellation, cost ceiling, until the init has exited. */
int job_run_loop(Job *j);

/*    job-payload.c: acting on the running payload, for the loop and the features that watch it. */
/* Reads the scope's oom_kill count while it is there: the only thing that makes a job OOM-killed. */
void job_read_oom_kills(Job *j);
/* Kills everything in the payload's scope (the init at least, if the scope is gone). */
void job_kill_payload(Job *j);
/* Marks the job cancelled and says so, once. */
void job_cancel(Job *j, const char *why);
/* A stop of the job's service is under way: its SIGTERM is pending here, or the unit is deactivating. */
bool job_stop_requested(Job *j);
/* kill_on_hangup: the attached caller went away without detaching: the job is cancelled. */
void job_console_hangup(Job *j);
/* The broker reports the job's budget spent: the job is cancelled, the reason recorded, and the payload
 * killed JOB_CEILING_GRACE_USEC later (the agent reads the broker's 402 that says why). */
#define JOB_CEILING_GRACE_USEC (1000ULL * 1000)
void job_cost_ceiling(Job *j);

/* 8. job-collect.c: the outcome, the payload and sidecars stopped, input_sha, artifacts and log. r is what
 *    the phases before returned; returns < 0 only if the artifacts could not be collected. */
int job_collect(Job *j, int r);

/*    job-usage.c: what the job used: the scope's cgroup counters, read before the scope goes (and, on v1,
 *    before the pin that keeps them goes), the sidecars' network bytes; and the worker's counters file. */
void job_usage_read(Job *j);
json_object *job_usage_json(const Job *j);
void job_metrics_record(const Job *j);

/* 9. job-sign.c: result.json and result.sig, moved into place in one step. */
int job_sign(Job *j);
int job_result_stage(Job *j);
void job_result_done(JobResult *res);
/* job-keys.c: the worker's signing key, loaded. */
int job_load_signing_key(Job *j);
/* Under a unit, a secret key is a credential (a 0400 copy): its source in the key dir must be root's and
 * not readable by others, or it is refused. */
int job_check_key_source(const char *file);

/* 10. job-teardown.c: every step idempotent and in one order, for every exit path and for
 *     `pond-run --cleanup`: what runs is stopped (job_collect() needs that first), then what was made is
 *     removed. The provider is the job's, or every provider when it is not known. */
int job_teardown_processes(Job *j);
int job_teardown(Job *j);
