/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-jobs.c: the verbs about jobs already in the spool: submit, status, logs, wait, cancel, list. Each job
 * is pond-job@ID.service plus STATEDIR/jobs/ID (spool) and STATEDIR/results/ID (signed result). */
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "fileio.h"
#include "jobid.h"
#include "json-strict.h"
#include "log.h"
#include "result.h"

#define CTL_LOGS_TICK_USEC (10ULL * 1000)

#define _cleanup_bus_ _cleanup_(sd_bus_flush_close_unrefp)

int ctl_job_id_arg(int argc, char *argv[], int first, const char **ret) {
        if (first != argc - 1)
                return log_error_errno(EINVAL, "Usage: pondctl %s [OPTIONS] JOB_ID", argv[0]);
        if (!job_id_is_valid(argv[first]))
                return log_error_errno(EINVAL, "Invalid job id '%s': must match "
                                       "[A-Za-z0-9][A-Za-z0-9_.-]{0,63}.", argv[first]);
        *ret = argv[first];
        return 0;
}

int ctl_result_peek(const JobPaths *p, const char *job_id, json_object **ret) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t len;
        int r;

        if (asprintf(&path, "%s/%s/%s", p->results, job_id, RESULT_JSON_FILE) < 0)
                return -ENOMEM;
        r = read_full_file(path, RESULT_JSON_MAX, &buf, &len);
        if (r < 0)
                return r;
        r = json_parse_strict(buf, len, RESULT_JSON_MAX, JSON_STRICT_MAX_DEPTH, ret, NULL);
        return r < 0 ? r : *ret ? 0 : -EBADMSG;
}

static bool job_known(const JobPaths *p, const char *job_id) {
        _cleanup_free_ char *result = NULL;

        return access(p->spool, F_OK) >= 0 ||
               (asprintf(&result, "%s/%s", p->results, job_id) >= 0 && access(result, F_OK) >= 0);
}

