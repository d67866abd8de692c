/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-done.c: freeing a Job part by part, each part by its owner's *_done(): it calls every phase and feature,
 * and only supervise.c calls it. */
#include "job.h"
#include "secrets/keys.h"

void job_done(Job *j) {
        job_result_done(&j->result);
        job_console_done(&j->console);
        job_transcript_done(&j->transcript);
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
        safe_close(j->admission.setup_queue_fd);
        safe_close(j->admission.setup_fd); /* the setup slot, if a path kept it this long */
        job_input_done(&j->input);
        job_outcome_done(&j->outcome);
        j->bus = sd_bus_flush_close_unref(j->bus);
        if (j->sign_sk)
                secret_free(TAKE_PTR(j->sign_sk));
        job_paths_done(&j->paths);
}
