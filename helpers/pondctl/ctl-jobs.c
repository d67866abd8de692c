/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-jobs.c: the verbs about one job: submit, status, logs, wait, cancel (list is ctl-list.c). Each job is
 * pond-job@ID.service plus STATEDIR/jobs/ID (spool) and STATEDIR/results/ID (signed result). */
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "ctl-options.h"
#include "ctl.h"
#include "result/result.h"

#define CTL_LOGS_TICK_USEC (10ULL * 1000)

#define _cleanup_bus_ _cleanup_(sd_bus_flush_close_unrefp)

int ctl_job_id_arg(int argc, char *argv[], int first, const char **ret) {
        if (first != argc - 1)
                return log_error_errno(EINVAL, "Usage: pondctl %s [OPTIONS] JOB_ID", argv[0]);
        if (!job_id_is_valid(argv[first]))
                return ctl_log_error_errno_untrusted(EINVAL, "Invalid job id '%s': must match "
                                                     "[A-Za-z0-9][A-Za-z0-9_.-]{0,63}.", argv[first]);
        *ret = argv[first];
        return 0;
}

bool ctl_job_known(const JobPaths *p, const char *job_id) {
        _cleanup_free_ char *result = NULL;

        /* A member's job is in the inbox until pond-run takes it into the spool. */
        return access(p->spool, F_OK) >= 0 || access(p->inbox, F_OK) >= 0 ||
               (asprintf(&result, "%s/%s", p->results, job_id) >= 0 && access(result, F_OK) >= 0);
}

