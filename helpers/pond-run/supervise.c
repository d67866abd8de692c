/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* supervise.c: pond-run's main path, the design's steps in order (job.h): refuse before anything runs
 * (fail closed), stage, network, bundle, create in the scope, start, run, collect, sign, and tear down on
 * every path. Also `pond-run --cleanup`, which runs the same teardown after a supervisor that is gone. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "job.h"
#include "result/result.h"
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

        j->outcome.refused = true;
        audit_event(&j->audit, POND_EVENT_REFUSED, AUDIT_NO_RC, "refused: %s", why);
        sd_notifyf(false, "STATUS=refused: %s", why);
        if (job_sign(j) < 0)
                log_error("Could not write the refusal result for %s.", j->paths.id);
        return POND_RUN_EXIT_REFUSED;
}

int supervise(const char *job_id) {
        _cleanup_(job_done) Job j = JOB_NULL;
        int r;

        r = supervise_init(&j, job_id);
        if (r != POND_RUN_EXIT_OK)
                return r;
        /* Before anything else runs or reads the spec: the supervisor's mount sandbox, or no job. */
        r = supervisor_sandbox_enter(j.paths.service, SUPERVISOR_SANDBOX_WAIT_USEC, &j.bus);
        if (r < 0) {
                job_fail(&j, r, "the supervisors' sandbox (%s) is not available, and no job runs without it "
                         "(systemctl status %s)", SUPERVISOR_SANDBOX_UNIT, SUPERVISOR_SANDBOX_UNIT);
                return supervise_refuse(&j, r);
        }
        sd_notify(false, "STATUS=validating");
        r = job_accept(&j);
        if (r < 0)
                return supervise_refuse(&j, r);
        r = job_admit(&j);
        if (r < 0 && j.outcome.refused) {
                r = supervise_refuse(&j, r);
                (void) job_teardown(&j); /* what acceptance made (a bundle's checkout, an image's use lock) */
                return r;
        }
        /* The sidecars' units start first (they take longest to come up), then the job's uid range and user
         * namespace, its network (owned by that namespace; made by a child while the workspace, the bundle and
         * the scope are: job_network_begin(), waited for before the container is let go), its workspace. */
        if (r >= 0)
                r = job_stage(&j);
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
        if (r >= 0)
                r = job_run_loop(&j);
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

/* The supervisor is gone without a result: a signed "failed" (or "cancelled") one, so the control plane is
 * not left guessing. Nothing of the payload's exit is known: rc and signal stay null. */
static void sign_failure(Job *j) {
        _cleanup_free_ char *path = NULL, *err = NULL;
        JobInput *in = &j->input;
        const char *code = getenv("EXIT_CODE"), *status = getenv("EXIT_STATUS");

        if (job_load_signing_key(j) < 0)
                return;
        job_submitter_recall(j);
        if (asprintf(&path, "%s/job.json", j->paths.spool) >= 0 &&
            read_full_file(path, 1024 * 1024, &in->spec_buf, &in->spec_len) >= 0)
                (void) job_spec_parse(in->spec_buf, in->spec_len, &in->spec, &err);
        if (stopped_by_request()) {
                j->outcome.cancelled = true;
                job_fail(j, 0, "cancelled: the job's service was stopped before the supervisor could sign "
                         "(%s %s)", code ?: "?", status ?: "?");
        } else {
                j->outcome.failed = true;
                job_fail(j, 0, "the supervisor exited before the job finished (%s %s)", code ?: "?",
                         status ?: "?");
        }
        (void) job_sign(j);
}

static bool result_exists(const JobPaths *paths) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/%s/%s", paths->results, paths->id, RESULT_JSON_FILE) >= 0 && access(p, F_OK) == 0;
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

int supervise_cleanup(const char *job_id) {
        _cleanup_(job_done) Job j = JOB_NULL;
        _cleanup_close_ int results_fd = -EBADF;
        int r, ret = 0;

        r = job_init(&j, job_id);
        if (r < 0)
                return log_error_errno(r, "Invalid job id '%s'.", job_id);
        drop_absent_credentials();
        /* Without the sandbox the cleanup still runs: what a job left behind must go in any case. */
        r = supervisor_sandbox_enter(j.paths.service, SUPERVISOR_SANDBOX_CLEANUP_WAIT_USEC, &j.bus);
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
        if (!result_exists(&j.paths))
                sign_failure(&j);
        audit_event(&j.audit, POND_EVENT_CLEANED, AUDIT_NO_RC, "cleaned up%s", ret < 0 ? " (with errors)" : "");
        return ret;
}
