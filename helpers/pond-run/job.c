/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job.c: a job's identity (its id and the paths derived from it), the one place its failure reason is
 * set, and freeing it part by part. */
#include <stdarg.h>
#include <systemd/sd-login.h>

#include "basic/string-util.h"
#include "job.h"
#include "secrets/keys.h"

int job_init(Job *j, const char *job_id) {
        j->audit.job_id = job_id;
        return job_paths_init(&j->paths, job_id);
}

int job_fail(Job *j, int r, const char *fmt, ...) {
        va_list ap;

        if (j->outcome.reason)
                return r;
        va_start(ap, fmt);
        j->outcome.reason = strdupf_va(fmt, ap);
        va_end(ap);
        return r;
}

const char *job_bound_service(const Job *j) {
        _cleanup_free_ char *unit = NULL;

        if (sd_pid_get_unit(0, &unit) < 0 || !streq(unit, j->paths.service))
                return NULL;
        return j->paths.service;
}

const char *job_status(const Job *j) {
        if (j->outcome.refused)
                return "refused";
        if (j->outcome.failed)
                return "failed";
        return j->outcome.cancelled ? "cancelled" : "completed";
}

void job_outcome_done(JobOutcome *o) {
        free(o->reason);
        *o = (JobOutcome) JOB_OUTCOME_NULL;
}

void job_done(Job *j) {
        job_result_done(&j->result);
        job_console_done(&j->console);
        job_runtime_done(&j->runtime);
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++)
                job_sidecar_done(&j->sidecars[s]);
        job_home_done(&j->home);
        job_view_done(&j->view);
        job_network_done(&j->network);
        job_staging_done(&j->staging);
        job_userns_done(&j->userns);
        job_input_hash_done(&j->input_hash);
        safe_close(j->admission.queue_fd); /* a queue file left unflocked is skipped, and removed, by the next job */
        job_input_done(&j->input);
        job_outcome_done(&j->outcome);
        j->bus = sd_bus_flush_close_unref(j->bus);
        if (j->sign_sk)
                secret_free(TAKE_PTR(j->sign_sk));
        job_paths_done(&j->paths);
}