int ctl_job_check_readable(const JobPaths *p, const char *job_id) {
        _cleanup_free_ char *result = NULL;

        if (asprintf(&result, "%s/%s", p->results, job_id) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        /* Root's 0700 directories with the submitter's ACL (docs/operations.md, "Who may use pond"). */
        if ((access(result, F_OK) >= 0 && access(result, R_OK | X_OK) < 0 && errno == EACCES) ||
            (access(p->spool, F_OK) >= 0 && access(p->spool, X_OK) < 0 && errno == EACCES))
                return ctl_fail(CTL_EXIT_ERROR, "Job %s is not yours: only root and the job's submitter may see its "
                                "result and log.", job_id);
        return 0;
}

int ctl_verb_submit(int argc, char *argv[]) {
        static const CtlOption options[] = { CTL_OPTION_CHECKOUT, {} };
        _cleanup_free_ char *checkout = NULL, *file = NULL, *spec = NULL, *err = NULL;
        _cleanup_(job_spec_freep) JobSpec *parsed = NULL;
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_bus_ sd_bus *bus = NULL;
        size_t file_len, len;
        int r;

        r = ctl_options_parse(argc, argv, options, &checkout);
        if (r < 0)
                return r == -CTL_EUSAGE ? CTL_EXIT_USAGE : CTL_EXIT_REFUSED;
        if (optind != argc - 1)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl submit SPEC|- [--checkout DIR]");
        r = ctl_spec_read(argv[optind], &file, &file_len, &err);
        if (r >= 0)
                r = ctl_spec_rewrite(file, file_len, checkout, &spec, &len, &err);
        if (r >= 0)
                r = ctl_spec_validate(spec, len, &parsed, &err);
        if (r < 0) {
                ctl_log_error_untrusted("Refused: %s: %s", streq(argv[optind], "-") ? "stdin" : argv[optind],
                                        err ?: strerror(-r));
                return CTL_EXIT_REFUSED;
        }
        if (job_paths_init(&paths, parsed->job_id) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        r = ctl_submit(&bus, &paths, parsed->job_id, spec, len);
        if (r != 0)
                return r;
        printf("%s\n", parsed->job_id);
        return 0;
}

int ctl_job_open(int argc, char *argv[], const CtlOption opts[], int oom_status, const char **ret_id,
                 JobPaths *paths) {
        const char *id;
        int r;

        r = ctl_options_parse(argc, argv, opts, NULL);
        if (r < 0 || ctl_job_id_arg(argc, argv, r, &id) < 0)
                return CTL_EXIT_USAGE;
        if (job_paths_init(paths, id) < 0)
                return ctl_fail(oom_status, "Out of memory.");
        if (!ctl_job_known(paths, id))
                return ctl_fail(CTL_EXIT_NOT_FOUND, "No job %s in %s.", id, paths->spool);
        r = ctl_job_check_readable(paths, id);
        if (r != 0)
                return r;
        *ret_id = id;
        return 0;
}

/* The status text is the supervisor's (it may quote the spec), the result is not verified here: every
 * string escaped. */
static void status_print(const char *id, const char *unit, int bus_error, const CtlUnitState *st,
                         json_object *result, json_object *usage) {
        printf("job:    %s\nunit:   %s\n", id, unit);
        if (bus_error < 0)
                printf("state:  unknown (%s)\n", strerror(-bus_error));
        else
                ctl_printf_untrusted("state:  %s%s%s%s\n", st->active_state, st->sub_state ? "/" : "",
                                     st->sub_state ?: "", st->loaded ? "" : " (not loaded)");
        if (st->status_text && *st->status_text)
                ctl_printf_untrusted("status: %s\n", st->status_text);
        ctl_usage_print(stdout, "usage:  ", usage);
        if (result) {
                const char *why;
                int code = ctl_exit_status_from_result(result, &why);
                ctl_printf_untrusted("result: %s (exit status %d%s%s; not verified, see pondctl result)\n",
                                     json_get_str(result, "status") ?: "?", code, why ? ": " : "", why ?: "");
        } else
                printf("result: none\n");
}

int ctl_verb_status(int argc, char *argv[]) {
        _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_json_ json_object *result = NULL, *o = NULL, *usage = NULL;
        _cleanup_free_ char *profile = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        CtlJobInfo info = {};
        bool json = false;
        const CtlOption options[] = { CTL_OPTION_JSON(&json), {} };
        const char *id;
        int r;

        r = ctl_job_open(argc, argv, options, CTL_EXIT_ERROR, &id, &paths);
        if (r != 0)
                return r;
        r = ctl_bus_open(&bus);
        if (r >= 0)
                r = ctl_unit_get_state(bus, paths.service, true, &st);
        if (ctl_result_peek(&paths, id, &result) < 0)
                result = NULL;
        /* While it runs, its scope's counters; once signed, the result's. */
        usage = result ? json_object_get(json_object_object_get(result, "usage")) : ctl_usage_live(&paths);
        if (!json) {
                status_print(id, paths.service, r, &st, result, usage);
                return CTL_EXIT_OK;
        }
        info = (CtlJobInfo) { .job_id = id };
        ctl_spool_info(&paths, &profile, &info.submitted_usec);
        info.profile = profile;
        if (result)
                ctl_job_info_from_result(&info, result);
        info.state = ctl_job_state(result, r >= 0 ? &st : NULL);
        if (ctl_status_to_json(&info, paths.service, r >= 0 ? &st : NULL, result, &o) < 0 ||
            json_object_object_add(o, "usage", TAKE_PTR(usage)) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        ctl_json_print(o);
        return CTL_EXIT_OK;
}

/* Follows the live log until the unit is no longer active (the supervisor has written the result, if any,
 * before its unit stops). */
static int follow_log(sd_bus *bus, const char *unit, CtlLogFollower *f) {
        uint64_t last_query = 0;
        int r;

        for (;;) {
                uint64_t now = clock_usec(CLOCK_MONOTONIC);

                r = ctl_log_follower_drain(f);
                if (r < 0)
                        return r;
                if (now - last_query >= 100 * 1000) {
                        _cleanup_(ctl_unit_state_done) CtlUnitState st = {};

                        r = ctl_unit_get_state(bus, unit, false, &st);
                        if (r < 0 && r != -EINTR)
                                return log_error_errno(r, "Cannot get the state of %s: %m", unit);
                        if (r >= 0 && !ctl_unit_state_is_running(&st))
                                return ctl_log_follower_drain(f);
                        last_query = now;
                }
                (void) nanosleep(&(struct timespec) { 0, CTL_LOGS_TICK_USEC * 1000 }, NULL);
        }
}

/* A finished job's log is the one its result signs, shown only once the result verifies with the worker's
 * key (log digests included). Returns 0 with *ret_dir (NULL: there is no result), or the exit status. */
static int signed_log_dir(const JobPaths *paths, const char *id, char **ret_dir) {
        _cleanup_free_ char *result = NULL, *err = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        int r;

        *ret_dir = NULL;
        if (asprintf(&result, "%s/%s", paths->results, id) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (access(result, F_OK) < 0)
                return 0;
        if (ctl_load_public_key(NULL, pk) < 0)
                return CTL_EXIT_UNVERIFIED;
        r = result_verify(result, pk, id, NULL, NULL, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_UNVERIFIED, "The result of %s does not verify (%s): its log is "
                                          "not shown.", id, err ?: strerror(-r));
        if (asprintf(ret_dir, "%s/%s", result, RESULT_LOG_DIR) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        return 0;
}

/* logs -f of a job without a result yet: the live log in the spool from its first chunk (it may not exist
 * yet), then, once the unit has stopped, the signed copy in the result from the same index offset: the
 * result's log files are hard links of the live ones, and the switch checks the signed index begins with
 * every byte already shown, so no line is lost or repeated. */
static int follow_live(const JobPaths *paths, const char *id, CtlLogFollower *f) {
        _cleanup_bus_ sd_bus *bus = NULL;
        _cleanup_free_ char *dir = NULL;
        int r;

        r = ctl_bus_open(&bus);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot connect to the system bus to follow %s: %m",
                                      paths->service);
        r = follow_log(bus, paths->service, f);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot read the live log of job %s in %s: %m", id,
                                      f->dir);
        r = signed_log_dir(paths, id, &dir);
        if (r != 0 || !dir)
                return r; /* no result: the unit ended without one, all it wrote was shown */
        r = ctl_log_follower_switch(f, dir);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_UNVERIFIED, r, "The signed log of %s does not continue the live "
                                      "one shown: %m", id);
        r = ctl_log_follower_drain(f);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot read the log of job %s in %s: %m", id, dir);
        return CTL_EXIT_OK;
}

int ctl_verb_logs(int argc, char *argv[]) {
        _cleanup_(ctl_log_follower_done) CtlLogFollower f = CTL_LOG_FOLLOWER_NULL;
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *dir = NULL, *live = NULL;
        bool follow = false;
        const CtlOption options[] = { { "follow", 'f', .flag = &follow }, {} };
        const char *id;
        int r;

        r = ctl_job_open(argc, argv, options, CTL_EXIT_ERROR, &id, &paths);
        if (r != 0)
                return r;
        (void) signal(SIGPIPE, SIG_IGN);
        r = signed_log_dir(&paths, id, &dir);
        if (r != 0)
                return r;
        if (!dir && follow) {
                if (asprintf(&live, "%s/log", paths.spool) < 0 ||
                    ctl_log_follower_init(&f, live, STDOUT_FILENO, STDERR_FILENO) < 0)
                        return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
                return follow_live(&paths, id, &f);
        }
        /* Finished (the signed log, all of it), or running without -f (what the live log has so far). */
        if ((!dir && ctl_job_log_dir(&paths, id, &dir) < 0) ||
            ctl_log_follower_init(&f, dir, STDOUT_FILENO, STDERR_FILENO) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        r = ctl_log_follower_drain(&f);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot read the log of job %s in %s: %m", id, dir);
        return CTL_EXIT_OK;
}

int ctl_verb_wait(int argc, char *argv[]) {
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_json_ json_object *verified = NULL, *o = NULL;
        _cleanup_free_ char *dir = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        const char *id, *pubkey = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        bool quiet = false, json = false;
        const CtlOption options[] = {
                CTL_OPTION_PUBKEY(&pubkey), CTL_OPTION_QUIET(&quiet), CTL_OPTION_JSON(&json), {}
        };
        int r, status;

        r = ctl_job_open(argc, argv, options, CTL_EXIT_FAILED, &id, &paths);
        if (r != 0)
                return r;
        if (ctl_result_dir(&paths, id, &dir) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        if (ctl_load_public_key(pubkey, pk) < 0)
                status = CTL_EXIT_UNVERIFIED;
        else {
                r = ctl_bus_open(&bus);
                /* A finished job's result can be checked without systemd; a running one cannot be watched. */
                if (r < 0 && access(dir, F_OK) < 0)
                        status = ctl_fail_errno(CTL_EXIT_FAILED, r,
                                                "Cannot connect to the system bus to wait for job %s: %m", id);
                else
                        status = ctl_wait(&(CtlWait) { .bus = bus, .job_id = id, .paths = &paths, .pk = pk,
                                                       .quiet = quiet, .ret_result = json ? &verified : NULL });
        }
        if (!json)
                return status;
        if (ctl_wait_to_json(id, dir, status, verified, &o) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        ctl_json_print(o);
        return status;
}

int ctl_verb_cancel(int argc, char *argv[]) {
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        const char *id;
        int r;

        if (ctl_job_id_arg(argc, argv, 1, &id) < 0)
                return CTL_EXIT_USAGE;
        if (job_paths_init(&paths, id) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (!ctl_job_known(&paths, id))
                return ctl_fail(CTL_EXIT_NOT_FOUND, "No job %s in %s.", id, paths.spool);
        r = ctl_bus_open(&bus);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot stop %s: no system bus: %m", paths.service);
        r = ctl_unit_call(bus, "StopUnit", paths.service, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Cannot stop %s: %s", paths.service, err ?: strerror(-r));
        return 0;
}