int ctl_verb_submit(int argc, char *argv[]) {
        static const struct option options[] = { { "checkout", required_argument, NULL, 'c' }, {} };
        _cleanup_free_ char *checkout = NULL, *file = NULL, *spec = NULL, *err = NULL;
        _cleanup_(job_spec_freep) JobSpec *parsed = NULL;
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_bus_ sd_bus *bus = NULL;
        size_t file_len, len;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                if (c != 'c')
                        return CTL_EXIT_REFUSED;
                r = ctl_checkout_resolve(optarg, &checkout);
                if (r < 0)
                        return ctl_fail_errno(CTL_EXIT_REFUSED, r, "--checkout: cannot use '%s': %m",
                                              optarg);
        }
        if (optind != argc - 1)
                return ctl_fail(CTL_EXIT_REFUSED, "Usage: pondctl submit SPEC [--checkout DIR]");
        r = ctl_spec_read(argv[optind], &file, &file_len, &err);
        if (r >= 0)
                r = ctl_spec_rewrite(file, file_len, checkout, &spec, &len, &err);
        if (r >= 0)
                r = ctl_spec_validate(spec, len, &parsed, &err);
        if (r < 0) {
                log_error("Refused: %s: %s", argv[optind], err ?: strerror(-r));
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

int ctl_verb_status(int argc, char *argv[]) {
        _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_json_ json_object *result = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        const char *id;
        int r;

        if (ctl_job_id_arg(argc, argv, 1, &id) < 0)
                return CTL_EXIT_ERROR;
        if (job_paths_init(&paths, id) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        printf("job:    %s\nunit:   %s\n", id, paths.service);
        r = ctl_bus_open(&bus);
        if (r >= 0)
                r = ctl_unit_get_state(bus, paths.service, true, &st);
        if (r < 0)
                printf("state:  unknown (%s)\n", strerror(-r));
        else
                printf("state:  %s%s%s%s\n", st.active_state, st.sub_state ? "/" : "", st.sub_state ?: "",
                       st.loaded ? "" : " (not loaded)");
        if (st.status_text && *st.status_text)
                printf("status: %s\n", st.status_text);
        if (ctl_result_peek(&paths, id, &result) >= 0) {
                const char *why;
                json_object *s = json_object_object_get(result, "status");
                int code = ctl_exit_status_from_result(result, &why);
                printf("result: %s (exit status %d%s%s; not verified, see pondctl result)\n",
                       json_object_get_string(s) ?: "?", code, why ? ": " : "", why ?: "");
        } else
                printf("result: none\n");
        if (!job_known(&paths, id))
                return ctl_fail(CTL_EXIT_ERROR, "No job %s in %s.", id, paths.spool);
        return 0;
}

static int follow_log(sd_bus *bus, const char *unit, CtlLogFollower *f) {
        uint64_t last_query = 0;
        int r;

        for (;;) {
                uint64_t now = clock_usec(CLOCK_MONOTONIC);

                (void) ctl_log_follower_drain(f);
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
 * key (log digests included): never the spool's copy, which nothing vouches for. */
static int finished_log_dir(const JobPaths *paths, const char *id, CtlLogFollower *f) {
        _cleanup_free_ char *result = NULL, *err = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        int r;

        if (asprintf(&result, "%s/%s", paths->results, id) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (access(result, F_OK) < 0)
                return 0; /* still running: the spool's log, as it is written */
        if (ctl_load_public_key(NULL, pk) < 0)
                return CTL_EXIT_ERROR;
        r = result_verify(result, pk, id, NULL, NULL, &err);
        if (r < 0)
                return ctl_fail(CTL_EXIT_UNVERIFIED, "The result of %s does not verify (%s): its log is not shown.",
                                id, err ?: strerror(-r));
        free(f->dir);
        if (asprintf(&f->dir, "%s/%s", result, RESULT_LOG_DIR) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        return 0;
}

int ctl_verb_logs(int argc, char *argv[]) {
        static const struct option options[] = { { "follow", no_argument, NULL, 'f' }, {} };
        _cleanup_(ctl_log_follower_done) CtlLogFollower f = CTL_LOG_FOLLOWER_NULL;
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *dir = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        bool follow = false;
        const char *id;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "f", options, NULL)) >= 0) {
                if (c != 'f')
                        return CTL_EXIT_ERROR;
                follow = true;
        }
        if (ctl_job_id_arg(argc, argv, optind, &id) < 0)
                return CTL_EXIT_ERROR;
        if (job_paths_init(&paths, id) < 0 ||
            ctl_job_log_dir(&paths, id, &dir) < 0 ||
            ctl_log_follower_init(&f, dir, STDOUT_FILENO, STDERR_FILENO) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (!job_known(&paths, id))
                return ctl_fail(CTL_EXIT_ERROR, "No job %s in %s.", id, paths.spool);
        r = finished_log_dir(&paths, id, &f);
        if (r != 0)
                return r;
        (void) signal(SIGPIPE, SIG_IGN);
        if (!follow)
                r = ctl_log_follower_drain(&f);
        else {
                r = ctl_bus_open(&bus);
                if (r < 0)
                        return ctl_fail_errno(CTL_EXIT_ERROR, r,
                                              "Cannot connect to the system bus to follow %s: %m", paths.service);
                r = follow_log(bus, paths.service, &f);
        }
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot read the log of job %s in %s: %m", id, dir);
        return 0;
}

int ctl_verb_wait(int argc, char *argv[]) {
        static const struct option options[] = {
                { "pubkey", required_argument, NULL, 'k' },
                { "quiet", no_argument, NULL, 'q' },
                {}
        };
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *dir = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        const char *id, *pubkey = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        bool quiet = false;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "q", options, NULL)) >= 0)
                switch (c) {
                case 'k': pubkey = optarg; break;
                case 'q': quiet = true; break;
                default: return CTL_EXIT_REFUSED;
                }
        if (ctl_job_id_arg(argc, argv, optind, &id) < 0)
                return CTL_EXIT_REFUSED;
        if (ctl_load_public_key(pubkey, pk) < 0)
                return CTL_EXIT_UNVERIFIED;
        if (job_paths_init(&paths, id) < 0 || ctl_result_dir(&paths, id, &dir) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        r = ctl_bus_open(&bus);
        /* A finished job's result can be checked without systemd; a running one cannot be watched. */
        if (r < 0 && access(dir, F_OK) < 0)
                return ctl_fail_errno(CTL_EXIT_FAILED, r,
                                      "Cannot connect to the system bus to wait for job %s: %m", id);
        return ctl_wait(&(CtlWait) { .bus = bus, .job_id = id, .paths = &paths, .pk = pk, .quiet = quiet });
}

int ctl_verb_cancel(int argc, char *argv[]) {
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        const char *id;
        int r;

        if (ctl_job_id_arg(argc, argv, 1, &id) < 0)
                return CTL_EXIT_ERROR;
        if (job_paths_init(&paths, id) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (!job_known(&paths, id))
                return ctl_fail(CTL_EXIT_ERROR, "No job %s in %s.", id, paths.spool);
        r = ctl_bus_open(&bus);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot stop %s: no system bus: %m", paths.service);
        r = ctl_unit_call(bus, "StopUnit", paths.service, &err);
        if (r < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Cannot stop %s: %s", paths.service, err ?: strerror(-r));
        return 0;
}

/* The profile a queued job asked for, from its spool entry. */
static char *spool_profile(const JobPaths *p) {
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t len;

        if (asprintf(&path, "%s/job.json", p->spool) < 0 ||
            read_full_file(path, CTL_SPEC_MAX, &buf, &len) < 0 ||
            job_spec_parse(buf, len, &s, NULL) < 0 || !s->sandbox.profile)
                return NULL;
        return strdup(s->sandbox.profile);
}

static void list_one(sd_bus *bus, const char *id) {
        _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_json_ json_object *result = NULL;
        _cleanup_free_ char *profile = NULL;
        const char *state = "unknown", *prof = NULL;
        char rc[32] = "-";

        if (job_paths_init(&paths, id) < 0)
                return;
        if (ctl_result_peek(&paths, id, &result) >= 0) {
                json_object *ex = json_object_object_get(result, "exit");
                json_object *code = json_object_object_get(ex, "rc");
                json_object *sig = json_object_object_get(ex, "signal");

                state = json_object_get_string(json_object_object_get(result, "status")) ?: "failed";
                prof = json_object_get_string(json_object_object_get(result, "profile"));
                if (json_object_is_type(sig, json_type_string))
                        snprintf(rc, sizeof rc, "%s", json_object_get_string(sig));
                else if (json_object_is_type(code, json_type_int))
                        snprintf(rc, sizeof rc, "%d", json_object_get_int(code));
        } else if (bus && ctl_unit_get_state(bus, paths.service, false, &st) >= 0)
                /* Queued but not started: pending. Stopped without a result: it will never have one. */
                state = st.job_pending && streq(st.active_state, "inactive") ? "pending" :
                        ctl_unit_state_is_running(&st) ? "running" : "failed";
        if (!prof)
                prof = profile = spool_profile(&paths);
        printf("%s %s %s %s\n", id, state, prof ?: "-", rc);
}

int ctl_verb_list(int argc, char *argv[]) {
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *jobs = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        struct dirent **names = NULL;
        const char *slash;
        int n;

        if (argc != 1)
                return ctl_fail(CTL_EXIT_ERROR, "Usage: pondctl list");
        /* The spool's parent, derived like every other job path (a dummy id only names a child of it). */
        if (job_paths_init(&paths, "x") < 0 || !(slash = strrchr(paths.spool, '/')) ||
            !(jobs = strndup(paths.spool, (size_t) (slash - paths.spool))))
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        n = scandir(jobs, &names, NULL, alphasort);
        if (n < 0 && errno == ENOENT)
                return 0; /* nothing was ever submitted */
        if (n < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot list %s: %m", jobs);
        if (ctl_bus_open(&bus) < 0)
                bus = NULL; /* still list what the results say; the rest shows as unknown */
        for (int i = 0; i < n; i++) {
                if (job_id_is_valid(names[i]->d_name) &&
                    (names[i]->d_type == DT_DIR || names[i]->d_type == DT_UNKNOWN))
                        list_one(bus, names[i]->d_name);
                free(names[i]);
        }
        free(names);
        return 0;
}
