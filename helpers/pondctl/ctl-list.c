/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-list.c: `pondctl list [--json] [--state S] [--since T] [--profile P]`: one entry per spool entry,
 * its state from the (unverified) result or else from its unit, and the filters a script selects with.
 * The state names and the JSON shape are shared with `pondctl status --json`. */
#include <dirent.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "ctl-options.h"
#include "ctl.h"
#include "result/result.h"

#define _cleanup_bus_ _cleanup_(sd_bus_flush_close_unrefp)
#define USEC_PER_SEC 1000000ULL

/* The job's result.json as it lies (unverified: its state for list and status, never a verdict). */
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

static const char *const job_states[] = {
        "pending", "running", "completed", "refused", "failed", "cancelled", "unknown", NULL
};

static bool strv_contains(const char *const *l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

const char *ctl_job_state(json_object *result, const CtlUnitState *st) {
        const char *s;

        if (result) {
                s = json_get_str(result, "status");
                return s && strv_contains(job_states, s) ? s : "failed";
        }
        if (!st)
                return "unknown";
        /* Queued but not started: pending. Stopped without a result: it will never have one. */
        if (st->job_pending && streq(st->active_state ?: "inactive", "inactive"))
                return "pending";
        return ctl_unit_state_is_running(st) ? "running" : "failed";
}

void ctl_job_info_from_result(CtlJobInfo *i, json_object *result) {
        json_object *ex = json_get(result, "exit"), *rc = json_get(ex, "rc");

        i->profile = json_get_str(result, "profile") ?: i->profile;
        i->signal = json_get_str(ex, "signal");
        i->has_rc = !i->signal && json_object_is_type(rc, json_type_int);
        i->rc = i->has_rc ? json_object_get_int(rc) : 0;
}

static json_object *string_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

int ctl_job_info_to_json(const CtlJobInfo *i, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add(o, "job_id", json_object_new_string(i->job_id));
        if (r >= 0)
                r = json_add(o, "state", json_object_new_string(i->state));
        /* null members are added as such: a script can rely on every key being there. */
        if (r >= 0)
                r = json_object_object_add(o, "profile", string_or_null(i->profile));
        if (r >= 0)
                r = json_object_object_add(o, "rc", i->has_rc ? json_object_new_int(i->rc) : NULL);
        if (r >= 0)
                r = json_object_object_add(o, "signal", string_or_null(i->signal));
        if (r >= 0)
                r = json_object_object_add(o, "submitted_usec", i->submitted_usec > 0 ?
                                           json_object_new_uint64(i->submitted_usec) : NULL);
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int ctl_status_to_json(const CtlJobInfo *i, const char *unit, const CtlUnitState *st, json_object *result,
                       json_object **ret) {
        _cleanup_json_ json_object *o = NULL;
        json_object *res = NULL;
        const char *why = NULL;
        int r, code;

        r = ctl_job_info_to_json(i, &o);
        if (r < 0)
                return r;
        if (result) {
                code = ctl_exit_status_from_result(result, &why);
                res = json_object_new_object();
                r = res ? 0 : -ENOMEM;
                if (r >= 0)
                        r = json_object_object_add(res, "status", string_or_null(json_get_str(result, "status")));
                if (r >= 0)
                        r = json_add(res, "exit_status", json_object_new_int(code));
                if (r >= 0)
                        r = json_object_object_add(res, "reason",
                                                   string_or_null(why ?: json_get_str(result, "reason")));
                if (r >= 0)
                        r = json_add(res, "verified", json_object_new_boolean(false));
                if (r < 0) {
                        json_object_put(res);
                        return -ENOMEM;
                }
        }
        r = json_add(o, "unit", json_object_new_string(unit));
        if (r >= 0)
                r = json_object_object_add(o, "active_state", string_or_null(st ? st->active_state : NULL));
        if (r >= 0)
                r = json_object_object_add(o, "sub_state", string_or_null(st ? st->sub_state : NULL));
        if (r >= 0)
                r = json_object_object_add(o, "loaded", st ? json_object_new_boolean(st->loaded) : NULL);
        if (r >= 0)
                r = json_object_object_add(o, "status_text",
                                           string_or_null(st && st->status_text && *st->status_text ?
                                                          st->status_text : NULL));
        if (r >= 0)
                r = json_object_object_add(o, "result", res);
        else
                json_object_put(res);
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int ctl_since_parse(const char *s, uint64_t now_usec, uint64_t *ret_usec) {
        static const struct { char suffix; uint64_t sec; } units[] = {
                { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
        };
        static const char *const formats[] = { "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d" };
        size_t n = s ? strlen(s) : 0;
        char *end = NULL;
        uint64_t v;

        if (n == 0 || n > 32)
                return -EINVAL;
        if (s[0] == '@') {
                if (n < 2 || strspn(s + 1, "0123456789") != n - 1 || n - 1 > 12)
                        return -EINVAL;
                *ret_usec = strtoull(s + 1, NULL, 10) * USEC_PER_SEC;
                return 0;
        }
        if (s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789") == n - 1 && n - 1 <= 9)
                for (size_t i = 0; i < ELEMENTSOF(units); i++)
                        if (s[n - 1] == units[i].suffix) {
                                v = strtoull(s, &end, 10) * units[i].sec * USEC_PER_SEC;
                                *ret_usec = v < now_usec ? now_usec - v : 0;
                                return 0;
                        }
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                struct tm tm = {};
                time_t t;

                end = strptime(s, formats[i], &tm);
                if (!end || (*end && !streq(end, "Z")))
                        continue;
                t = timegm(&tm);
                if (t < 0)
                        return -EINVAL;
                *ret_usec = (uint64_t) t * USEC_PER_SEC;
                return 0;
        }
        return -EINVAL;
}

int ctl_states_add(const char *s, char ***states) {
        for (const char *p = s; ; ) {
                size_t n = strcspn(p, ",");
                _cleanup_free_ char *one = strndup(p, n);

                if (!one)
                        return -ENOMEM;
                if (!strv_contains(job_states, one))
                        return -EINVAL;
                if (!strv_contains((const char *const *) *states, one) && strv_push(states, TAKE_PTR(one)) < 0)
                        return -ENOMEM;
                if (!p[n])
                        return 0;
                p += n + 1;
        }
}

bool ctl_list_filter_match(const CtlListFilter *f, const CtlJobInfo *i) {
        if (f->states && !strv_contains((const char *const *) f->states, i->state))
                return false;
        /* A job whose submission time is unknown cannot be shown to be recent enough. */
        if (f->since_usec > 0 && (i->submitted_usec == 0 || i->submitted_usec < f->since_usec))
                return false;
        return !f->profile || streq(i->profile ?: "", f->profile);
}

void ctl_list_args_done(CtlListArgs *a) {
        strv_freep(&a->filter.states);
        *a = (CtlListArgs) {};
}

typedef struct ListParse {
        CtlListArgs *args;
        uint64_t now_usec;
} ListParse;

static int parse_state(const char *arg, void *userdata) {
        ListParse *p = userdata;
        int r;

        r = ctl_states_add(arg, &p->args->filter.states);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ctl_log_error_errno_untrusted(EINVAL, "--state: '%s' is not a list of pending, running, "
                                                     "completed, refused, failed, cancelled, unknown.", arg);
        return 0;
}

static int parse_since(const char *arg, void *userdata) {
        ListParse *p = userdata;

        if (ctl_since_parse(arg, p->now_usec, &p->args->filter.since_usec) < 0)
                return ctl_log_error_errno_untrusted(EINVAL, "--since: '%s' is not @EPOCH, YYYY-MM-DD[THH:MM[:SS]] "
                                                     "(UTC) or a time ago like 30m, 2h, 1d.", arg);
        return 0;
}

int ctl_list_parse_argv(int argc, char *argv[], uint64_t now_usec, CtlListArgs *ret) {
        _cleanup_(ctl_list_args_done) CtlListArgs a = {};
        const CtlOption options[] = {
                CTL_OPTION_JSON(&a.json),
                { "state", .parse = parse_state },
                { "since", .parse = parse_since },
                { "profile", .value = &a.filter.profile },
                {}
        };
        int r;

        r = ctl_options_parse(argc, argv, options, &(ListParse) { .args = &a, .now_usec = now_usec });
        if (r == -CTL_EUSAGE)
                return -EINVAL;
        if (r < 0)
                return r;
        if (r != argc)
                return log_error_errno(EINVAL, "list takes no arguments; see pondctl list --help.");
        *ret = a;
        a = (CtlListArgs) {};
        return 0;
}

/* The profile a queued job asked for, from its spool entry, and when it was submitted (job.json's mtime:
 * written once, atomically, by submit). */
void ctl_spool_info(const JobPaths *p, char **ret_profile, uint64_t *ret_usec) {
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        _cleanup_free_ char *path = NULL, *buf = NULL;
        struct stat st;
        size_t len;

        if (asprintf(&path, "%s/job.json", p->spool) < 0)
                return;
        if (stat(path, &st) >= 0)
                *ret_usec = (uint64_t) st.st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) st.st_mtim.tv_nsec / 1000;
        if (read_full_file(path, CTL_SPEC_MAX, &buf, &len) >= 0 && job_spec_parse(buf, len, &s, NULL) >= 0 &&
            s->sandbox.profile)
                *ret_profile = strdup(s->sandbox.profile);
}

/* Prints the job if it passes the filter: a line, or an element of array. */
static int list_one(sd_bus *bus, const char *id, const CtlListArgs *a, json_object *array) {
        _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_json_ json_object *result = NULL, *o = NULL;
        _cleanup_free_ char *profile = NULL;
        CtlJobInfo i = { .job_id = id };
        bool have_state = false;

        if (job_paths_init(&paths, id) < 0)
                return -ENOMEM;
        ctl_spool_info(&paths, &profile, &i.submitted_usec);
        i.profile = profile;
        if (ctl_result_peek(&paths, id, &result) < 0)
                result = NULL;
        else
                ctl_job_info_from_result(&i, result);
        if (!result && bus)
                have_state = ctl_unit_get_state(bus, paths.service, false, &st) >= 0;
        i.state = ctl_job_state(result, have_state ? &st : NULL);
        if (!ctl_list_filter_match(&a->filter, &i))
                return 0;
        if (!a->json) {
                char rc[32] = "-";

                if (i.signal)
                        snprintf(rc, sizeof rc, "%s", i.signal);
                else if (i.has_rc)
                        snprintf(rc, sizeof rc, "%d", i.rc);
                /* A result's profile and signal are only peeked at, never verified. */
                ctl_printf_untrusted("%s %s %s %s\n", id, i.state, i.profile ?: "-", rc);
                return 0;
        }
        if (ctl_job_info_to_json(&i, &o) < 0 || json_object_array_add(array, o) < 0)
                return -ENOMEM;
        TAKE_PTR(o);
        return 0;
}

/* Whether STATEDIR/owners/ID names user (docs/operations.md, "Who may use pond"). */
static bool owner_is(const char *owners, const char *id, const char *user) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len;

        if (asprintf(&path, "%s/%s", owners, id) < 0 || read_full_file(path, 512, &text, &len) < 0)
                return false;
        return len == strlen(user) + 1 && strncmp(text, user, len - 1) == 0 && text[len - 1] == '\n';
}

/* A member of the group pond cannot list the spool (0711): their jobs are those whose owner record names
 * them. Sets *ret_user to the caller's name, NULL for root (who lists the spool). */
static int list_dir(const JobPaths *paths, char **ret_dir, char **ret_user) {
        const char *slash = strrchr(paths->spool, '/');
        struct passwd *pw;

        *ret_user = NULL;
        if (geteuid() == 0 || !(pw = getpwuid(geteuid()))) {
                *ret_dir = slash ? strndup(paths->spool, (size_t) (slash - paths->spool)) : NULL;
                return *ret_dir ? 0 : -ENOMEM;
        }
        slash = strrchr(paths->owner, '/');
        *ret_dir = slash ? strndup(paths->owner, (size_t) (slash - paths->owner)) : NULL;
        *ret_user = strdup(pw->pw_name);
        return *ret_dir && *ret_user ? 0 : -ENOMEM;
}

int ctl_verb_list(int argc, char *argv[]) {
        _cleanup_(ctl_list_args_done) CtlListArgs a = {};
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_json_ json_object *array = NULL;
        _cleanup_free_ char *jobs = NULL, *user = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        struct dirent **names = NULL;
        int n, r = 0;

        if (ctl_list_parse_argv(argc, argv, clock_usec(CLOCK_REALTIME), &a) < 0)
                return CTL_EXIT_USAGE;
        /* The spool's parent (or the owner records'), derived like every other job path (a dummy id only
         * names a child of it). */
        if (job_paths_init(&paths, "x") < 0 || list_dir(&paths, &jobs, &user) < 0 ||
            (a.json && !(array = json_object_new_array())))
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        n = scandir(jobs, &names, NULL, alphasort);
        if (n < 0 && errno != ENOENT)
                return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot list %s: %m", jobs);
        if (n > 0 && ctl_bus_open(&bus) < 0)
                bus = NULL; /* still list what the results say; the rest shows as unknown */
        for (int i = 0; i < n; i++) {
                if (r >= 0 && job_id_is_valid(names[i]->d_name) && !user &&
                    (names[i]->d_type == DT_DIR || names[i]->d_type == DT_UNKNOWN))
                        r = list_one(bus, names[i]->d_name, &a, array);
                else if (r >= 0 && job_id_is_valid(names[i]->d_name) && user &&
                         owner_is(jobs, names[i]->d_name, user))
                        r = list_one(bus, names[i]->d_name, &a, array);
                free(names[i]);
        }
        free(names);
        if (r < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (a.json) /* nothing ever submitted: an empty array */
                ctl_json_print(array);
        return CTL_EXIT_OK;
}
