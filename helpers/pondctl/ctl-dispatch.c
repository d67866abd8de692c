/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-dispatch.c: `pondctl dispatch-check [FILE] [--tenant PROJECT] [--policy DIR] [--worker PROBE.json
 * [--worker-tags a,b]]`: reads a stage's sandbox block (FILE, or stdin for none or "-") and prints the
 * routing decision, or a refusal, as JSON on stdout. The policy is --policy DIR's files, else the worker's
 * own (/etc/pond's over the shipped ones, policy-file.h). */
#include <getopt.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "ctl-dispatch.h"
#include "ctl-options.h"
#include "ctl.h"
#include "dispatch.h"
#include "policy/tags.h"

typedef struct DispatchArgs {
        const char *input;
        const char *tenant;
        const char *policy_dir;
        const char *worker;
        const char *worker_tags;
} DispatchArgs;

int ctl_refusal(const char *reason, bool json) {
        if (json) {
                _cleanup_json_ json_object *o = json_object_new_object();

                if (!o)
                        return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
                json_object_object_add(o, "refused", json_object_new_boolean(true));
                json_object_object_add(o, "reason", json_object_new_string(reason ?: "(no reason)"));
                ctl_json_print(o);
        }
        return ctl_fail_untrusted(CTL_EXIT_ERROR, "Refused: %s", reason ?: "(no reason)"); /* quotes the spec */
}

/* path NULL: stdin. */
static int read_json(const char *path, json_object **ret, char **ret_error) {
        _cleanup_free_ char *buf = NULL, *err = NULL;
        size_t len;
        int r;

        r = path ? read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len) :
                   read_full_stream(STDIN_FILENO, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r < 0)
                return error_set(ret_error, r, "%s: %s", path ?: "stdin", strerror(-r));
        r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, ret, &err);
        if (r < 0)
                return error_set(ret_error, r, "%s: %s", path ?: "stdin", err ?: "invalid JSON");
        return 0;
}

static int parse_args(int argc, char *argv[], DispatchArgs *a) {
        const CtlOption options[] = {
                { "tenant", .value = &a->tenant },
                { "policy", .value = &a->policy_dir },
                { "worker", .value = &a->worker },
                { "worker-tags", .value = &a->worker_tags },
                {}
        };

        if (ctl_options_parse(argc, argv, options, NULL) < 0)
                return -EINVAL;
        if (argc - optind > 1)
                return log_error_errno(EINVAL, "dispatch-check takes at most one FILE; see pondctl --help.");
        if (a->worker_tags && !a->worker)
                return log_error_errno(EINVAL, "--worker-tags needs --worker PROBE.json.");
        a->input = optind < argc && !streq(argv[optind], "-") ? argv[optind] : NULL;
        return 0;
}

/* Adds "worker": {eligible, reason} to out; returns the exit status. */
static int check_worker(const DispatchArgs *a, const DispatchDecision *d, json_object *out) {
        _cleanup_json_ json_object *probe = NULL;
        _cleanup_strv_free_ char **tags = NULL;
        _cleanup_free_ char *err = NULL;
        json_object *w;
        int r;

        r = read_json(a->worker, &probe, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Cannot read the worker's probe: %s", err ?: strerror(-r));
        r = a->worker_tags ? tags_split(a->worker_tags, &tags) : 0;
        if (r < 0)
                return ctl_fail_errno_untrusted(CTL_EXIT_ERROR, r, "--worker-tags '%s': a comma-separated list of "
                                                "tags KEY:VALUE (at most %d): %m", a->worker_tags, TAGS_MAX);
        r = dispatch_worker_eligible(d, probe, tags, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "%s: %s", a->worker, err ?: strerror(-r));
        w = json_object_new_object();
        if (!w)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        json_object_object_add(w, "eligible", json_object_new_boolean(r > 0));
        json_object_object_add(w, "reason", r > 0 ? NULL : json_object_new_string(err ?: "?"));
        json_object_object_add(out, "worker", w);
        return r > 0 ? CTL_EXIT_OK : CTL_DISPATCH_EXIT_NOT_ELIGIBLE;
}

int ctl_verb_dispatch_check(int argc, char *argv[]) {
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
        _cleanup_(policy_freep) Policy *policy = NULL;
        _cleanup_json_ json_object *block = NULL, *out = NULL;
        _cleanup_free_ char *err = NULL;
        DispatchArgs a = {};
        int r, status = CTL_EXIT_OK;

        if (parse_args(argc, argv, &a) < 0)
                return CTL_EXIT_USAGE;
        r = policy_load(a.policy_dir, &policy, &err);
        if (r < 0)
                return ctl_refusal(err ?: "policy: cannot be loaded", true);
        r = read_json(a.input, &block, &err);
        if (r == -ENOMEM)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (r < 0)
                return ctl_refusal(err, true);
        r = dispatch_check(policy, block, a.tenant, &d, &err);
        if (r == -ENOMEM)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (r < 0)
                return ctl_refusal(err, true);
        r = dispatch_decision_to_json(d, &out);
        if (r < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (a.worker) {
                status = check_worker(&a, d, out);
                if (status == CTL_EXIT_ERROR)
                        return status;
        }
        ctl_json_print(out);
        return status;
}
