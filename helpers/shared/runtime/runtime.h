/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runtime.h: OCI runtime providers, from one table: the job path looks a provider up by name, the host
 * probe and cleanup iterate them all. An unknown name, or a provider that cannot enforce its isolation on
 * this host, is refused: never replaced by another. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "policy/policy.h"

typedef struct RuntimeJob {
        const char *state_root;   /* the runtime's --root: pond's own, not the host default */
        const char *bundle;
        const char *container_id;
        const char *pid_file;
        const char *log_file;     /* the runtime's own messages: kept apart from the job's output */
        const char *panic_log;    /* where a runtime that can (runsc) writes its own crash report, or NULL */
        bool host_network;        /* profile none: the host's network */
        const char *netns;        /* a network namespace prepared by the supervisor, or NULL: none at all */
        const char *console_socket; /* a tty job (process.terminal): where create hands over the pty master */
        bool init_channel;        /* the create step's fd 3 goes to the container's init (RUNTIME_INIT_CHANNEL_FD) */
} RuntimeJob;

/* How the runtime passes the job's init its channel to the supervisor (pond-run's job-init.c). */
typedef enum RuntimeInitChannel {
        RUNTIME_INIT_CHANNEL_NONE,      /* it cannot: execs go through the runtime's own exec, if any */
        RUNTIME_INIT_CHANNEL_FD,        /* an extra fd of the create step, as fd 3 (runc's --preserve-fds) */
        RUNTIME_INIT_CHANNEL_STDIN,     /* only stdio reach the init (runsc): the channel is its stdin, so not
                                         * for a job whose payload needs stdin or a terminal */
} RuntimeInitChannel;

/* What a provider's trivial container showed (pondctl probe). */
typedef struct RuntimeProbe {
        bool works;      /* a trivial container ran and exited 0 */
        char *platform;  /* runsc: the platform it ran on; kata: the runtime flavour; else NULL */
        char *reason;    /* why it does not work; NULL when it works */
} RuntimeProbe;

void runtime_probe_done(RuntimeProbe *p);

typedef struct RuntimeProvider {
        const char *name;
        /* The payload runs on the host's kernel as a host uid: each job gets a uid range and a user namespace
         * of its own (job-userns.c), which the runtime joins by path. */
        bool host_uid_range;
        /* The runtime's binary here: the provider's override variable if set, else the first of its
         * candidates in PATH. -ENOENT and what was looked for in *ret_reason when there is none. */
        int (*locate)(char **ret_path, char **ret_reason);
        /* Runs a trivial container with binary (normally what locate() found) below the scratch directory
         * tmpdir, each run killed after timeout_usec, and fills *ret (works, or the reason it did not). */
        void (*probe)(const char *binary, const char *tmpdir, uint64_t timeout_usec, RuntimeProbe *ret);
        /* 0 if this host can run and enforce the backend; else -errno and a reason. */
        int (*check)(char **ret_reason);
        /* argv of the create step (runs inside the job's scope; the container's init is left waiting). */
        int (*create_argv)(const RuntimeJob *j, char ***ret);
        int (*start_argv)(const RuntimeJob *j, char ***ret);
        /* Optional: run in the start step's own child before its exec (system calls only: the supervisor has
         * threads); a negative errno ends that child, and the start fails. */
        int (*start_child_setup)(void);
        int (*delete_argv)(const RuntimeJob *j, char ***ret);
        /* Optional: argv of an exec into the running container of the process described by process_file (an
         * OCI process object: the job's own, its args replaced). NULL: the backend cannot exec. */
        int (*exec_argv)(const RuntimeJob *j, const char *process_file, char ***ret);
        /* Its exec applies the container's seccomp filter to the new process (runc does; runsc installs the
         * OCI filter on the container's first process only, so a confined job's exec is refused there). */
        bool exec_keeps_seccomp;
        /* How the job's init gets its exec channel. */
        RuntimeInitChannel init_channel;
        /* Its create step takes a payload cgroup (config.json's cgroupsPath) that already exists and applies
         * the job's limits to it all the same (runc). runsc takes one as its caller's and leaves it as it is:
         * only where this is set may pond make the payload's cgroups before the create step does. */
        bool payload_cgroup_may_exist;
        /* Whether the runtime holds state for the container (then delete must run). */
        bool (*has_state)(const RuntimeJob *j);
        /* Optional: removes what delete leaves when the sandbox died first (runsc's lock file). */
        void (*forget)(const RuntimeJob *j);
        /* Optional, for a runtime whose own process is the container's init (runsc's sandbox): after the init
         * ended with *init, whether that was the runtime's failure rather than the payload's exit. 1 and
         * what failed in *ret_reason (malloc'd), else 0. Without it the init is the payload's own process. */
        int (*init_failed)(const RuntimeJob *j, const siginfo_t *init, char **ret_reason);
        /* Optional: the provider's additions to config.json (e.g. a VM's size as annotations). */
        int (*adjust_config)(const ResolvedPolicy *r, json_object *config);
        /* Traits other code asks the provider for instead of testing a backend's name: */
        /* It hands a tty job's pty master to pond through --console-socket. */
        bool console_socket;
        /* What renders the job's /proc and sizes the CPUs and memory it sees (resview.h): VIEW_SOURCE_LXCFS
         * means the host's kernel, with LXCFS's files bound over it; else the runtime's own kernel. */
        ViewSource proc_view;
        /* Why the host kernel's Landlock cannot confine the payload, or NULL where it does. */
        const char *landlock_absent;
        /* Optional, for a runtime whose payload's tasks live in a kernel of its own, which the host's pids
         * cgroup does not count: RLIMIT_NPROC is the job's task cap there, and this sizes the host-side limit
         * on the runtime's own processes from the job's pids limit. */
        uint64_t (*host_tasks)(uint64_t pids_limit);
        /* The runtime's own processes beside the init are watched while the job runs (a sandbox that dies
         * under the payload). */
        bool watch_task_set;
        /* A process of the job can kill the job's init (gVisor delivers SIGKILL to its pid namespace's init
         * from inside it; Linux drops it): an init that ends without reporting the payload's end and was not
         * stopped by pond was killed from inside the job. */
        bool init_killable_inside;
} RuntimeProvider;

