/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* supervise.c: pond-run's main path, the design's steps in order (job.h): refuse before anything runs
 * (fail closed), stage, network, bundle, create in the scope, start, run, collect, sign, and tear down on
 * every path. Also `pond-run --cleanup`, which runs the same teardown after a supervisor that is gone, and
 * `pond-run --reconcile`, which does so at boot for every accepted job a restart left without an end. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <time.h>
#include <unistd.h>

#include "basic/dirs.h"
#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "job.h"
#include "result/result.h"
#include "scope/scope.h"
#include "supervise.h"
#include "supervisor/caps.h"
#include "supervisor/supervisor-sandbox.h"

/* Before step 1: the id, the supervisor's own capabilities, and the key: without it no result can be
 * trusted, so nothing runs at all. Returns an exit status. */
static int supervise_init(Job *j, const char *job_id) {
        _cleanup_free_ char *missing = NULL;
        int r;

        j->outcome.accepted_usec = clock_usec(CLOCK_REALTIME);
        r = job_init(j, job_id);
        if (r < 0) {
                audit_event(&j->audit, POND_EVENT_REFUSED, AUDIT_NO_RC, "refused: invalid job id");
                log_error("Invalid job id '%s': must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}.", job_id);
                return POND_RUN_EXIT_REFUSED;
        }
        r = caps_check_supervisor(&missing);
        if (r < 0) {
                log_error("pond-run lacks %s: run it as root, as pond-job@.service does.", missing ?: "capabilities");
                audit_event(&j->audit, POND_EVENT_FAILED, AUDIT_NO_RC, "supervisor lacks %s",
                            missing ?: "capabilities");
                return POND_RUN_EXIT_FAILED;
        }
        r = job_load_signing_key(j);
        if (r < 0) {
                /* No result at all: one signed with a key others may hold would prove nothing. The reason is in
                 * the journal (job_load_signing_key() logged it), the audit record and the unit's status. */
                const char *why = r == -EPERM ? "the worker's signing key is refused: it must be root's and 0600 "
                                                "or stricter (docs/operations.md, \"Keys\")"
                                              : "the worker's signing key is not available";
                audit_event(&j->audit, POND_EVENT_FAILED, AUDIT_NO_RC, "%s", why);
                sd_notifyf(false, "STATUS=failed: %s", why);
                return POND_RUN_EXIT_FAILED;
        }
        return POND_RUN_EXIT_OK;
}

static int supervise_refuse(Job *j, int r) {
        const char *why = j->outcome.reason ?: strerror(-r);

        (void) job_end(j, JOB_END_REFUSED, 0, NULL);
        audit_event(&j->audit, POND_EVENT_REFUSED, AUDIT_NO_RC, "refused: %s", why);
        sd_notifyf(false, "STATUS=refused: %s", why);
        if (job_sign(j) < 0)
                log_error("Could not write the refusal result for %s.", j->paths.id);
        return POND_RUN_EXIT_REFUSED;
}

static bool result_exists(const JobPaths *paths) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/%s/%s", paths->results, paths->id, RESULT_JSON_FILE) >= 0 && access(p, F_OK) == 0;
}

/* A job that was accepted before and never ended (intake said -ESTALE): its one end is this signed failure. */
static int supervise_ended_before(Job *j) {
        (void) job_end(j, JOB_END_FAILED, 0, NULL);
        audit_event(&j->audit, POND_EVENT_FAILED, AUDIT_NO_RC, "failed: %s", j->outcome.reason);
        sd_notifyf(false, "STATUS=failed: %s", j->outcome.reason);
        if (job_sign(j) < 0)
                log_error("Could not write the result of %s.", j->paths.id);
        return POND_RUN_EXIT_FAILED;
}

