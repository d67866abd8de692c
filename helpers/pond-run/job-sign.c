/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-sign.c: phase 9 of the design: the signed result: what was issued (input_sha), what ran
 * (posture), what happened (exit, signal, time-out, OOM, cancellation), what it printed and what it
 * changed (job_collect() put those into the staged directory). Building the JSON only reads the Job;
 * the result appears in one step, signed, or not at all. Also for refusals and for `pond-run --cleanup`. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-id128.h>
#include <time.h>

#include "basic/dirs.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "job.h"
#include "record/task-sha.h"
#include "result/collect.h"
#include "result/result.h"
#include "secrets/keys.h"

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

static json_object *build_exit(const JobOutcome *out) {
        json_object *o = json_object_new_object();
        const char *sig = out->exit_signal > 0 ? sigabbrev_np(out->exit_signal) : NULL;
        char name[32];

        if (sig)
                snprintf(name, sizeof name, "SIG%s", sig);
        json_object_object_add(o, "rc", out->exit_status >= 0 ? json_object_new_int(out->exit_status) : NULL);
        json_object_object_add(o, "signal", out->exit_signal > 0 ? json_object_new_string(sig ? name : "?") : NULL);
        json_object_object_add(o, "timed_out", json_object_new_boolean(out->timed_out));
        json_object_object_add(o, "oom_killed", json_object_new_boolean(out->oom_killed));
        json_object_object_add(o, "cancelled", json_object_new_boolean(out->cancelled));
        return o;
}

static json_object *build_limits(const JobInput *in) {
        json_object *o = json_object_new_object();
        const ResolvedPolicy *r = in->resolved;

        json_object_object_add(o, "memory_bytes", json_object_new_uint64(r->memory_bytes));
        json_object_object_add(o, "cpus", json_object_new_double(r->cpus_milli / 1000.0));
        json_object_object_add(o, "pids_limit", json_object_new_uint64(r->pids_limit));
        json_object_object_add(o, "tmpfs_bytes", json_object_new_uint64(r->tmpfs_bytes));
        json_object_object_add(o, "wall_clock_s", json_object_new_uint64(in->spec->limits.wall_clock_s));
        json_object_object_add(o, "output_bytes", json_object_new_uint64(in->spec->limits.output_bytes));
        return o;
}

static json_object *build_times(const JobOutcome *out) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "accepted", json_time(out->accepted_usec));
        json_object_object_add(o, "started", json_time(out->started_usec));
        json_object_object_add(o, "ended", json_time(out->ended_usec));
        json_object_object_add(o, "wall_ms", out->ended_mono > out->started_mono && out->started_mono
                               ? json_object_new_uint64((out->ended_mono - out->started_mono) / 1000) : NULL);
        return o;
}

/* Nothing ran: the empty manifest, so output_sha is still well defined. */
static int empty_artifacts(json_object **ret) {
        _cleanup_manifest_ Manifest *m = calloc(1, sizeof(Manifest));
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *arr = NULL;
        char sha[SHA256_HEX_SIZE];

        if (!m || !o || manifest_to_json(m, &arr) < 0 || manifest_sha(m, sha) < 0)
                return -ENOMEM;
        json_object_object_add(o, "output_sha", json_object_new_string(sha));
        json_object_object_add(o, "artifacts", arr);
        *ret = TAKE_PTR(o);
        return 0;
}

/* Which sidecar died while the payload ran, when, and in which state systemd saw its unit; null if none. */
static void add_sidecar_died(const Job *j, json_object *o) {
        PondSidecar s = job_sidecar_died(j);
        json_object *d;

        if (s < 0) {
                json_object_object_add(o, "sidecar_died", NULL);
                return;
        }
        d = json_object_new_object();
        json_object_object_add(d, "sidecar", json_object_new_string(job_sidecar_name(s)));
        json_object_object_add(d, "at", json_time(j->sidecars[s].died_usec));
        json_object_object_add(d, "unit_state", json_str(j->sidecars[s].died_state));
        json_object_object_add(o, "sidecar_died", d);
}

