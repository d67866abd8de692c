/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stage.h: the job's /workspace: the checkout read-only, as a throwaway overlay, or in place (profile
 * none), always through an idmapped mount so the checkout's owner appears as the job user. */
#pragma once

#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

#include "policy/policy.h"

typedef struct Stage {
        char *workspace;   /* mountpoint bound at /workspace */
        char *lower;       /* read-only view of the checkout as issued (hashable while the job runs), or NULL */
        char *upper;       /* overlay upper dir (the change set), or NULL */
        bool readonly;
} Stage;

/* job_dir is this job's private runtime directory (e.g. /run/pond/jobs/ID), created by the caller.
 * checkout_fd is the checkout's directory, opened by the caller (at acceptance) in the mount namespace
 * source_ns (a /proc/PID/ns/mnt; NULL: ours), or -EBADF (an empty workspace): exactly that tree is cloned
 * (in source_ns) and mounted in ours, never a path resolved again. Everything mounted lives below job_dir.
 * job_uid/job_gid are the job user's ids on the host (JOB_UID/JOB_GID, or its id in the job's own uid
 * range): the checkout's owner appears as them, and the overlay's top is theirs. */
int stage_setup(const char *job_dir, const char *source_ns, int checkout_fd, FsPosture fs, uint64_t scratch_bytes,
                uid_t job_uid, gid_t job_gid, Stage *ret);
/* The same, for a job whose submitter is not root: the checkout's top directory, as cloned for the mount, must
 * be owned by owner (-EPERM otherwise), so that nobody stages a tree they do not own (docs/threat-model.md,
 * "Members of the group pond"). STAGE_ANY_OWNER: no check. */
#define STAGE_ANY_OWNER ((uid_t) -1)
int stage_setup_owned(const char *job_dir, const char *source_ns, int checkout_fd, uid_t owner, FsPosture fs,
                      uint64_t scratch_bytes, uid_t job_uid, gid_t job_gid, Stage *ret);

/* Unmounts everything stage_setup() may have mounted below job_dir. Idempotent; safe on partial state. */
int stage_teardown(const char *job_dir);

void stage_done(Stage *s);