extern const RuntimeProvider runtime_runc;
extern const RuntimeProvider runtime_runsc;
extern const RuntimeProvider runtime_kata;

/* Every provider, in the order reports list them; NULL-terminated. */
extern const RuntimeProvider *const runtime_providers[];

#define RUNTIME_PROVIDER_FOREACH(p)                                                             \
        for (const RuntimeProvider *const *_provider_i_ = runtime_providers, *p; (p = *_provider_i_); \
             _provider_i_++)

size_t runtime_provider_count(void);
const RuntimeProvider *runtime_provider_find(const char *name);

/* kata.c, exposed for its tests: the runtime binary pond can drive (the OCI command line; the containerd
 * shim is -EOPNOTSUPP), and the preferred configuration (1) or none (0). */
int kata_runtime_path(char **ret);
int kata_config_path(char **ret);

/* runsc.c, exposed for its tests: the gVisor release date (YYYYMMDD) in `runsc --version`'s output, or
 * -EINVAL when it names none. */
int runsc_release(const char *version_output, unsigned *ret);
/* runsc-seccomp.c: rewrites an OCI linux.seccomp object (already checked by seccomp_policy_check()) in
 * place into the form gVisor's converter applies as written: SCMP_ACT_ERRNO with errnoRet ENOSYS becomes
 * SCMP_ACT_TRACE (ENOSYS there, no tracer being possible). -EOPNOTSUPP for any other errno but EPERM,
 * -EPERM if the profile allows ptrace; *ret_error says which rule. */
int runsc_seccomp_adapt(json_object *seccomp, char **ret_error);

/* Runs argv to completion (stdin /dev/null, stdout to stderr), killing it after timeout_usec.
 * Returns its exit status (>= 0), -ECANCELED if a signal ended it, or -errno. */
int runtime_exec(char **argv, uint64_t timeout_usec);
/* The same, with child_setup (if not NULL) run in the child before the exec: its failure is exit 127. */
int runtime_exec_setup(char **argv, uint64_t timeout_usec, int (*child_setup)(void));

/* Runs argv (stdin /dev/null), killed after timeout_usec. The exit status (>= 0; 128 + N for signal N),
 * or -errno; with ret_output, stdout+stderr (at most 64 KiB, NUL-terminated), also on a non-zero status. */
int runtime_exec_output(char **argv, uint64_t timeout_usec, char **ret_output);

/* In a forked child: exec argv with runtime_environ() (searched in PATH), _exit(127) if that fails. */
_noreturn_ void runtime_execv(char **argv);
char **runtime_environ(void);

/* Looks up a binary in PATH (or takes an absolute path). */
int find_binary(const char *name, char **ret);
/* The first of names found by find_binary(); -ENOENT if none is. */
int find_binary_candidates(const char *const *names, size_t n, char **ret);

/* has_state for runtimes that keep a directory per container below their root (runc, kata). */
bool runtime_state_dir_exists(const RuntimeJob *j);

/* runtime-probe.c: the pieces the providers' probe() share. */
/* Runs argv; works, or the reason it did not (the last line of its output). */
void runtime_probe_run(char **argv, uint64_t timeout_usec, RuntimeProbe *ret);
/* runc's and kata-runtime's OCI command line: `BINARY --root TMP/state run --bundle TMP/bundle probe-PID`
 * of a bundle built from scratch (`true` as uid 1000, read-only root, /usr bound read-only). */
void runtime_probe_oci_cli(const char *binary, const char *tmpdir, uint64_t timeout_usec, RuntimeProbe *ret);
/* The first (a version) or last (an error) non-empty line of a command's output, at most 200 bytes;
 * "(no output)" if there is none. NULL on OOM. */
char *runtime_output_line(const char *out, bool last);