static void add_posture(Job *j, json_object *o) {
        const JobInput *in = &j->input;
        const ResolvedPolicy *res = in->resolved;
        json_object *log_stats = NULL, *execs;

        json_object_object_add(o, "profile", json_str(res ? res->profile : NULL));
        json_object_object_add(o, "backend", json_str(res ? res->backend : NULL));
        json_object_object_add(o, "tier", json_str(res ? res->tier : NULL));
        json_object_object_add(o, "image", json_str(res ? res->image : NULL));
        if (j->staging.image.digest) /* an imported image, pinned by its manifest digest (result-format.md) */
                json_object_object_add(o, "image_digest", json_object_new_string(j->staging.image.digest));
        if (res && in->spec)
                json_object_object_add(o, "limits", build_limits(in));
        json_object_object_add(o, "exit", build_exit(&j->outcome));
        json_object_object_add(o, "times", build_times(&j->outcome));
        /* Signed only with the files it covers: job_collect() links the log into the result once it ran. */
        if (j->runtime.log_open && j->outcome.started_usec != 0 && output_log_stats(&j->runtime.log, &log_stats) >= 0)
                json_object_object_add(o, "log", log_stats);
        /* Only with its files, and only when an exec was recorded: a result without execs has no execs/. */
        execs = job_transcript_json(j);
        if (execs)
                json_object_object_add(o, TRANSCRIPT_DIR, execs);
        json_object_object_add(o, "resources", job_resview_json(j));
        json_object_object_add(o, "usage", job_usage_json(j));
        if (res && in->landlock.decided && res->landlock.mode != LANDLOCK_OFF)
                json_object_object_add(o, "landlock", landlock_decision_to_json(&in->landlock, &res->landlock));
        json_object_object_add(o, "network", json_str(res ? net_posture_to_string(res->net) : NULL));
        if (j->sidecars[POND_SIDECAR_EGRESS].stats)
                json_object_object_add(o, "egress", json_object_get(j->sidecars[POND_SIDECAR_EGRESS].stats));
        if (j->sidecars[POND_SIDECAR_BROKER].stats)
                json_object_object_add(o, "broker", json_object_get(j->sidecars[POND_SIDECAR_BROKER].stats));
        add_sidecar_died(j, o);
}

/* Who signs: the key's id (its fingerprint, as `pondctl keygen` prints it), so that a verifier with several
 * pinned keys knows which one to use, and the worker's id (the machine id, made specific to pond: stable for
 * the machine, not the machine id itself). Covered by the signature like everything else. */
#define POND_WORKER_APP_ID SD_ID128_MAKE(31, 87, 2f, 02, 0f, 79, 4b, cb, ad, 98, 2c, 3e, 20, d4, 77, cc)

static json_object *build_signer(const Job *j) {
        json_object *o = json_object_new_object();
        char fp[KEY_FINGERPRINT_SIZE];
        sd_id128_t id;

        key_fingerprint(j->sign_sk + KEY_SIGN_SECRET_SIZE - KEY_SIGN_PUBLIC_SIZE, KEY_SIGN_PUBLIC_SIZE, fp);
        json_object_object_add(o, "key_id", json_object_new_string(fp));
        json_object_object_add(o, "worker_id", sd_id128_get_machine_app_specific(POND_WORKER_APP_ID, &id) >= 0
                               ? json_object_new_string(SD_ID128_TO_STRING(id)) : NULL);
        return o;
}

/* task_sha (hash.h): only with the checkout's tree digest from input_sha's computation (a bundle's input_sha
 * is the bundle's own hash: no task_sha then), and only for a spec that parsed (a refusal may have none). */
static json_object *task_sha(const Job *j, const char *input_sha) {
        char hex[SHA256_HEX_SIZE];

        if (!input_sha || !j->input_hash.have_tree || !j->input.spec_buf ||
            task_sha_compute(j->input.spec_buf, j->input.spec_len, j->input_hash.tree, hex) < 0)
                return NULL;
        return json_object_new_string(hex);
}

