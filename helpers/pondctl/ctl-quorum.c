/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-quorum.c: `pondctl quorum`: re-runs of one job, on one worker or several, compared. Every result must
 * verify and have completed; all must be the same task (task_sha, the image, profile and backend); then
 * they agree when enough of them have the same output_sha, and every path whose manifest entry is not the
 * same in all of them is printed, with what each result has there. Paths, link targets and every other
 * string of a result are printed escaped (ctl-escape.h): they are the job's. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "ctl-options.h"
#include "ctl.h"
#include "result/result.h"

/* What must be equal for two results to be re-runs of one job. */
static const char *const same_task[] = { "task_sha", "image_digest", "image", "profile", "backend" };

static const char *field(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ?
                json_object_get_string(v) : NULL;
}

/* The entry for path in a manifest sorted by path bytewise (docs/result-format.md), or NULL. */
static json_object *find_entry(json_object *arts, const char *path) {
        size_t lo = 0, hi = json_object_array_length(arts);

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                json_object *e = json_object_array_get_idx(arts, mid);
                int c = strcmp(field(e, "path") ?: "", path);

                if (c == 0)
                        return e;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* "file 12 3f2a...", "link -> target", "deleted", or "absent": what one result has at a path. */
static void describe(json_object *e, char *buf, size_t size) {
        const char *kind = e ? field(e, "kind") : NULL, *sha = e ? field(e, "sha256") : NULL;

        if (!e)
                snprintf(buf, size, "absent");
        else if (sha)
                snprintf(buf, size, "%s %" PRId64 " %.16s", kind ?: "?",
                         json_object_get_int64(json_object_object_get(e, "size")), sha);
        else if (field(e, "target"))
                snprintf(buf, size, "%s -> %s", kind ?: "?", field(e, "target"));
        else
                snprintf(buf, size, "%s", kind ?: "?");
}

/* Prints each path whose entry differs between the results; returns how many. */
static size_t print_differences(json_object **results, char **dirs, size_t n) {
        _cleanup_strv_free_ char **paths = NULL;
        size_t count = 0, n_paths;

        for (size_t i = 0; i < n; i++) {
                json_object *arts = json_object_object_get(results[i], "artifacts");
                for (size_t k = 0; k < json_object_array_length(arts); k++)
                        if (strv_push(&paths, strdup(field(json_object_array_get_idx(arts, k), "path") ?: "")) < 0)
                                return log_oom(), 0;
        }
        n_paths = strv_length(paths);
        if (n_paths > 1)
                qsort(paths, n_paths, sizeof *paths, cmp_str);
        for (size_t p = 0; p < n_paths; p++) {
                _cleanup_free_ char *first = NULL;
                bool same = true;

                if (p > 0 && streq(paths[p], paths[p - 1]))
                        continue;
                for (size_t i = 0; i < n && same; i++) {
                        json_object *e = find_entry(json_object_object_get(results[i], "artifacts"), paths[p]);
                        const char *s = e ? json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN) : "";

                        if (i == 0)
                                first = strdup(s);
                        else
                                same = first && streq(first, s);
                }
                if (same)
                        continue;
                count++;
                ctl_printf_untrusted("differs: %s\n", paths[p]);
                for (size_t i = 0; i < n; i++) {
                        char what[256];

                        describe(find_entry(json_object_object_get(results[i], "artifacts"), paths[p]), what,
                                 sizeof what);
                        ctl_printf_untrusted("  %s: %s\n", dirs[i], what);
                }
        }
        return count;
}

/* The results must be re-runs of one task: the first difference is printed. */
static bool same_job(json_object **results, char **dirs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (!field(results[i], "task_sha")) {
                        ctl_printf_untrusted("NOT COMPARABLE: %s has no task_sha (a bundle job, or a job refused "
                                             "early)\n", dirs[i]);
                        return false;
                }
                for (size_t f = 0; f < ELEMENTSOF(same_task) && i > 0; f++) {
                        const char *a = field(results[0], same_task[f]), *b = field(results[i], same_task[f]);

                        if (!streq_ptr(a, b)) {
                                ctl_printf_untrusted("NOT COMPARABLE: %s: %s has %s, %s has %s\n", same_task[f],
                                                     dirs[0], a ?: "none", dirs[i], b ?: "none");
                                return false;
                        }
                }
        }
        return true;
}

static int parse_min(const char *arg, void *userdata) {
        unsigned long *min = userdata;
        char *end;

        errno = 0;
        *min = strtoul(arg, &end, 10);
        if (errno || *end || *min < 1)
                return log_error_errno(EINVAL, "--min: a number of results, at least 1.");
        return 0;
}

int ctl_verb_quorum(int argc, char *argv[]) {
        const char *pubkey = NULL;
        const CtlOption options[] = { CTL_OPTION_PUBKEY(&pubkey), { "min", .parse = parse_min }, {} };
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        json_object **results = NULL;
        unsigned long min = 0;
        size_t n, agreeing = 0;
        char **dirs;
        int ret = CTL_EXIT_OK;

        if (ctl_options_parse(argc, argv, options, &min) < 0)
                return CTL_EXIT_USAGE;
        n = (size_t) (argc - optind);
        dirs = argv + optind;
        if (!pubkey || n < 2)
                return ctl_fail(CTL_EXIT_USAGE,
                                "Usage: pondctl quorum --pubkey FILE [--min N] RESULT_DIR RESULT_DIR...");
        if (min > n)
                return ctl_fail(CTL_EXIT_USAGE, "--min %lu: only %zu results given.", min, n);
        if (ctl_load_public_key(pubkey, pk) < 0)
                return CTL_EXIT_ERROR;
        results = calloc(n, sizeof *results);
        if (!results)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *err = NULL;
                const char *status;

                if (result_verify(dirs[i], pk, NULL, NULL, &results[i], &err) < 0) {
                        ctl_printf_untrusted("FAILED: %s: %s\n", dirs[i], err ?: "does not verify");
                        ret = CTL_EXIT_ERROR;
                        continue;
                }
                status = field(results[i], "status");
                if (!streq_ptr(status, "completed")) {
                        ctl_printf_untrusted("NOT COMPARABLE: %s: status %s (%s)\n", dirs[i], status ?: "?",
                                             field(results[i], "reason") ?: "no reason");
                        ret = ret ?: CTL_EXIT_NOT_COMPARABLE;
                }
        }
        if (ret == CTL_EXIT_OK && !same_job(results, dirs, n))
                ret = CTL_EXIT_NOT_COMPARABLE;
        if (ret == CTL_EXIT_OK) {
                /* the largest group of equal output_sha */
                for (size_t i = 0; i < n; i++) {
                        size_t k = 0;
                        for (size_t m = 0; m < n; m++)
                                k += streq_ptr(field(results[i], "output_sha"), field(results[m], "output_sha"));
                        agreeing = k > agreeing ? k : agreeing;
                }
                if (agreeing < n)
                        printf("%zu path(s) differ\n", print_differences(results, dirs, n));
                if (agreeing >= (min ?: n))
                        ctl_printf_untrusted("AGREE: %zu of %zu results have the same output (task_sha %s)\n",
                                             agreeing, n, field(results[0], "task_sha"));
                else {
                        printf("DISAGREE: at most %zu of %zu results have the same output (%lu needed)\n", agreeing,
                               n, min ?: (unsigned long) n);
                        ret = CTL_EXIT_DISAGREE;
                }
        }
        for (size_t i = 0; i < n; i++)
                json_object_put(results[i]);
        free(results);
        return ret;
}
