/* supervise-result.c: the job's signed result: what was issued (input_sha), what ran (posture), what
 * happened (exit, signal, time-out, OOM, cancellation), what it printed and what it changed. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "collect.h"
#include "fileio.h"
#include "log.h"
#include "result.h"
#include "supervise.h"

static json_object *json_time(uint64_t usec) {
        char buf[64];
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (usec == 0 || !gmtime_r(&t, &tm))
                return NULL;
        snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned) (usec % 1000000 / 1000));
        return json_object_new_string(buf);
}

static json_object *json_str(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

static json_object *build_exit(const Job *j) {
        json_object *o = json_object_new_object();
        const char *sig = j->exit_signal > 0 ? sigabbrev_np(j->exit_signal) : NULL;
        char name[32];

        if (sig)
                snprintf(name, sizeof name, "SIG%s", sig);
        json_object_object_add(o, "rc", j->exit_status >= 0 ? json_object_new_int(j->exit_status) : NULL);
        json_object_object_add(o, "signal", j->exit_signal > 0 ? json_object_new_string(sig ? name : "?") : NULL);
        json_object_object_add(o, "timed_out", json_object_new_boolean(j->timed_out));
        json_object_object_add(o, "oom_killed", json_object_new_boolean(j->oom_killed));
        json_object_object_add(o, "cancelled", json_object_new_boolean(j->cancelled));
        return o;
}

static json_object *build_limits(const Job *j) {
        json_object *o = json_object_new_object();
        const ResolvedPolicy *r = j->resolved;

        json_object_object_add(o, "memory_bytes", json_object_new_uint64(r->memory_bytes));
        json_object_object_add(o, "cpus", json_object_new_double(r->cpus_milli / 1000.0));
        json_object_object_add(o, "pids_limit", json_object_new_uint64(r->pids_limit));
        json_object_object_add(o, "tmpfs_bytes", json_object_new_uint64(r->tmpfs_bytes));
        json_object_object_add(o, "wall_clock_s", json_object_new_uint64(j->spec->limits.wall_clock_s));
        json_object_object_add(o, "output_bytes", json_object_new_uint64(j->spec->limits.output_bytes));
        return o;
}

static json_object *build_times(const Job *j) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "accepted", json_time(j->accepted_usec));
        json_object_object_add(o, "started", json_time(j->started_usec));
        json_object_object_add(o, "ended", json_time(j->ended_usec));
        json_object_object_add(o, "wall_ms", j->ended_mono > j->started_mono && j->started_mono
                               ? json_object_new_uint64((j->ended_mono - j->started_mono) / 1000) : NULL);
        return o;
}

/* The log stays in the spool; the result gets hard links of what was kept (covered by its log hashes). */
static int link_logs(const Job *j, int staged_fd) {
        static const char *const files[] = { "stdout", "stderr", "index" };
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int src = -EBADF, dst = -EBADF;

        if (asprintf(&dir, "%s/log", j->paths.spool) < 0)
                return -ENOMEM;
        src = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (src < 0)
                return errno == ENOENT ? 0 : -errno;
        if (mkdirat(staged_fd, RESULT_LOG_DIR, 0755) < 0)
                return -errno;
        dst = openat(staged_fd, RESULT_LOG_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dst < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (linkat(src, files[i], dst, files[i], 0) < 0 && errno != ENOENT)
                        return -errno;
        return 0;
}

static int open_dir(const char *path) {
        return path ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -EBADF;
}

static int collect(Job *j, int staged_fd, json_object *result) {
        _cleanup_close_ int upper = -EBADF, lower = -EBADF, merged = -EBADF, art = -EBADF;
        _cleanup_manifest_ Manifest *m = NULL;
        _cleanup_json_ json_object *arr = NULL;
        CollectLimits limits = { j->spec->limits.artifact_bytes, j->spec->limits.artifact_files };
        char sha[SHA256_HEX_SIZE];
        int r;

        if (mkdirat(staged_fd, RESULT_ARTIFACTS_DIR, 0755) < 0)
                return -errno;
        art = openat(staged_fd, RESULT_ARTIFACTS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (art < 0)
                return -errno;
        if (j->staged) {
                upper = open_dir(j->stage.upper);
                lower = j->stage.upper ? open_dir(j->stage.lower) : -EBADF;
                merged = open_dir(j->stage.workspace);
        }
        r = collect_artifacts(upper, lower, merged, j->spec->outputs, art, &limits, &m);
        if (r < 0)
                return log_error_errno(r, "Cannot collect the job's artifacts: %m");
        r = manifest_to_json(m, &arr);
        if (r >= 0)
                r = manifest_sha(m, sha);
        if (r < 0)
                return r;
        json_object_object_add(result, "output_sha", json_object_new_string(sha));
        json_object_object_add(result, "artifacts", TAKE_PTR(arr));
        json_object_object_add(result, "artifacts_truncated", json_object_new_boolean(m->truncated));
        json_object_object_add(result, "artifacts_skipped", json_object_new_uint64(m->skipped));
        json_object_object_add(result, "artifacts_bytes", json_object_new_uint64(m->total_bytes));
        return 0;
}

/* A refused or failed job may never have hashed its input: do it now, from the checkout as it is. */
static void ensure_input_sha(Job *j) {
        if (j->input.hex[0] || j->input.fixed || !j->spec_buf)
                return;
        if (j->input.started) {
                pthread_join(j->input.thread, NULL);
                j->input.started = false;
                if (j->input.r < 0)
                        j->input.hex[0] = 0;
                return;
        }
        _cleanup_close_ int fd = j->spec && j->spec->checkout
                ? open(j->spec->checkout, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -EBADF;
        if (input_sha_compute(j->spec_buf, j->spec_len, fd, j->input.hex) < 0)
                j->input.hex[0] = 0;
}

static int build_result(Job *j, const char *status, int staged_fd, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *log_stats = NULL;
        bool ran = j->started_usec != 0;
        int r;

        if (!o)
                return -ENOMEM;
        ensure_input_sha(j);
        json_object_object_add(o, "version", json_object_new_int(RESULT_VERSION));
        json_object_object_add(o, "job_id", json_object_new_string(j->id));
        json_object_object_add(o, "tenant", json_str(j->spec ? j->spec->tenant : NULL));
        json_object_object_add(o, "status", json_object_new_string(status));
        json_object_object_add(o, "reason", json_str(j->reason));
        json_object_object_add(o, "input_sha", j->input.hex[0] ? json_object_new_string(j->input.hex) : NULL);
        json_object_object_add(o, "profile", json_str(j->resolved ? j->resolved->profile : NULL));
        json_object_object_add(o, "backend", json_str(j->resolved ? j->resolved->backend : NULL));
        json_object_object_add(o, "tier", json_str(j->resolved ? j->resolved->tier : NULL));
        json_object_object_add(o, "image", json_str(j->resolved ? j->resolved->image : NULL));
        if (j->resolved && j->spec)
                json_object_object_add(o, "limits", build_limits(j));
        json_object_object_add(o, "exit", build_exit(j));
        json_object_object_add(o, "times", build_times(j));
        if (j->log_open && output_log_stats(&j->log, &log_stats) >= 0)
                json_object_object_add(o, "log", log_stats);
        json_object_object_add(o, "network", json_str(j->resolved ? net_posture_to_string(j->resolved->net) : NULL));
        if (j->egress_stats)
                json_object_object_add(o, "egress", json_object_get(j->egress_stats));
        if (j->broker_stats)
                json_object_object_add(o, "broker", json_object_get(j->broker_stats));
        if (j->spec && ran) {
                r = collect(j, staged_fd, o);
                if (r < 0)
                        return r;
                r = link_logs(j, staged_fd);
                if (r < 0)
                        return log_error_errno(r, "Cannot link the job's log into its result: %m");
        } else {
                /* Nothing ran: the empty manifest, so output_sha is still well defined. */
                _cleanup_manifest_ Manifest *m = calloc(1, sizeof(Manifest));
                json_object *arr = NULL;
                char sha[SHA256_HEX_SIZE];
                if (!m || manifest_to_json(m, &arr) < 0 || manifest_sha(m, sha) < 0)
                        return -ENOMEM;
                json_object_object_add(o, "output_sha", json_object_new_string(sha));
                json_object_object_add(o, "artifacts", arr);
        }
        *ret = TAKE_PTR(o);
        return 0;
}

int job_write_result(Job *j, const char *status) {
        _cleanup_close_ int results_fd = -EBADF, staged_fd = -EBADF;
        _cleanup_json_ json_object *result = NULL;
        int r;

        r = mkdir_p(j->paths.results, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", j->paths.results);
        results_fd = open(j->paths.results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (results_fd < 0)
                return log_error_errno(errno, "Cannot open %s: %m", j->paths.results);
        r = result_stage_open(results_fd, j->id, &staged_fd);
        if (r < 0)
                return log_error_errno(r, "Cannot stage the result of %s: %m", j->id);
        r = build_result(j, status, staged_fd, &result);
        if (r >= 0)
                r = result_write_signed(results_fd, j->id, result, j->sign_sk, staged_fd);
        if (r < 0) {
                (void) result_stage_abort(results_fd, j->id);
                return log_error_errno(r, "Cannot write the result of %s: %m", j->id);
        }
        audit_event(&j->audit, POND_EVENT_SIGNED, AUDIT_NO_RC, "signed result: status %s, output_sha %s", status,
                    json_object_get_string(json_object_object_get(result, "output_sha")));
        return 0;
}