/* Who submitted it, as the worker established it (the spool's or the inbox file's owner): null if unknown. */
static json_object *build_submitter(const Job *j) {
        json_object *o;

        if (!j->input.have_submitter)
                return NULL;
        o = json_object_new_object();
        json_object_object_add(o, "uid", json_object_new_int64(j->input.submitter.uid));
        json_object_object_add(o, "user", json_object_new_string(j->input.submitter.user));
        return o;
}

static int build_result(Job *j, const char *input_sha, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "version", json_object_new_int(RESULT_VERSION));
        json_object_object_add(o, "job_id", json_object_new_string(j->paths.id));
        json_object_object_add(o, "tenant", json_str(j->input.spec ? j->input.spec->tenant : NULL));
        json_object_object_add(o, "submitter", build_submitter(j));
        json_object_object_add(o, "status", json_object_new_string(job_status(j)));
        json_object_object_add(o, "reason", json_str(j->outcome.reason));
        json_object_object_add(o, "input_sha", json_str(input_sha));
        json_object_object_add(o, "input_changed", json_object_new_boolean(j->input_hash.changed));
        json_object_object_add(o, "task_sha", task_sha(j, input_sha));
        json_object_object_add(o, "signer", build_signer(j));
        add_posture(j, o);
        json_object_object_foreach(j->result.artifacts, key, value)
                json_object_object_add(o, key, json_object_get(value));
        *ret = TAKE_PTR(o);
        return 0;
}

/* The staged result directory (results/.ID.tmp), opened once: job_collect() puts files into it. */
int job_result_stage(Job *j) {
        JobResult *res = &j->result;
        int r;

        if (res->staged_fd >= 0)
                return 0;
        r = mkdir_p(j->paths.results, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", j->paths.results);
        res->results_fd = open(j->paths.results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (res->results_fd < 0)
                return log_error_errno(errno, "Cannot open %s: %m", j->paths.results);
        r = result_stage_open(res->results_fd, j->paths.id, &res->staged_fd);
        if (r < 0)
                return log_error_errno(r, "Cannot stage the result of %s: %m", j->paths.id);
        /* The result is root's (0700), readable by its submitter alone besides (docs/operations.md). */
        r = job_grant_submitter(j, res->staged_fd, "the result");
        if (r < 0)
                return r;
        res->job_id = j->paths.id;
        return 0;
}

int job_sign(Job *j) {
        _cleanup_json_ json_object *result = NULL;
        const char *input_sha;
        int r;

        /* A member's checkout is read only once staging found it theirs: a refused job's input_sha covers
         * its spec alone, not a tree its submitter named but may not own (job-input-hash.c). */
        (void) job_input_hash_result(j, &input_sha);
        r = job_result_stage(j);
        if (r >= 0 && !j->result.artifacts)
                r = empty_artifacts(&j->result.artifacts);
        if (r >= 0)
                r = build_result(j, input_sha, &result);
        if (r >= 0)
                r = result_write_signed(j->result.results_fd, j->paths.id, result, j->sign_sk, j->result.staged_fd);
        if (r < 0)
                return log_error_errno(r, "Cannot write the result of %s: %m", j->paths.id);
        j->result.staged_fd = safe_close(j->result.staged_fd); /* renamed into place: nothing to abort */
        audit_event(&j->audit, POND_EVENT_SIGNED, AUDIT_NO_RC, "signed result: status %s, output_sha %s",
                    job_status(j), json_object_get_string(json_object_object_get(result, "output_sha")));
        job_metrics_record(j);
        return 0;
}

/* A stage that was never signed is removed: a result appears whole or not at all. */
void job_result_done(JobResult *res) {
        if (res->staged_fd >= 0 && res->results_fd >= 0)
                (void) result_stage_abort(res->results_fd, res->job_id);
        safe_close(res->staged_fd);
        safe_close(res->results_fd);
        json_object_put(res->artifacts);
        *res = (JobResult) JOB_RESULT_NULL;
}
