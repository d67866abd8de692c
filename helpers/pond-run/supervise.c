/* supervise.c: pond-run's main path. Refuse before anything runs (fail closed), stage, launch the runtime
 * inside the transient scope, hand off to the event loop, then collect, sign, and clean up on every path. */
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "caps.h"
#include "config.h"
#include "fileio.h"
#include "jobid.h"
#include "keys.h"
#include "log.h"
#include "oci.h"
#include "scope.h"
#include "supervise-launch.h"
#include "supervise.h"
#include "supervise-launch.h"

static int set_reason(Job *j, const char *why) {
        free(j->reason);
        j->reason = strdup(why ?: "unknown");
        return j->reason ? 0 : -ENOMEM;
}

/* The signing key arrives as a systemd credential; outside a unit (tests, the demo) from the key dir. */
int job_load_signing_key(Job *j) {
        _cleanup_free_ char *path = job_worker_key_path("sign.key");
        int r;

        if (!path)
                return -ENOMEM;
        r = key_load_secret(path, KEY_SIGN_SECRET_SIZE, &j->sign_sk);
        if (r < 0)
                return log_error_errno(r, "Cannot load the signing key %s: %m", path);
        return 0;
}

/* Steps 1 of the design: parse and resolve; every failure here is a refusal, nothing has run. */
static int job_accept(Job *j) {
        _cleanup_free_ char *err = NULL, *path = NULL;
        int r;

        if (asprintf(&path, "%s/%s/result.json", j->paths.results, j->id) < 0)
                return -ENOMEM;
        if (access(path, F_OK) == 0)
                return set_reason(j, "job_id: a result for this id exists already (ids are never reused)") ?:
                        -EEXIST;
        free(path);
        if (asprintf(&path, "%s/job.json", j->paths.spool) < 0)
                return -ENOMEM;
        r = read_full_file(path, 1024 * 1024, &j->spec_buf, &j->spec_len);
        if (r < 0) {
                if (asprintf(&err, "cannot read the job spec %s: %s", path, strerror(-r)) < 0)
                        return -ENOMEM;
                return set_reason(j, err) ?: -EINVAL;
        }
        r = job_spec_parse(j->spec_buf, j->spec_len, &j->spec, &err);
        if (r < 0)
                return set_reason(j, err ?: "invalid job spec") ?: -EINVAL;
        if (!streq(j->spec->job_id, j->id)) {
                if (asprintf(&err, "job_id: the spec says '%s' but it was started as '%s'", j->spec->job_id,
                             j->id) < 0)
                        return -ENOMEM;
                return set_reason(j, err) ?: -EINVAL;
        }
        r = policy_load(getenv("POND_POLICYDIR") ?: POND_POLICYDIR, &j->policy, &err);
        if (r < 0)
                return set_reason(j, err ?: "cannot load policy") ?: -EINVAL;
        r = policy_resolve(j->policy, &j->spec->sandbox, &j->resolved, &err);
        if (r < 0)
                return set_reason(j, err) ?: -EINVAL;
        j->audit.profile = j->resolved->profile;
        j->audit.backend = j->resolved->backend;
        j->provider = runtime_provider_find(j->resolved->backend);
        if (!j->provider) {
                if (asprintf(&err, "sandbox.backend: '%s' is not available on this worker", j->resolved->backend) < 0)
                        return -ENOMEM;
                return set_reason(j, err) ?: -EOPNOTSUPP;
        }
        r = j->provider->check(&err);
        if (r < 0)
                return set_reason(j, err ?: "backend cannot run here") ?: -EOPNOTSUPP;
        r = job_bundle_extract(j, &err);
        if (r < 0)
                return set_reason(j, err ?: "bundle: refused") ?: r;
        r = job_broker_check(j, &err);
        if (r < 0)
                return set_reason(j, err ?: "credentials: refused") ?: r;
        /* A directory image is only looked up (nothing is created): a missing one is a refusal. The
         * embedded image is generated per job, later, in the job's runtime directory. */
        if (!streq(j->resolved->image, IMAGE_HOST)) {
                r = image_prepare(j->resolved->image, j->paths.images, j->paths.run, &j->image, &err);
                if (r < 0)
                        return set_reason(j, err ?: "sandbox.overrides.image: image not available") ?: r;
        }
        return 0;
}

