/* supervise.h: pond-run's job: refuse or run one job end to end and leave a signed result. */
#pragma once

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "audit.h"
#include "hash.h"
#include "image.h"
#include "net.h"
#include "output.h"
#include "paths.h"
#include "policy.h"
#include "runtime.h"
#include "scope.h"
#include "spec.h"
#include "stage.h"

/* pond-run's exit status: the job's own status is in the result, never here. */
enum {
        POND_RUN_EXIT_OK = 0,      /* a result was written (whatever the job did) */
        POND_RUN_EXIT_USAGE = 2,
        POND_RUN_EXIT_REFUSED = 3, /* refused before anything ran; a signed refusal was written if possible */
        POND_RUN_EXIT_FAILED = 4,  /* pond itself failed; a signed failure was written if possible */
};

typedef struct InputHash {
        pthread_t thread;
        bool started;
        const char *spec;
        size_t spec_len;
        int checkout_fd;
        int r;
        char hex[SHA256_HEX_SIZE];
        bool fixed;        /* hex is the bundle's hash, set at extraction: nothing to compute */
} InputHash;

typedef struct Job {
        const char *id;
        AuditContext audit;
        JobPaths paths;
        char *spec_buf;
        size_t spec_len;
        JobSpec *spec;
        Policy *policy;
        ResolvedPolicy *resolved;
        const RuntimeProvider *provider;
        Stage stage;
        bool staged;
        ImageLayout image;
        JobNet net;
        bool net_up;
        bool egress_up;
        UnitStart *egress_starting;
        bool broker_up;
        UnitStart *broker_starting;
        json_object *broker_stats;
        bool ceiling_hit;
        json_object *egress_stats;
        char **posture_env;
        InputHash input;
        OutputLog log;
        bool log_open;
        sd_bus *bus;
        char *scope_cgroup;
        pid_t create_pid;
        pid_t init_pid;
        int out_pipe[2], err_pipe[2];
        int oom_fds[2];    /* OOM notifications of the scope's and the payload's memcg (v1), or -EBADF */
        /* outcome */
        char *reason;
        int exit_status;   /* rc, or -1 */
        int exit_signal;   /* signal number or 0 */
        bool timed_out, cancelled, oom_killed;
        uint64_t accepted_usec, started_usec, ended_usec, started_mono, ended_mono;
        uint8_t *sign_sk;  /* sodium_malloc'd */
} Job;

int supervise(const char *job_id);
int supervise_cleanup(const char *job_id);

/* supervise.c */
int job_load_signing_key(Job *j);

/* supervise-result.c */
int job_write_result(Job *j, const char *status);