int supervise(const char *job_id) {
        _cleanup_(job_done) Job j = JOB_NULL;
        int r;

        r = supervise_init(&j, job_id);
        if (r != POND_RUN_EXIT_OK)
                return r;
        /* A job that has ended is never run again, and its one result is left as it is. */
        if (result_exists(&j.paths)) {
                log_error("Job %s has ended: its result is %s/%s. Job ids are never reused.", job_id, j.paths.results,
                          job_id);
                audit_event(&j.audit, POND_EVENT_REFUSED, AUDIT_NO_RC,
                            "refused: the job has ended (its result exists)");
                sd_notifyf(false, "STATUS=refused: job %s has ended (its result exists)", job_id);
                return POND_RUN_EXIT_REFUSED;
        }
        /* Before anything else runs or reads the spec: the supervisor's mount sandbox, or no job. */
        r = supervisor_sandbox_enter(j.paths.service, SUPERVISOR_SANDBOX_WAIT_USEC, &j.bus);
        if (r < 0) {
                job_fail(&j, r, "the supervisors' sandbox (%s) is not available, and no job runs without it "
                         "(systemctl status %s)", SUPERVISOR_SANDBOX_UNIT, SUPERVISOR_SANDBOX_UNIT);
                return supervise_refuse(&j, r);
        }
        sd_notify(false, "STATUS=validating");
        r = job_accept(&j);
        if (r == -ESTALE && j.outcome.failed)
                return supervise_ended_before(&j);
        if (r < 0)
                return supervise_refuse(&j, r);
        job_phase_record(&j, "admission");
        r = job_admit(&j);
        /* At most max_setups jobs set up at once (their unit starts load systemd and the bus): the slot is held
         * from here until the payload started, or the setup failed. */
        if (r >= 0)
                r = job_setup_gate_take(&j);
        if (r < 0 && j.outcome.refused) {
                r = supervise_refuse(&j, r);
                (void) job_teardown(&j); /* what acceptance made (a bundle's checkout, an image's use lock) */
                return r;
        }
        /* The sidecars' units start first (they take longest to come up), then the job's uid range and user
         * namespace, its network (owned by that namespace; made by a child while the workspace, the bundle and
         * the scope are: job_network_begin(), waited for before the container is let go), its workspace. */
        if (r >= 0) {
                job_phase_record(&j, "staging");
                r = job_stage(&j);
        }
        if (r >= 0)
                r = job_network_lease(&j);
        if (r >= 0)
                r = job_userns(&j);
        if (r >= 0)
                r = job_network_begin(&j);
        if (r >= 0)
                r = job_stage_workspace(&j);
        if (r >= 0)
                r = job_stage_hash_input(&j);
        if (r >= 0)
                r = job_write_bundle(&j);
        if (r >= 0)
                r = job_create_in_scope(&j);
        /* A stop during the setup: the payload is not let go at all (job_collect() records the cancel). */
        if (r >= 0 && job_stop_requested(&j))
                r = -ECANCELED;
        if (r >= 0)
                r = job_start(&j);
        job_setup_started(&j, r >= 0 && job_sidecars_starting(&j));
        if (r >= 0) {
                job_phase_record(&j, "running");
                r = job_run_loop(&j);
        }
        job_phase_record(&j, "collecting");
        r = job_collect(&j, r);
        if (r >= 0)
                r = job_sign(&j);
        (void) job_teardown(&j);
        if (j.outcome.refused && r >= 0)
                return POND_RUN_EXIT_REFUSED;
        return r < 0 || j.outcome.failed ? POND_RUN_EXIT_FAILED : POND_RUN_EXIT_OK;
}

/* What systemd says ended the supervisor (ExecStopPost's environment): a stop of the unit (its SIGTERM or
 * SIGINT killed a supervisor that had not blocked them yet, or the stop timed out and SIGKILL followed) is
 * a cancellation; anything else (a crash, SIGKILL from elsewhere, an exit without a result) a failure. */
static bool stopped_by_request(void) {
        const char *code = getenv("EXIT_CODE"), *status = getenv("EXIT_STATUS"), *result = getenv("SERVICE_RESULT");

        if (result && streq(result, "timeout"))
                return true;
        return code && status && streq(code, "killed") && (streq(status, "TERM") || streq(status, "INT"));
}

/* How far a job got, in words, from its spool/phase (job.c; supervise() records them). */
static const char *phase_words(const char *phase) {
        static const char *const words[][2] = {
                { "accepted", "accepted" },
                { "admission", "waiting for admission" },
                { "staging", "being staged" },
                { "running", "running" },
                { "collecting", "being collected" },
        };

        for (size_t i = 0; phase && i < ELEMENTSOF(words); i++)
                if (streq(phase, words[i][0]))
                        return words[i][1];
        return "running (its last phase is not known)";
}