static void job_done(Job *j) {
        stage_done(&j->stage);
        image_layout_done(&j->image);
        strv_freep(&j->posture_env);
        json_object_put(j->egress_stats);
        unit_start_free(j->egress_starting);
        unit_start_free(j->broker_starting);
        json_object_put(j->broker_stats);
        if (j->log_open)
                output_log_close(&j->log);
        for (int i = 0; i < 2; i++) {
                safe_close(j->out_pipe[i]);
                safe_close(j->err_pipe[i]);
                safe_close(j->oom_fds[i]);
        }
        safe_close(j->input.checkout_fd);
        j->spec = job_spec_free(j->spec);
        j->policy = policy_free(j->policy);
        j->resolved = resolved_policy_free(j->resolved);
        sd_bus_flush_close_unref(j->bus);
        free(j->spec_buf);
        free(j->scope_cgroup);
        free(j->reason);
        if (j->sign_sk)
                secret_free(j->sign_sk);
        job_paths_done(&j->paths);
}

static int job_refuse(Job *j, int r) {
        audit_event(&j->audit, POND_EVENT_REFUSED, AUDIT_NO_RC, "refused: %s", j->reason ?: strerror(-r));
        sd_notifyf(false, "STATUS=refused: %s", j->reason ?: strerror(-r));
        if (job_write_result(j, "refused") < 0)
                log_error("Could not write the refusal result for %s.", j->id);
        return POND_RUN_EXIT_REFUSED;
}

int supervise(const char *job_id) {
        Job j = { .id = job_id, .audit.job_id = job_id, .out_pipe = { -EBADF, -EBADF },
                  .err_pipe = { -EBADF, -EBADF }, .oom_fds = { -EBADF, -EBADF }, .input.checkout_fd = -EBADF, .exit_status = -1 };
        char *missing = NULL;
        int r, ret;

        j.accepted_usec = clock_usec(CLOCK_REALTIME);
        r = job_paths_init(&j.paths, job_id);
        if (r < 0) {
                audit_event(&j.audit, POND_EVENT_REFUSED, AUDIT_NO_RC, "refused: invalid job id");
                log_error("Invalid job id '%s': must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}.", job_id);
                return POND_RUN_EXIT_REFUSED;
        }
        r = caps_check_supervisor(&missing);
        if (r < 0) {
                log_error("pond-run lacks %s: run it as root, as pond-job@.service does.", missing ?: "capabilities");
                audit_event(&j.audit, POND_EVENT_FAILED, AUDIT_NO_RC, "supervisor lacks %s", missing ?: "capabilities");
                free(missing);
                job_done(&j);
                return POND_RUN_EXIT_FAILED;
        }
        /* Without a key no result can be trusted: refuse to run at all. */
        r = job_load_signing_key(&j);
        if (r < 0) {
                set_reason(&j, "the worker's signing key is not available");
                audit_event(&j.audit, POND_EVENT_FAILED, AUDIT_NO_RC, "%s", j.reason);
                job_done(&j);
                return POND_RUN_EXIT_FAILED;
        }
        sd_notify(false, "STATUS=validating");
        r = job_accept(&j);
        if (r < 0) {
                ret = job_refuse(&j, r);
                job_done(&j);
                return ret;
        }
        audit_event(&j.audit, POND_EVENT_ACCEPTED, AUDIT_NO_RC, "accepted: profile %s, backend %s, tier %s",
                    j.resolved->profile, j.resolved->backend, j.resolved->tier);

        r = job_launch(&j);
        if (r >= 0)
                r = job_run_loop(&j);
        ret = job_finish(&j, r);
        job_teardown(&j);
        job_done(&j);
        return ret;
}
