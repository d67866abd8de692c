/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runsc-seccomp.c: pond's OCI seccomp profile rewritten into what gVisor's converter reads as pond means
 * it. With --oci-seccomp, runsc compiles linux.seccomp itself (runsc/specutils/seccomp) and gVisor's
 * kernel, the Sentry, runs the filter on each of the payload's syscalls. That converter answers every
 * SCMP_ACT_ERRNO with EPERM: it ignores errnoRet and defaultErrnoRet ("runc always returns EPERM", unchanged
 * from release-20221219 to today's). The only other refusal it can express is ENOSYS: SCMP_ACT_TRACE with
 * no tracer attached, which the Sentry answers with ENOSYS and does not run, as Linux does
 * (pkg/sentry/kernel/seccomp.go). No tracer can attach to a payload whose profile refuses ptrace. */
#include <errno.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/json-util.h"
#include "runtime/runtime.h"

static bool action_permits(const char *action) {
        return action && (streq(action, "SCMP_ACT_ALLOW") || streq(action, "SCMP_ACT_LOG"));
}

static bool names_contain(json_object *rule, const char *name) {
        json_object *names = json_get(rule, "names");

        for (size_t i = 0; names && json_object_is_type(names, json_type_array) &&
                           i < json_object_array_length(names); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(names, i)) ?: "", name))
                        return true;
        return false;
}

/* errnoRet as the profile gives it; EPERM when absent (runc's and libseccomp's default). */
static int rule_errno(json_object *o, const char *key, int64_t *ret) {
        json_object *e = json_get(o, key);

        if (!e) {
                *ret = EPERM;
                return 0;
        }
        if (!json_object_is_type(e, json_type_int))
                return -EINVAL;
        *ret = json_object_get_int64(e);
        return 0;
}

static int adapt_rule(json_object *rule, size_t idx, char **ret_error) {
        const char *action = json_get_str(rule, "action");
        json_object *trace;
        int64_t e;

        if (!action || !streq(action, "SCMP_ACT_ERRNO"))
                return 0;
        if (rule_errno(rule, "errnoRet", &e) < 0)
                return error_set(ret_error, -EINVAL, "syscalls[%zu].errnoRet: must be an integer", idx);
        if (e == EPERM)
                return 0;
        if (e != ENOSYS)
                return error_set(ret_error, -EOPNOTSUPP, "syscalls[%zu].errnoRet: runsc answers every "
                                 "SCMP_ACT_ERRNO with EPERM; of the other errnos only ENOSYS (38) can be "
                                 "expressed, not %lld", idx, (long long) e);
        trace = json_object_new_string("SCMP_ACT_TRACE");
        if (!trace || json_object_object_add(rule, "action", trace) < 0) {
                json_object_put(trace);
                return -ENOMEM;
        }
        json_object_object_del(rule, "errnoRet");
        return 0;
}

int runsc_seccomp_adapt(json_object *seccomp, char **ret_error) {
        json_object *syscalls = json_get(seccomp, "syscalls");
        int64_t e;
        int r;

        if (!syscalls || !json_object_is_type(syscalls, json_type_array))
                return error_set(ret_error, -EINVAL, "seccomp.syscalls: must be an array");
        if (rule_errno(seccomp, "defaultErrnoRet", &e) < 0 || e != EPERM)
                return error_set(ret_error, -EOPNOTSUPP, "seccomp.defaultErrnoRet: runsc answers the default "
                                 "action with EPERM (1) only");
        /* SCMP_ACT_TRACE means ENOSYS only while nothing can trace the payload. */
        for (size_t i = 0; i < json_object_array_length(syscalls); i++) {
                json_object *rule = json_object_array_get_idx(syscalls, i);
                if (action_permits(json_get_str(rule, "action")) && names_contain(rule, "ptrace"))
                        return error_set(ret_error, -EPERM, "syscalls[%zu]: ptrace is allowed, so "
                                         "SCMP_ACT_TRACE would hand refused syscalls to a tracer", i);
        }
        for (size_t i = 0; i < json_object_array_length(syscalls); i++) {
                r = adapt_rule(json_object_array_get_idx(syscalls, i), i, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}
