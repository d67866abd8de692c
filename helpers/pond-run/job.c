/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job.c: a job's identity (its id and the paths derived from it), the one place its failure reason is
 * set, and freeing it part by part. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
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

/* spool/phase: where the job's supervisor got to, one word and a newline. Made once at intake (the claim: a
 * spool entry a supervisor took is never taken again), then replaced at each phase without an fsync: after a
 * power cut it may be an older phase, or empty; it only names, in a restart's result, how far the job got. */
#define PHASE_FILE "phase"

int job_phase_claim(Job *j, int spool_fd) {
        static const char line[] = "accepted\n";

        return write_file_new_at(spool_fd, PHASE_FILE, line, sizeof line - 1, 0644);
}

void job_phase_record(Job *j, const char *phase) {
        _cleanup_free_ char *line = NULL;
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        static const char tmp[] = "." PHASE_FILE ".tmp";

        dfd = open(j->paths.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0 || asprintf(&line, "%s\n", phase) < 0)
                return;
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 || fchmod(fd, 0644) < 0 || write_all(fd, line, strlen(line)) < 0 ||
            renameat(dfd, tmp, dfd, PHASE_FILE) < 0)
                log_debug_errno(errno, "Could not record phase %s of %s: %m", phase, j->paths.id);
}

int job_phase_read(const JobPaths *paths, char **ret_phase) {
        _cleanup_free_ char *path = NULL, *line = NULL;
        size_t len;
        int r;

        if (asprintf(&path, "%s/" PHASE_FILE, paths->spool) < 0)
                return -ENOMEM;
        r = read_full_file(path, 64, &line, &len);
        if (r < 0)
                return r;
        if (len < 2 || line[len - 1] != '\n' || !job_id_is_valid(strndupa(line, len - 1)))
                return -EBADMSG;
        line[len - 1] = 0;
        *ret_phase = TAKE_PTR(line);
        return 0;
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
