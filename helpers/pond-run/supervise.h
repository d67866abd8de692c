/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* supervise.h: pond-run's job: refuse or run one job end to end and leave a signed result. */
#pragma once

/* pond-run's exit status: the job's own status is in the result, never here. */
enum {
        POND_RUN_EXIT_OK = 0,      /* a result was written (whatever the job did) */
        POND_RUN_EXIT_USAGE = 2,
        POND_RUN_EXIT_REFUSED = 3, /* refused before anything ran; a signed refusal was written if possible */
        POND_RUN_EXIT_FAILED = 4,  /* pond itself failed; a signed failure was written if possible */
};

/* Runs job_id through the pipeline of job.h; returns one of the exit statuses above. */
int supervise(const char *job_id);
/* `pond-run --cleanup`: whatever the job left behind is removed; a job without a result gets a signed
 * "failed" one. 0 or -errno. */
int supervise_cleanup(const char *job_id);
/* `pond-run --reconcile` (pond-reconcile.service, at boot before any job): every job with a spool entry or an
 * owner record, no result and no unit that runs it ends as `--cleanup` ends it, signed "failed", the reason
 * naming the restart. 0 or -errno (a job that could not be ended). */
int supervise_reconcile(void);
