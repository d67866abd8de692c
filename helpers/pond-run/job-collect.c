/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-collect.c: phase 8 of the design: everything the result reports, gathered once the
 * payload is over: its exit (killing and reaping an init a failure left running), OOM kills, the payload
 * and the sidecars stopped (so nothing changes what is collected, and the sidecars' totals are final),
 * input_sha, and the artifacts, the log and the exec transcript, put into the staged result directory. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "basic/log.h"
#include "job.h"
#include "result/collect.h"
#include "result/result.h"

/* A failure before or during the loop may leave the container's init running: kill, then reap. */
static void reap(Job *j) {
        JobRuntime *rt = &j->runtime;
        JobOutcome *o = &j->outcome;

        if (rt->init_pid > 0 && o->exit_status < 0 && o->exit_signal == 0) {
                siginfo_t si = {};
                if (j->bus)
                        (void) scope_kill(j->bus, j->paths.scope);
                (void) kill(rt->init_pid, SIGKILL);
                /* Its exit is the payload's only if the payload was let go: before that the init is the
                 * runtime's, and its status would be an invented rc. */
                if (waitid(P_PID, (id_t) rt->init_pid, &si, WEXITED) >= 0 && o->started_usec != 0) {
                        o->exit_signal = si.si_code == CLD_EXITED ? 0 : si.si_status;
                        o->exit_status = si.si_code == CLD_EXITED ? si.si_status : -1;
                }
        }
        sigkill_wait(&rt->create);
}

/* Before the scope is stopped: its cgroups' counters go with it (OOM kills, usage). The pin that kept them
 * (v1) goes now, so that the runtime can remove the payload's cgroup. */
static void collect_oom(Job *j) {
        job_read_oom_kills(j);
        job_usage_read(j);
        sigkill_wait(&j->runtime.oom_pin);
}

static void record_outcome(Job *j, int r) {
        JobOutcome *o = &j->outcome;
        int rc;

        if (o->ended_usec == 0) {
                o->ended_usec = clock_usec(CLOCK_REALTIME);
                o->ended_mono = clock_usec(CLOCK_MONOTONIC);
        }
        /* A step that failed because the job's service is being stopped (its scope goes with it, BindsTo=)
         * was cancelled, not a failure of pond's. */
        if (r < 0 && !o->cancelled && job_stop_requested(j)) {
                /* The step's own reason (a sidecar that did not start, a scope that went) is the stop's
                 * consequence, not its cause. */
                o->cancelled = true;
                free(o->reason);
                o->reason = NULL;
                job_fail(j, 0, "cancelled before the payload ran to its end (the job's service was stopped)");
        } else if (r < 0 && !o->refused) {
                o->failed = true;
                job_fail(j, r, "pond could not run the job (see the journal of its unit)");
        }
        /* The init's status was the runtime's end, not the payload's: none is made up. */
        if (o->runtime_failed) {
                o->exit_status = -1;
                o->exit_signal = 0;
        }
        rc = o->exit_status >= 0 ? o->exit_status : o->exit_signal > 0 ? 128 + o->exit_signal : AUDIT_NO_RC;
        audit_event(&j->audit, r < 0 ? POND_EVENT_FAILED : POND_EVENT_EXITED, rc,
                    "%s: rc %d, signal %d%s%s%s", job_status(j), o->exit_status, o->exit_signal,
                    o->timed_out ? ", timed out" : "", o->oom_killed ? ", OOM-killed" : "",
                    o->cancelled ? ", cancelled" : "");
        sd_notifyf(false, "STATUS=signing (%s)", job_status(j));
}

static int open_dir(const char *path) {
        return path ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -EBADF;
}

static int collect_manifest(Job *j, int staged_fd, json_object **ret) {
        _cleanup_close_ int upper = -EBADF, lower = -EBADF, merged = -EBADF, art = -EBADF;
        const JobLimits *lim = &j->input.spec->limits;
        CollectLimits limits = { lim->artifact_bytes, lim->artifact_files };
        _cleanup_manifest_ Manifest *m = NULL;
        _cleanup_json_ json_object *o = json_object_new_object(), *arr = NULL;
        _cleanup_json_ json_object *truncated = NULL, *skipped = NULL, *bytes = NULL;
        const Stage *st = &j->staging.stage;
        char sha[SHA256_HEX_SIZE];
        int r;

        if (!o)
                return -ENOMEM;
        if (mkdirat(staged_fd, RESULT_ARTIFACTS_DIR, 0755) < 0)
                return -errno;
        art = openat(staged_fd, RESULT_ARTIFACTS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* Inside a result only root and its submitter can open: 0755 whatever the umask. */
        if (art >= 0 && fchmod(art, 0755) < 0)
                return -errno;
        if (art < 0)
                return -errno;
        if (j->staging.staged) {
                upper = open_dir(st->upper);
                lower = st->upper ? open_dir(st->lower) : -EBADF;
                merged = open_dir(st->workspace);
        }
        r = collect_artifacts(upper, lower, merged, j->input.spec->outputs, art, &limits, &m);
        if (r < 0)
                return log_error_errno(r, "Cannot collect the job's artifacts: %m");
        /* Hashed and, when the result is written, serialized one entry at a time: no tree of the whole
         * manifest (up to JOB_SPEC_MAX_ARTIFACT_FILES entries) in the supervisor's bounded memory. */
        r = manifest_sha(m, sha);
        if (r < 0)
                return r;
        truncated = json_object_new_boolean(m->truncated);
        skipped = json_object_new_uint64(m->skipped);
        bytes = json_object_new_uint64(m->total_bytes);
        r = manifest_to_json_streamed(&m, &arr);
        if (r < 0)
                return r;
        json_object_object_add(o, "output_sha", json_object_new_string(sha));
        json_object_object_add(o, "artifacts", TAKE_PTR(arr));
        json_object_object_add(o, "artifacts_truncated", TAKE_PTR(truncated));
        json_object_object_add(o, "artifacts_skipped", TAKE_PTR(skipped));
        json_object_object_add(o, "artifacts_bytes", TAKE_PTR(bytes));
        *ret = TAKE_PTR(o);
        return 0;
}

/* The log stays in the spool; the result gets hard links of what was kept (covered by its log hashes). */
static int link_logs(const Job *j, int staged_fd) {
        static const char *const files[] = { "stdout", "stderr", "index" };
        _cleanup_close_ int src = -EBADF, dst = -EBADF;

        src = open(j->paths.log, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (src < 0)
                return errno == ENOENT ? 0 : -errno;
        if (mkdirat(staged_fd, RESULT_LOG_DIR, 0755) < 0)
                return -errno;
        dst = openat(staged_fd, RESULT_LOG_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dst < 0 || fchmod(dst, 0755) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (linkat(src, files[i], dst, files[i], 0) < 0 && errno != ENOENT)
                        return -errno;
        return 0;
}

/* What the job left, if it ran: the artifacts, the log and the exec transcript into the staged result
 * directory. */
static int collect_files(Job *j) {
        int r;

        if (j->outcome.started_usec == 0)
                return 0;
        r = job_result_stage(j);
        if (r < 0)
                return r;
        r = collect_manifest(j, j->result.staged_fd, &j->result.artifacts);
        if (r < 0)
                return r;
        r = link_logs(j, j->result.staged_fd);
        if (r < 0)
                return log_error_errno(r, "Cannot link the job's log into its result: %m");
        return job_transcript_collect(j, j->result.staged_fd);
}

int job_collect(Job *j, int r) {
        const char *hex;
        int k;

        reap(j);
        collect_oom(j);
        (void) job_teardown_processes(j);
        k = job_input_hash_result(j, &hex);
        if (k < 0) {
                log_error_errno(k, "Cannot hash the job's input: %m");
                r = r < 0 ? r : k;
        }
        record_outcome(j, r);
        return collect_files(j);
}