/* The supervisor is gone without a result: a signed "failed" (or "cancelled") one, so the control plane is
 * not left guessing. Nothing of the payload's exit is known: rc and signal stay null. A job no supervisor
 * claimed (spool/phase: job.c) never started: stopped before its supervisor ran, or the supervisor ended
 * before it took the job. restart: why the worker's boot ends it (`pond-run --reconcile`), else NULL. */
static void sign_failure(Job *j, const char *restart) {
        _cleanup_free_ char *path = NULL, *err = NULL, *phase = NULL;
        JobInput *in = &j->input;
        const char *code = getenv("EXIT_CODE"), *status = getenv("EXIT_STATUS"),
                   *result = getenv("SERVICE_RESULT");
        bool claimed = job_phase_read(&j->paths, &phase) != -ENOENT;

        if (job_load_signing_key(j) < 0)
                return;
        job_submitter_recall(j);
        if (asprintf(&path, "%s/job.json", j->paths.spool) >= 0 &&
            read_full_file(path, 1024 * 1024, &in->spec_buf, &in->spec_len) >= 0)
                (void) job_spec_parse(in->spec_buf, in->spec_len, &in->spec, &err);
        if (restart) {
                job_end(j, JOB_END_FAILED, 0, "%s while the job was %s: it did not finish", restart,
                        !claimed ? "waiting for its supervisor (accepted, not yet started)" : phase_words(phase));
        } else if (!claimed && (stopped_by_request() || (result && streq(result, "success")) ||
                                (j->bus && unit_is_stopping(j->bus, j->paths.service) > 0))) {
                /* A stop while the unit was starting: systemd says so in the job it runs now, a stop (a
                 * killed ExecStartPre= or a supervisor not yet running leave SERVICE_RESULT "signal"). */
                job_end(j, JOB_END_CANCELLED, 0, "cancelled before it started: the job's service was stopped "
                        "before its supervisor took the job (%s)", result ?: "?");
        } else if (!claimed) {
                job_end(j, JOB_END_FAILED, 0, "failed before it started: the supervisor ended before it took the "
                        "job (%s %s, %s)", code ?: "no exit", status ?: "-", result ?: "?");
        } else if (stopped_by_request()) {
                job_end(j, JOB_END_CANCELLED, 0, "cancelled: the job's service was stopped before the supervisor "
                        "could sign (%s %s)", code ?: "?", status ?: "?");
        } else {
                job_end(j, JOB_END_FAILED, 0, "the supervisor exited before the job finished (%s %s, %s) while the "
                        "job was %s", code ?: "no exit", status ?: "-", result ?: "?", phase_words(phase));
        }
        audit_event(&j->audit, j->outcome.cancelled ? POND_EVENT_KILLED : POND_EVENT_FAILED, AUDIT_NO_RC, "%s: %s",
                    job_status(j), j->outcome.reason);
        (void) job_sign(j);
}

/* systemd 252 (and later, systemd issue 32583) gives ExecStopPost= no credentials when the unit has a mount
 * namespace of its own, as pond-job@ does: $CREDENTIALS_DIRECTORY is set, the directory is not there. The
 * cleanup then reads the signing key from the key directory itself, as run by hand (key_load_secret() checks
 * its owner and mode), rather than leave a dead supervisor's job without a signed result. */
static void drop_absent_credentials(void) {
        const char *creds = getenv("CREDENTIALS_DIRECTORY");

        if (!creds || access(creds, F_OK) == 0)
                return;
        log_debug("No credentials at %s (ExecStopPost= of a unit with a mount namespace): reading the key "
                  "directory.", creds);
        (void) unsetenv("CREDENTIALS_DIRECTORY");
}

/* What a supervisor that is gone left of job_id: the teardown list with every sidecar and provider assumed, a
 * half-staged result, and, if the job has no result, its one signed end (sign_failure()). `pond-run --cleanup`
 * (in the supervisors' sandbox, after the unit's supervisor) and `pond-run --reconcile` (at boot, restart
 * naming it) are this. */
