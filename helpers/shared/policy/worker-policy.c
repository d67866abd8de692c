/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* worker-policy.c: policy/worker.json parsed strictly into the admission ceiling, "auto" resolved against
 * this host (MemTotal, the CPUs this process may run on), and the worker's tags. */
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/size.h"
#include "basic/strv.h"
#include "policy/policy-file.h"
#include "policy/tags.h"
#include "policy/worker-policy.h"

static int fail(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int fail(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

unsigned admission_cpus_allowed(void) {
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof set, &set) < 0)
                return 1;
        return (unsigned) MAX(CPU_COUNT(&set), 1);
}

AdmissionPolicy admission_policy_default(void) {
        return (AdmissionPolicy) {
                .max_wait_s = ADMISSION_MAX_WAIT_S_DEFAULT,
                .max_setups = MIN((uint64_t) ADMISSION_SETUPS_PER_CPU * admission_cpus_allowed(),
                                  ADMISSION_MAX_SETUPS_MAX),
        };
}

char *const *admission_policy_tags(const AdmissionPolicy *p) {
        static char *const defaults[] = { WORKER_TAGS_DEFAULT, NULL };

        return p->tags ?: defaults;
}

void admission_policy_done(AdmissionPolicy *p) {
        p->tags = strv_free(p->tags);
}

static int parse_tags(json_object *v, char ***ret, char **ret_error) {
        _cleanup_strv_free_ char **tags = NULL;
        size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;

        if (n == 0 || n > TAGS_MAX)
                return fail(ret_error, "tags: must be an array of 1 to %d tags (\"pool:trusted\", \"tenant:acme\")",
                            TAGS_MAX);
        for (size_t i = 0; i < n; i++) {
                json_object *t = json_object_array_get_idx(v, i);
                const char *s = json_object_is_type(t, json_type_string) ? json_object_get_string(t) : NULL;

                if (!s || !tag_is_valid(s))
                        return fail(ret_error, "tags[%zu]: must be a tag KEY:VALUE, KEY [a-z][a-z0-9_-]{0,31}, "
                                    "VALUE [A-Za-z0-9][A-Za-z0-9_.-]{0,127} (\"pool:trusted\", \"tenant:acme\")", i);
                if (strv_add_unique(&tags, s) < 0)
                        return -ENOMEM;
                if (strv_length(tags) != i + 1)
                        return fail(ret_error, "tags[%zu]: '%s' is listed twice", i, s);
        }
        *ret = TAKE_PTR(tags);
        return 0;
}

static bool is_auto(json_object *v) {
        return json_object_is_type(v, json_type_string) && streq(json_object_get_string(v), "auto");
}

static int parse_memory(json_object *v, uint64_t *ret, char **ret_error) {
        struct sysinfo si;

        if (is_auto(v)) {
                if (sysinfo(&si) < 0)
                        return -errno;
                *ret = (uint64_t) si.totalram * si.mem_unit;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string) || parse_size(json_object_get_string(v), ret) < 0 || *ret == 0)
                return fail(ret_error, "max_memory: must be a size (\"16G\") or \"auto\"");
        return 0;
}

static int parse_cpus(json_object *v, uint64_t *ret, char **ret_error) {
        double d;

        if (is_auto(v)) {
                *ret = (uint64_t) admission_cpus_allowed() * 1000;
                return 0;
        }
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
                return fail(ret_error, "max_cpus: must be a number of CPUs (0.001 to 4096) or \"auto\"");
        d = json_object_get_double(v);
        if (!isfinite(d) || d < 0.001 || d > 4096)
                return fail(ret_error, "max_cpus: must be a number of CPUs (0.001 to 4096) or \"auto\"");
        *ret = (uint64_t) llround(d * 1000);
        return 0;
}

int admission_policy_parse(const char *text, size_t len, AdmissionPolicy *ret, char **ret_error) {
        static const char *const known[] = { "max_jobs", "max_memory", "max_cpus", "when_full", "max_wait_s",
                                             "max_setups", "tags", NULL };
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        AdmissionPolicy p = admission_policy_default();
        json_object *v;
        int r;

        r = json_parse_strict(text, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, &err);
        if (r < 0)
                return fail(ret_error, "%s", err ?: "invalid JSON");
        r = json_check_object(o, NULL, ret_error);
        if (r >= 0)
                r = json_check_keys(o, NULL, known, ret_error);
        if (r >= 0)
                r = json_get_u64(o, NULL, "max_jobs", 1, 65536, &p.max_jobs, ret_error);
        if (r >= 0)
                r = json_get_u64(o, NULL, "max_wait_s", 0, 86400, &p.max_wait_s, ret_error);
        if (r >= 0)
                r = json_get_u64(o, NULL, "max_setups", 1, ADMISSION_MAX_SETUPS_MAX, &p.max_setups, ret_error);
        if (r < 0)
                return r;
        v = json_get(o, "max_memory");
        if (v && (r = parse_memory(v, &p.max_memory_bytes, ret_error)) < 0)
                return r;
        v = json_get(o, "max_cpus");
        if (v && (r = parse_cpus(v, &p.max_cpus_milli, ret_error)) < 0)
                return r;
        v = json_get(o, "when_full");
        if (v) {
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                if (!streq(s, "wait") && !streq(s, "refuse"))
                        return fail(ret_error, "when_full: must be \"wait\" or \"refuse\"");
                p.refuse_when_full = streq(s, "refuse");
        }
        v = json_get(o, "tags");
        if (v && (r = parse_tags(v, &p.tags, ret_error)) < 0)
                return r;
        *ret = p;
        return 0;
}

int admission_policy_load(const char *dir, AdmissionPolicy *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *buf = NULL, *err = NULL;
        size_t len;
        int r;

        if (dir)
                r = asprintf(&path, "%s/%s", dir, ADMISSION_POLICY_FILE) < 0 ? -ENOMEM : 0;
        else
                r = policy_file(ADMISSION_POLICY_FILE, &path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(ret_error, "policy: cannot look up %s: %s", ADMISSION_POLICY_FILE, strerror(-r));
        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r == -ENOENT) {
                *ret = admission_policy_default();
                return 0;
        }
        if (r < 0)
                return fail(ret_error, "policy: cannot read %s: %s", path, strerror(-r));
        r = admission_policy_parse(buf, len, ret, &err);
        if (r < 0)
                return fail(ret_error, "policy: %s: %s", path, err ?: strerror(-r));
        return 0;
}
