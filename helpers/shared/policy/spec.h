/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* spec.h: the job spec (docs/job-spec.md), parsed strictly. */
#pragma once

#include <stdint.h>
#include <stdbool.h>
#include <json-c/json.h>

#include "policy/home.h"

/* The sandbox block as written by the dispatcher; its meaning is decided by policy_resolve(). */
typedef struct SandboxBlock {
        char *profile;          /* NULL if absent: refused by policy (only an explicit "none" opts out) */
        char *backend;          /* NULL: the profile's default */
        char *tier;             /* NULL: the profile's default */
        json_object *overrides; /* an object or NULL; keys checked by policy_resolve() */
        char **allow_hosts;     /* NULL-terminated, never NULL */
} SandboxBlock;

typedef struct JobLimits {
        uint64_t wall_clock_s;   /* > 0 */
        uint64_t output_bytes;   /* cap on stdout+stderr kept */
        uint64_t artifact_bytes; /* cap on collected artifacts */
        uint64_t artifact_files; /* cap on collected artifact entries */
        uint64_t max_cost_cents; /* model spend through the broker; 0: not set (required with credentials) */
} JobLimits;

typedef struct JobSpec {
        char *job_id;
        char *tenant;
        char **command; /* argv, NULL-terminated, at least one element */
        char **env;     /* "KEY=VALUE", NULL-terminated, never NULL */
        char *checkout; /* absolute host path or NULL (empty workspace) */
        char *bundle;   /* absolute path of an encrypted source bundle (docs/secrets.md), or NULL; not with
                         * checkout: the worker extracts it into a fresh checkout of its own */
        SandboxBlock sandbox;
        JobLimits limits;
        char **outputs; /* workspace-relative paths, NULL-terminated, never NULL */
        json_object *credentials; /* array of sealed model credentials for the broker, or NULL; each entry
                                   * is checked in depth by the broker's own parser (broker-config.c) */
        HomeFile *home_files;     /* small text files for a confined job's $HOME (home.h), placeholders
                                   * checked against credentials here and rendered by the supervisor */
        size_t n_home_files;
        bool tty;                 /* the payload's stdio is a pseudo-terminal relayed to the caller (console.h) */
        bool stdin_open;          /* "stdin": the caller's stdin reaches the payload (a pipe, or the tty) */
        bool kill_on_hangup;      /* an attached caller that goes away without detaching cancels the job */
} JobSpec;

#define JOB_SPEC_TENANT_MAX 128
#define JOB_SPEC_COMMAND_MAX 4096
#define JOB_SPEC_ARG_MAX (128 * 1024 - 1) /* one argv/env string: the kernel's MAX_ARG_STRLEN less NUL */
#define JOB_SPEC_ENV_MAX 1024
#define JOB_SPEC_ENV_NAME_MAX 128
#define JOB_SPEC_NAME_MAX 64 /* sandbox.profile, .backend, .tier */
#define JOB_SPEC_ALLOW_HOSTS_MAX 256
#define JOB_SPEC_HOST_MAX 253
#define JOB_SPEC_OUTPUTS_MAX 256

#define JOB_SPEC_DEFAULT_WALL_CLOCK_S 3600
#define JOB_SPEC_MAX_WALL_CLOCK_S (7 * 24 * 3600)
#define JOB_SPEC_DEFAULT_OUTPUT_BYTES (16ULL << 20)
#define JOB_SPEC_MAX_OUTPUT_BYTES (1ULL << 30)
#define JOB_SPEC_DEFAULT_ARTIFACT_BYTES (256ULL << 20)
#define JOB_SPEC_MAX_ARTIFACT_BYTES (16ULL << 30)
#define JOB_SPEC_DEFAULT_ARTIFACT_FILES 10000
/* Every entry is in the signed result.json, which a verifier reads whole up to RESULT_JSON_MAX (64 MiB): a
 * million entries (~250 MB of JSON) could never verify. 100,000 with paths within COLLECT_MAX_NAME_BYTES
 * fit, and pond-run collects them in bounded memory (test-collect measures it). */
#define JOB_SPEC_MAX_ARTIFACT_FILES 100000
#define JOB_SPEC_MAX_COST_CENTS 10000000
#define JOB_SPEC_CREDENTIALS_MAX 8

/* Strict: unknown keys, wrong types, duplicate keys, bad UTF-8, NUL bytes, too deep: -EINVAL (> 1 MiB:
 * -E2BIG) with *ret_error naming the field (e.g. "sandbox.overrides: must be an object"). */
int job_spec_parse(const char *buf, size_t len, JobSpec **ret, char **ret_error);
/* Checks and copies a sandbox block (keys profile, backend, tier, overrides, allow_hosts; nothing else).
 * field is the block's name in messages ("sandbox" if NULL). On success *ret holds its own copies and a
 * reference to overrides, released by sandbox_block_done(); on failure *ret is untouched. */
int sandbox_block_from_json(json_object *o, const char *field, SandboxBlock *ret, char **ret_error);
void sandbox_block_done(SandboxBlock *b);
JobSpec *job_spec_free(JobSpec *s);
static inline void job_spec_freep(JobSpec **s) {
        job_spec_free(*s);
}
