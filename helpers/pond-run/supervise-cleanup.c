/* supervise-cleanup.c: `pond-run --cleanup ID`, the unit's ExecStopPost. Runs after the supervisor has
 * exited for whatever reason (even SIGKILL) and removes what it may have left: the scope, the container,
 * mounts and directories, a half-staged result. Every step is idempotent. If the job has no result, a
 * signed "failed" one is written so the control plane is not left guessing. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "fileio.h"
#include "keys.h"
#include "log.h"
#include "result.h"
#include "scope.h"
#include "supervise-launch.h"

/* The supervisor may have died before it knew (or after it forgot) the backend: ask every provider. */
static void remove_runtime_state(const JobPaths *paths) {
        static const char *const backends[] = { "runc", "runsc", "kata" };

        for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
                const RuntimeProvider *p = runtime_provider_find(backends[i]);
                if (p && job_delete_container(p, paths) < 0)
                        log_warning("%s delete of %s failed.", p->name, paths->container);
        }
}

static bool result_exists(const JobPaths *paths, const char *id) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/%s/%s", paths->results, id, RESULT_JSON_FILE) >= 0 && access(p, F_OK) == 0;
}

static void write_failed_result(Job *j) {
        _cleanup_free_ char *spec = NULL, *err = NULL;

        if (job_load_signing_key(j) < 0)
                return;
        if (asprintf(&spec, "%s/job.json", j->paths.spool) >= 0 &&
            read_full_file(spec, 1024 * 1024, &j->spec_buf, &j->spec_len) >= 0)
                (void) job_spec_parse(j->spec_buf, j->spec_len, &j->spec, &err);
        j->reason = strdup("the supervisor exited before the job finished");
        (void) job_write_result(j, "failed");
}

int supervise_cleanup(const char *job_id) {
        Job j = { .id = job_id, .audit.job_id = job_id, .exit_status = -1, .input.checkout_fd = -EBADF,
                  .out_pipe = { -EBADF, -EBADF }, .err_pipe = { -EBADF, -EBADF }, .oom_fds = { -EBADF, -EBADF } };
        _cleanup_close_ int results_fd = -EBADF;
        int r, ret = 0;

        r = job_paths_init(&j.paths, job_id);
        if (r < 0)
                return log_error_errno(r, "Invalid job id '%s'.", job_id);
        r = sd_bus_open_system(&j.bus);
        if (r >= 0) {
                r = scope_stop(j.bus, j.paths.scope);
                if (r < 0)
                        ret = log_error_errno(r, "Cannot stop %s: %m", j.paths.scope);
        } else
                ret = log_error_errno(r, "Cannot connect to the system bus to stop %s: %m", j.paths.scope);
        (void) job_egress_stop(j.bus, &j.paths, NULL);
        (void) job_broker_stop(j.bus, &j.paths, NULL);
        remove_runtime_state(&j.paths);
        if (cgroup_remove_leftovers(j.paths.scope_cgroup) < 0)
                log_warning("Some cgroup of %s could not be removed.", j.paths.scope);
        r = job_teardown(&j);
        if (r < 0)
                ret = r;
        results_fd = open(j.paths.results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (results_fd >= 0)
                (void) result_stage_abort(results_fd, job_id);
        if (!result_exists(&j.paths, job_id))
                write_failed_result(&j);
        audit_event(&j.audit, POND_EVENT_CLEANED, AUDIT_NO_RC, "cleaned up%s", ret < 0 ? " (with errors)" : "");
        sd_bus_flush_close_unref(j.bus);
        j.spec = job_spec_free(j.spec);
        free(j.spec_buf);
        free(j.reason);
        if (j.sign_sk)
                secret_free(j.sign_sk);
        job_paths_done(&j.paths);
        return ret;
}