static int end_orphan(const char *job_id, bool sandbox, const char *restart) {
        _cleanup_(job_done) Job j = JOB_NULL;
        _cleanup_close_ int results_fd = -EBADF;
        int r, ret = 0;

        r = job_init(&j, job_id);
        if (r < 0)
                return log_error_errno(r, "Invalid job id '%s'.", job_id);
        /* Without the sandbox the cleanup still runs: what a job left behind must go in any case. */
        r = sandbox ? supervisor_sandbox_enter(j.paths.service, SUPERVISOR_SANDBOX_CLEANUP_WAIT_USEC, &j.bus) : 0;
        if (r < 0)
                log_warning_errno(r, "Cleaning up %s outside the supervisors' sandbox (%s): %m", job_id,
                                  SUPERVISOR_SANDBOX_UNIT);
        r = j.bus ? 0 : sd_bus_open_system(&j.bus);
        if (r < 0)
                ret = log_error_errno(r, "Cannot connect to the system bus to stop %s: %m", j.paths.scope);
        /* Whatever the supervisor had started: it can no longer say, so every sidecar and every provider. */
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++)
                j.sidecars[s].up = true;
        r = job_teardown(&j);
        if (r < 0)
                ret = ret ?: r;
        results_fd = open(j.paths.results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (results_fd >= 0)
                (void) result_stage_abort(results_fd, job_id);
        if (!result_exists(&j.paths)) {
                sign_failure(&j, restart);
                if (!result_exists(&j.paths))
                        ret = ret ?: log_error_errno(EIO, "Job %s is left without a result.", job_id);
        }
        audit_event(&j.audit, POND_EVENT_CLEANED, AUDIT_NO_RC, "cleaned up%s", ret < 0 ? " (with errors)" : "");
        return ret;
}

int supervise_cleanup(const char *job_id) {
        drop_absent_credentials();
        return end_orphan(job_id, true, NULL);
}

static bool strv_find(char **l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

/* Adds name (an entry of dir: a spool entry, or an owner record) to *ids once, if it is a job id. */
static int collect_ids(const char *dir, char ***ids) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return errno == ENOENT ? 0 : log_error_errno(errno, "Cannot read %s: %m", dir);
        while ((errno = 0, de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (!job_id_is_valid(de->d_name)) {
                        log_warning("Skipping %s/%s: not a job id.", dir, de->d_name);
                        continue;
                }
                if (strv_find(*ids, de->d_name))
                        continue;
                if (strv_push(ids, strdup(de->d_name)) < 0)
                        return log_oom();
        }
        return errno > 0 ? log_error_errno(errno, "Cannot read %s: %m", dir) : 0;
}

int supervise_reconcile(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_free_ char *jobs = NULL, *owners = NULL, *restart = NULL;
        sd_id128_t boot;
        unsigned ended = 0;
        int r, ret = 0;

        drop_absent_credentials();
        if (asprintf(&jobs, "%s/jobs", pond_dir(POND_DIR_STATE)) < 0 ||
            asprintf(&owners, "%s/owners", pond_dir(POND_DIR_STATE)) < 0)
                return log_oom();
        /* Which units run, or are about to: those jobs are not a restart's. Without the bus no one can say. */
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus to see which jobs run: %m");
        r = collect_ids(jobs, &ids);
        if (r >= 0)
                r = collect_ids(owners, &ids);
        if (r < 0)
                return r;
        if (sd_id128_get_boot(&boot) >= 0)
                r = asprintf(&restart, "the worker restarted (boot %s)", SD_ID128_TO_STRING(boot));
        else
                r = asprintf(&restart, "the worker restarted");
        if (r < 0)
                return log_oom();
        for (char **id = ids; id && *id; id++) {
                _cleanup_(job_paths_done) JobPaths p = {};
                _cleanup_free_ char *result = NULL;

                if (job_paths_init(&p, *id) < 0)
                        continue;
                if (asprintf(&result, "%s/%s/%s", p.results, *id, RESULT_JSON_FILE) < 0)
                        return log_oom();
                if (access(result, F_OK) == 0)
                        continue;
                r = unit_is_idle(bus, p.service);
                if (r < 0) {
                        ret = ret ?: log_error_errno(r, "Cannot tell whether %s runs: %m", p.service);
                        continue;
                }
                if (r == 0) {
                        log_info("Job %s has no result yet and its unit is active or queued: left to it.", *id);
                        continue;
                }
                log_notice("Job %s was accepted and has not ended: ending it (%s).", *id, restart);
                r = end_orphan(*id, false, restart);
                if (r < 0)
                        ret = ret ?: r;
                else
                        ended++;
        }
        log_info("Reconciled the spool: %u job%s ended by the restart.", ended, ended == 1 ? "" : "s");
        return ret;
}
