/* runtime.h: OCI runtime providers, looked up by name from one table. An unknown name, or a provider
 * that cannot enforce its isolation on this host, is refused: never replaced by another. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "macro.h"
#include "strv.h"
#include "policy.h"

typedef struct RuntimeJob {
        const char *state_root;   /* the runtime's --root: pond's own, not the host default */
        const char *bundle;
        const char *container_id;
        const char *pid_file;
        const char *log_file;     /* the runtime's own messages: kept apart from the job's output */
        bool host_network;        /* profile none: the host's network */
        const char *netns;        /* a network namespace prepared by the supervisor, or NULL: none at all */
} RuntimeJob;

typedef struct RuntimeProvider {
        const char *name;
        /* 0 if this host can run and enforce the backend; else -errno and a reason. */
        int (*check)(char **ret_reason);
        /* argv of the create step (runs inside the job's scope; the container's init is left waiting). */
        int (*create_argv)(const RuntimeJob *j, char ***ret);
        int (*start_argv)(const RuntimeJob *j, char ***ret);
        int (*delete_argv)(const RuntimeJob *j, char ***ret);
        /* Whether the runtime holds state for the container (then delete must run). */
        bool (*has_state)(const RuntimeJob *j);
        /* Optional: removes what delete leaves when the sandbox died first (runsc's lock file). */
        void (*forget)(const RuntimeJob *j);
        /* Optional: the provider's additions to config.json (e.g. a VM's size as annotations). */
        int (*adjust_config)(const ResolvedPolicy *r, json_object *config);
} RuntimeProvider;

extern const RuntimeProvider runtime_runc;
extern const RuntimeProvider runtime_runsc;
extern const RuntimeProvider runtime_kata;

/* kata.c, exposed for its tests: the runtime binary, and the preferred configuration (1) or none (0). */
int kata_runtime_path(char **ret);
int kata_config_path(char **ret);

const RuntimeProvider *runtime_provider_find(const char *name);

/* Runs argv to completion (stdin /dev/null, stdout to stderr), killing it after timeout_usec.
 * Returns its exit status (>= 0) or -errno. */
int runtime_exec(char **argv, uint64_t timeout_usec);

/* In a forked child: reset the signal mask, close every fd above 2, exec argv with runtime_environ(). */
_noreturn_ void runtime_exec_child(char **argv);
char **runtime_environ(void);

/* Looks up a binary in PATH (or takes an absolute path). */
int find_binary(const char *name, char **ret);

/* has_state for runtimes that keep a directory per container below their root (runc, kata). */
bool runtime_state_dir_exists(const RuntimeJob *j);


