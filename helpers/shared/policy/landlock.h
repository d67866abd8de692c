/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* landlock.h: a profile's "landlock" field, the decision a job runs with (the ABI pond-init applies, or
 * why none), and pond-init's command line built from it (docs/threat-model.md, "Landlock"). */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

/* The newest ABI pond-init knows (helpers/pond-init/ruleset.h: RULESET_ABI_MAX). */
#define LANDLOCK_ABI_MAX 7
#define LANDLOCK_EXEC_ALLOW_MAX 32
/* Where pond-init is bound in the container: /dev is the runtime's own tmpfs, so any image has room. */
#define LANDLOCK_INIT_PATH "/dev/.pond-init"

typedef enum LandlockMode {
        LANDLOCK_OFF,           /* absent: no pond-init */
        LANDLOCK_BEST_EFFORT,   /* applied at the ABI there is; none recorded as "not available" */
        LANDLOCK_REQUIRED,      /* below min_abi the job is refused */
        _LANDLOCK_MODE_MAX,
        _LANDLOCK_MODE_INVALID = -EINVAL,
} LandlockMode;

const char *landlock_mode_to_string(LandlockMode m);
LandlockMode landlock_mode_from_string(const char *s);

typedef struct LandlockProfile {
        LandlockMode mode;
        unsigned min_abi;       /* required: at least this ABI (1..LANDLOCK_ABI_MAX; default 1) */
        char **exec_allow;      /* where execution is allowed (directories or files); NULL: the defaults */
        bool connect_any;       /* "tcp_connect": "any": TCP left to nftables (default "sidecars": only
                                 * the job's proxy and broker ports) */
        bool mqueue;            /* "mqueue": true: /dev/mqueue writable, so POSIX message queues (mq_open)
                                 * work; default false: EACCES */
} LandlockProfile;

/* Where POSIX message queues live: the job's IPC namespace's own mqueue file system (its mount and the one
 * mq_open() uses share their root, which is where the rule goes). */
#define LANDLOCK_MQUEUE_PATH "/dev/mqueue"

/* The profile's "landlock" object, strictly: {mode, min_abi?, exec_allow?, tcp_connect?, mqueue?}; NULL o:
 * off. */
int landlock_profile_parse(json_object *o, const char *where, LandlockProfile *ret, char **ret_error);
void landlock_profile_done(LandlockProfile *p);

typedef struct LandlockDecision {
        bool decided;
        LandlockMode mode;
        unsigned abi;           /* applied by pond-init: 0 none */
        const char *reason;     /* static: why none (or why this one), NULL when applied at the kernel's */
} LandlockDecision;

/* The running kernel's ABI (0 with a static reason when there is none). */
unsigned landlock_host_abi(const char **ret_reason);

/* What the job runs with on this backend: runc shares the host's kernel (host_abi, capped at
 * LANDLOCK_ABI_MAX); runsc's Sentry and kata's guest kernel implement none. Required below min_abi:
 * -EOPNOTSUPP with *ret_error. */
int landlock_decide(const LandlockProfile *p, const char *backend, unsigned host_abi, const char *host_reason,
                    LandlockDecision *ret, char **ret_error);

typedef struct LandlockPaths {
        char *const *writable;  /* where the job may write: the destinations of its config's read-write
                                 * mounts (oci_config_writable()), NULL-terminated; never / or /dev */
        bool workspace;         /* /workspace is mounted (read-only or not): executable by default */
        bool home;              /* the job's home is mounted at HOME_DIR: executable by default */
        const uint16_t *ports;  /* TCP connect allowed only to these (the job's sidecars) */
        size_t n_ports;
} LandlockPaths;

/* pond-init's argv up to and including "--" (the payload's command follows). -EINVAL for a writable path
 * that is not absolute, is / or /dev, or has a ".." (a rule there would open what the ruleset closes). */
int landlock_init_argv(const LandlockDecision *d, const LandlockProfile *p, const LandlockPaths *paths,
                       char ***ret);

/* The result's "landlock": {mode, abi, applied, reason, exec_allow, tcp_connect, mqueue}; NULL when off or
 * not decided. */
json_object *landlock_decision_to_json(const LandlockDecision *d, const LandlockProfile *p);
