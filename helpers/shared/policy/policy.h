/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* policy.h: profiles, postures, overridable knobs and their bounds, backends, tiers, all read from
 * policy/profiles.json (the single source of truth) and resolved fail-closed. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "basic/size.h" /* parse_size(), declared here once */
#include "policy/landlock.h" /* LandlockProfile */
#include "policy/spec.h"
#include "resview/resview.h" /* ResourceViewMode */

typedef enum FsPosture {
        FS_HOST,      /* profile none: the host filesystem view of the image */
        FS_READONLY,  /* checkout bound read-only */
        FS_OVERLAY,   /* checkout as read-only lower, throwaway upper in a size-capped tmpfs */
        _FS_POSTURE_MAX,
        _FS_POSTURE_INVALID = -EINVAL,
} FsPosture;

typedef enum NetPosture {
        NET_OPEN,        /* host network */
        NET_BROKER_ONLY, /* own netns, only the broker reachable */
        NET_ALLOWLIST,   /* broker + CONNECT proxy with the host allowlist */
        _NET_POSTURE_MAX,
        _NET_POSTURE_INVALID = -EINVAL,
} NetPosture;

/* What a sidecar's death while the payload runs does to the job (profile field on_sidecar_death). */
typedef enum SidecarDeath {
        SIDECAR_DEATH_FAIL,   /* the default: the payload is killed, the job fails */
        SIDECAR_DEATH_RECORD, /* the result records it; the job runs on with its network denied */
        _SIDECAR_DEATH_MAX,
        _SIDECAR_DEATH_INVALID = -EINVAL,
} SidecarDeath;

SidecarDeath sidecar_death_from_string(const char *s);

FsPosture fs_posture_from_string(const char *s);
const char *net_posture_to_string(NetPosture p);
NetPosture net_posture_from_string(const char *s);

/* exec_concurrency: a job's init serves at most INIT_SLOTS (console/init-proto.h) execs at once; the
 * default where a profile names none. */
#define POLICY_EXEC_CONCURRENCY_MAX 16
#define POLICY_EXEC_CONCURRENCY_DEFAULT 8

typedef struct Policy {
        json_object *profiles; /* profiles.json, validated by policy_load() */
        json_object *seccomp;  /* seccomp.json: an OCI linux.seccomp object */
} Policy;

/* What a job runs with, after policy. Every value is finite and positive; nothing here is -1. */
typedef struct ResolvedPolicy {
        char *profile;
        char *backend;
        char *tier;
        bool confined;      /* false only for profile none */
        FsPosture fs;
        NetPosture net;
        uint64_t memory_bytes;
        uint64_t cpus_milli;  /* 1000 = one CPU */
        uint64_t pids_limit;
        uint64_t host_pids_limit;       /* the scope's and the runtime cgroup's: pids_limit, or sized for a
                                         * gVisor sandbox's own threads and stubs (policy.c) */
        uint64_t tmpfs_bytes;
        uint64_t home_bytes;  /* the confined job's private $HOME (a tmpfs); profile none has none */
        uint64_t exec_concurrency; /* `pondctl exec` calls of the job running at once */
        char *image;
        char **images_allowed; /* the profile's "images" plus its default image: names, digests or "*" */
        uint64_t nofile;      /* rlimits, fixed by the profile */
        uint64_t nproc;
        ResourceViewMode resource_view; /* when the job's view of its resources cannot be had */
        SidecarDeath on_sidecar_death;
        LandlockProfile landlock;       /* the profile's "landlock" (absent: off) */
} ResolvedPolicy;

/* Loads profiles.json and seccomp.json from dir; dir NULL: the worker's policy, each file from /etc/pond
 * if the operator put one there, else the shipped one (policy_file(), policy-file.h). */
int policy_load(const char *dir, Policy **ret, char **ret_error);
Policy *policy_free(Policy *p);
static inline void policy_freep(Policy **p) {
        policy_free(*p);
}

/* Fails closed: -EINVAL (refusal) with *ret_error saying what and why. */
int policy_resolve(const Policy *p, const SandboxBlock *block, ResolvedPolicy **ret, char **ret_error);
ResolvedPolicy *resolved_policy_free(ResolvedPolicy *r);
/* Whether the profile allows the image: "*", its digest or one of its names (or, for host and directory
 * images, digest NULL and names their one name) is listed. */
bool policy_image_allowed(const ResolvedPolicy *r, const char *digest, char *const *names);
static inline void resolved_policy_freep(ResolvedPolicy **r) {
        resolved_policy_free(*r);
}
