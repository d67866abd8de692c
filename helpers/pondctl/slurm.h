/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* slurm.h: pond's routing in Slurm's terms (docs/fleet.md). A worker describes itself as a node: Features
 * from its probe and tags, CPUs and memory within its admission ceiling (slurm-node.c); a job spec becomes
 * an sbatch request whose --constraint names the same features, or is refused with dispatch-check's reason
 * (slurm-request.c). Slurm only routes: the worker checks every job again itself. */
#pragma once

#include <stdint.h>
#include <json-c/json.h>

#include "policy/policy.h"
#include "policy/worker-policy.h"

/* The hex digits of an image digest a feature keeps ("img_" + 12). */
#define SLURM_IMAGE_FEATURE_HEX 12
/* A leveled capability "name=N" is advertised as name1..nameN (a constraint asks for nameK), N at most this. */
#define SLURM_LEVEL_MAX 64
/* What the wrapper adds to the spec's job_id per attempt: "-a" and up to 3 digits (Slurm's requeues). */
#define SLURM_ATTEMPT_SUFFIX_MAX 5
#define SLURM_MARGIN_S_DEFAULT 60

/* The feature one required capability or tag needs: "sandbox.runsc" -> "sb_runsc", "landlock.abi=4" ->
 * "landlock4", "pool:trusted" -> "pool_trusted", "seccomp" -> "cap_seccomp"; other characters than
 * [A-Za-z0-9_] become '_'. */
int slurm_feature_for(const char *capability_or_tag, char **ret);
/* "img_" + the first 12 hex digits of a "sha256:..." digest; -EINVAL for anything else. */
int slurm_image_feature(const char *digest, char **ret);

/* The node's Features: every advertised capability (a leveled one at every level up to its own), every
 * tag, every image present. probe: a `pondctl probe --json` document; -EINVAL with *ret_error if not. */
int slurm_node_features(json_object *probe, char *const *tags, char ***ret, char **ret_error);

typedef struct SlurmNodeResources {
        unsigned cpus;          /* whole CPUs: min(host, max_cpus, max_jobs) */
        uint64_t memory_mib;    /* min(host, max_memory), MiB */
} SlurmNodeResources;

/* What Slurm may allocate on the worker so that it never places more than the ceiling admits: each job
 * takes at least one whole CPU, so no more CPUs than max_jobs either. -EINVAL with *ret_error if the
 * ceiling leaves less than one CPU or one MiB. */
int slurm_node_resources(const AdmissionPolicy *p, unsigned host_cpus, uint64_t host_memory_bytes,
                         SlurmNodeResources *ret, char **ret_error);

typedef struct SlurmRequest {
        char *job_name;         /* the spec's job_id: the task; the wrapper adds -a<attempt> */
        char *partition;
        char *account;          /* the tenant */
        char *constraint;       /* feature&feature... */
        unsigned cpus_per_task;
        uint64_t memory_mib;
        uint64_t time_min;      /* the spec's wall clock plus the margin, in whole minutes */
} SlurmRequest;

SlurmRequest *slurm_request_free(SlurmRequest *r);
static inline void slurm_request_freep(SlurmRequest **r) {
        slurm_request_free(*r);
}

typedef struct SlurmRequestOptions {
        const char *partition;          /* NULL: the job's tier */
        uint64_t margin_s;
        json_object **workers;          /* probe documents, NULL-terminated; NULL: no worker known */
        char **worker_names;            /* their names in reasons, same order */
        char **worker_tags;             /* every worker's tags (NULL: each probe's own "tags") */
} SlurmRequestOptions;

/* The sbatch request for a job spec (its text), or -EINVAL with *ret_error: the reason dispatch-check
 * gives, or why the job cannot go through Slurm (byo tier, a tenant that is no account name, an image by
 * name no worker has), or, given workers, each one's reason not to take it. */
int slurm_request_for(const Policy *p, const char *spec, size_t len, const SlurmRequestOptions *o,
                      SlurmRequest **ret, char **ret_error);
/* sbatch's options, one per element: --job-name=... --requeue. */
int slurm_request_to_args(const SlurmRequest *r, char ***ret);
