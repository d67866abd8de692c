/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stage.h: the job's /workspace: the checkout read-only, as a throwaway overlay, or in place (profile
 * none), always through an idmapped mount so the checkout's owner appears as the job user. */
#pragma once

#include <stdint.h>
#include <stdbool.h>

#include "policy.h"

typedef struct Stage {
        char *workspace;   /* mountpoint bound at /workspace */
        char *lower;       /* read-only view of the checkout as issued (hashable while the job runs), or NULL */
        char *upper;       /* overlay upper dir (the change set), or NULL */
        bool readonly;
} Stage;

/* job_dir is this job's private runtime directory (e.g. /run/pond/jobs/ID), created by the caller.
 * checkout may be NULL (an empty workspace); it is the path as the mount namespace source_ns sees it (a
 * /proc/PID/ns/mnt; NULL: ours), and mounted in ours. Everything mounted lives below job_dir. */
int stage_setup(const char *job_dir, const char *source_ns, const char *checkout, FsPosture fs, uint64_t scratch_bytes,
                Stage *ret);

/* Unmounts everything stage_setup() may have mounted below job_dir. Idempotent; safe on partial state. */
int stage_teardown(const char *job_dir);

void stage_done(Stage *s);
