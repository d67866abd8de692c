/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* spec.c: the job spec (docs/job-spec.md): strict JSON in, a JobSpec out, or a refusal that names the
 * field. Every key is known, every value typed and bounded; what a sandbox block means is decided later
 * by policy_resolve(), here it is only well-formed. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/jobid.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "policy/spec.h"

#define refuse(ret_error, ...) error_set((ret_error), -EINVAL, __VA_ARGS__)

static bool is_alpha_(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static int dup_string(json_object *v, const char *field, JsonStringCheck check, char **ret, char **ret_error) {
        const char *s, *why;
        char *copy;
        int r;

        r = json_check_string(v, field, SIZE_MAX, &s, ret_error);
        if (r < 0)
                return r;
        why = check ? check(s) : NULL;
        if (why)
                return refuse(ret_error, "%s: %s", field, why);
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

/* An array of at most max strings, each passing check, as a NULL-terminated strv. */
static int dup_string_array(json_object *v, const char *field, size_t max, JsonStringCheck check, char ***ret,
                            char **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;
        int r;

        if (!json_object_is_type(v, json_type_array))
                return refuse(ret_error, "%s: must be an array of strings", field);
        r = json_check_array(v, field, 0, max, ret_error);
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char elem[JSON_FIELD_MAX];

                json_field_index(elem, field, i);
                r = dup_string(json_object_array_get_idx(v, i), elem, check, &l[i], ret_error);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Does the '/'-separated path contain the component c ("" for an empty one: "a//b", "a/")? */
static bool path_has_component(const char *path, const char *c) {
        size_t n = strlen(c);

        for (const char *p = path;;) {
                size_t k = strcspn(p, "/");

                if (k == n && strncmp(p, c, n) == 0)
                        return true;
                if (!p[k])
                        return false;
                p += k + 1;
        }
}

static const char *check_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > JOB_SPEC_NAME_MAX ||
            strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n)
                return "must be a name of 1 to 64 characters from [A-Za-z0-9_.-]";
        return NULL;
}

static const char *check_job_id(const char *s) {
        return job_id_is_valid(s) ? NULL : "must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}";
}

static const char *check_tenant(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > JOB_SPEC_TENANT_MAX)
                return "must be 1 to 128 printable ASCII characters";
        for (size_t i = 0; i < n; i++)
                if (s[i] < 0x20 || s[i] > 0x7e)
                        return "must be 1 to 128 printable ASCII characters";
        return NULL;
}

static const char *check_arg(const char *s) {
        return strlen(s) > JOB_SPEC_ARG_MAX ? "longer than 131071 bytes" : NULL;
}

static const char *check_checkout(const char *s) {
        if (s[0] != '/' || strlen(s) >= PATH_MAX || path_has_component(s, ".."))
                return "must be an absolute path without '..' components";
        return NULL;
}

static const char *check_output(const char *s) {
        if (s[0] == '/' || strlen(s) >= PATH_MAX || path_has_component(s, "") ||
            path_has_component(s, "..") || path_has_component(s, "."))
                return "must be a relative path without empty, '.' or '..' components";
        return NULL;
}

/* A DNS name (labels of [A-Za-z0-9-], not starting or ending with '-') or "*." and such a name of at
 * least two labels: "*" alone or "*.com" would open far more than one service. */
static const char *check_host(const char *s) {
        static const char *const invalid = "invalid host name";
        size_t n = strlen(s), labels = 0;
        bool wildcard = strncmp(s, "*.", 2) == 0;

        if (n == 0 || n > JOB_SPEC_HOST_MAX)
                return invalid;
        for (const char *p = wildcard ? s + 2 : s;;) {
                size_t k = strcspn(p, ".");

                if (k == 0 || k > 63 || p[0] == '-' || p[k - 1] == '-' ||
                    strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") < k)
                        return invalid;
                labels++;
                if (!p[k])
                        break;
                p += k + 1;
        }
        if (wildcard && labels < 2)
                return invalid;
        return NULL;
}

static const char *check_env_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > JOB_SPEC_ENV_NAME_MAX || !is_alpha_(s[0]))
                return "must match [A-Za-z_][A-Za-z0-9_]* (at most 128 characters)";
        for (size_t i = 1; i < n; i++)
                if (!is_alpha_(s[i]) && !is_digit(s[i]))
                        return "must match [A-Za-z_][A-Za-z0-9_]* (at most 128 characters)";
        return NULL;
}

static int parse_command(json_object *v, const char *field, void *userdata, char **ret_error) {
        JobSpec *s = userdata;
        int r;

        if (json_object_is_type(v, json_type_array) && json_object_array_length(v) == 0)
                return refuse(ret_error, "%s: must be a non-empty array of strings", field);
        strv_free(s->command);
        s->command = NULL;
        r = dup_string_array(v, field, JOB_SPEC_COMMAND_MAX, check_arg, &s->command, ret_error);
        if (r < 0)
                return r;
        if (s->command[0][0] == 0)
                return refuse(ret_error, "%s[0]: must not be empty", field);
        return 0;
}

static int parse_outputs(json_object *v, const char *field, void *userdata, char **ret_error) {
        JobSpec *s = userdata;
        char **l;
        int r;

        r = dup_string_array(v, field, JOB_SPEC_OUTPUTS_MAX, check_output, &l, ret_error);
        if (r < 0)
                return r;
        strv_free(s->outputs);
        s->outputs = l;
        return 0;
}

static int parse_env(json_object *v, const char *field, void *userdata, char **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        JobSpec *s = userdata;
        size_t i = 0;

        if (!json_object_is_type(v, json_type_object))
                return refuse(ret_error, "%s: must be an object of strings", field);
        if (json_object_object_length(v) > JOB_SPEC_ENV_MAX)
                return refuse(ret_error, "%s: more than %d variables", field, JOB_SPEC_ENV_MAX);
        l = calloc(json_object_object_length(v) + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        json_object_object_foreach(v, k, val) {
                _cleanup_free_ char *p = NULL;
                const char *why = check_env_name(k), *value;
                char elem[JSON_FIELD_MAX];
                int r;

                if (why) {
                        p = json_printable(k);
                        return p ? refuse(ret_error, "%s: variable name '%s' %s", field, p, why) : -ENOMEM;
                }
                json_field(elem, field, k);
                r = json_check_string(val, elem, SIZE_MAX, &value, ret_error);
                if (r < 0)
                        return r;
                if (strlen(k) + 1 + strlen(value) > JOB_SPEC_ARG_MAX)
                        return refuse(ret_error, "%s: longer than 131071 bytes", elem);
                if (asprintf(&l[i++], "%s=%s", k, value) < 0)
                        return -ENOMEM;
        }
        strv_free(s->env);
        s->env = TAKE_PTR(l);
        return 0;
}

static const JsonField limit_fields[] = {
        { "wall_clock_s",   JSON_U64, .offset = offsetof(JobLimits, wall_clock_s),   .min = 1,
          .max = JOB_SPEC_MAX_WALL_CLOCK_S },
        { "output_bytes",   JSON_U64, .offset = offsetof(JobLimits, output_bytes),   .min = 1,
          .max = JOB_SPEC_MAX_OUTPUT_BYTES },
        { "artifact_bytes", JSON_U64, .offset = offsetof(JobLimits, artifact_bytes), .min = 1,
          .max = JOB_SPEC_MAX_ARTIFACT_BYTES },
        { "artifact_files", JSON_U64, .offset = offsetof(JobLimits, artifact_files), .min = 1,
          .max = JOB_SPEC_MAX_ARTIFACT_FILES },
        { "max_cost_cents", JSON_U64, .offset = offsetof(JobLimits, max_cost_cents), .min = 1,
          .max = JOB_SPEC_MAX_COST_CENTS },
        {}
};

/* All or nothing: a refused limit leaves the defaults. */
static int parse_limits(json_object *v, const char *field, void *userdata, char **ret_error) {
        JobSpec *s = userdata;
        JobLimits l = s->limits;
        int r;

        r = json_dispatch(v, field, limit_fields, &l, ret_error);
        if (r < 0)
                return r;
        s->limits = l;
        return 0;
}

/* The shape only: an array of objects. Each entry's fields are the broker's to judge (broker-config.c),
 * which the supervisor does before anything runs, so a bad credential is still a refusal. */
static int parse_credentials(json_object *v, const char *field, void *userdata, char **ret_error) {
        JobSpec *s = userdata;

        if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0 ||
            json_object_array_length(v) > JOB_SPEC_CREDENTIALS_MAX)
                return refuse(ret_error, "%s: must be an array of 1 to %d credentials", field,
                              JOB_SPEC_CREDENTIALS_MAX);
        for (size_t i = 0; i < json_object_array_length(v); i++)
                if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_object))
                        return refuse(ret_error, "%s[%zu]: must be an object", field, i);
        json_object_put(s->credentials);
        s->credentials = json_object_get(v);
        return 0;
}

typedef struct HomeFileIn {
        char *path, *content, *mode;
} HomeFileIn;

static const char *check_home_path(const char *s) {
        return home_path_check(s);
}

static const char *check_home_mode(const char *s) {
        mode_t m;
        return home_mode_from_string(s, &m) < 0 ? "must be \"0600\", \"0400\", \"0700\" or \"0500\"" : NULL;
}

static const JsonField home_file_fields[] = {
        { "path",    JSON_STRING, .offset = offsetof(HomeFileIn, path),    .flags = JSON_MANDATORY,
          .check = check_home_path },
        { "content", JSON_STRING, .offset = offsetof(HomeFileIn, content), .flags = JSON_MANDATORY,
          .max = HOME_FILE_BYTES_MAX },
        { "mode",    JSON_STRING, .offset = offsetof(HomeFileIn, mode),    .check = check_home_mode },
        {}
};

static void home_files_free(HomeFile *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                home_file_done(&l[i]);
        free(l);
}

/* Two entries may not name the same path, nor may one be a directory the other needs ("a" and "a/b"). */
static int check_home_conflicts(const HomeFile *l, size_t n, char **ret_error) {
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < i; k++) {
                        const char *a = l[i].path, *b = l[k].path;
                        size_t la = strlen(a), lb = strlen(b);

                        if (streq(a, b))
                                return refuse(ret_error, "home_files[%zu].path: '%s' appears twice", i, a);
                        if ((la < lb && strncmp(a, b, la) == 0 && b[la] == '/') ||
                            (lb < la && strncmp(a, b, lb) == 0 && a[lb] == '/'))
                                return refuse(ret_error, "home_files[%zu].path: '%s' and '%s' cannot both be "
                                              "files (one is the other's directory)", i, a, b);
                }
        return 0;
}

static int parse_home_file(json_object *v, const char *field, HomeFile *ret, char **ret_error) {
        HomeFileIn in = {};
        mode_t mode = 0600;
        int r;

        r = json_dispatch(v, field, home_file_fields, &in, ret_error);
        if (r >= 0 && in.mode)
                r = home_mode_from_string(in.mode, &mode);
        free(in.mode);
        if (r < 0) {
                free(in.path);
                free(in.content);
                return r;
        }
        *ret = (HomeFile) { .path = in.path, .content = in.content, .mode = mode };
        return 0;
}

/* The shape and the bounds of each entry; the placeholders are checked once the whole spec is read
 * (check_home_templates()), since they name credentials. */
static int parse_home_files(json_object *v, const char *field, void *userdata, char **ret_error) {
        JobSpec *s = userdata;
        HomeFile *l;
        size_t n;
        int r;

        r = json_check_array(v, field, 0, HOME_FILES_MAX, ret_error);
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        l = calloc(n + 1, sizeof(HomeFile));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char elem[JSON_FIELD_MAX];

                json_field_index(elem, field, i);
                r = parse_home_file(json_object_array_get_idx(v, i), elem, &l[i], ret_error);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                r = check_home_conflicts(l, n, ret_error);
        if (r < 0) {
                home_files_free(l, n);
                return r;
        }
        home_files_free(s->home_files, s->n_home_files);
        s->home_files = l;
        s->n_home_files = n;
        return 0;
}

static bool has_credential(json_object *credentials, const char *name) {
        for (size_t i = 0; i < json_object_array_length(credentials); i++) {
                const char *c = json_get_str(json_object_array_get_idx(credentials, i), "name");
                if (c && streq(c, name))
                        return true;
        }
        return false;
}

/* At acceptance every value counts at its longest (HOME_VALUE_MAX); a credential must be the job's. */
static int lookup_check(HomePlaceholder p, const char *arg, const char *field, void *userdata,
                        const char **ret_value, char **ret_error) {
        static const char longest[HOME_VALUE_MAX + 1] = { [0 ... HOME_VALUE_MAX - 1] = 'x' };
        const JobSpec *s = userdata;

        if (p != HOME_PLACEHOLDER_JOB_ID) {
                if (!s->credentials)
                        return refuse(ret_error, "%s: {{%s:%s}} needs credentials, and this job has none", field,
                                      home_placeholder_to_string(p), arg);
                if (!has_credential(s->credentials, arg))
                        return refuse(ret_error, "%s: {{%s:%s}} names no credential of this job", field,
                                      home_placeholder_to_string(p), arg);
        }
        *ret_value = longest;
        return 0;
}

static int check_home_templates(const JobSpec *s, char **ret_error) {
        size_t total = 0;

        for (size_t i = 0; i < s->n_home_files; i++) {
                char field[JSON_FIELD_MAX], elem[JSON_FIELD_MAX];
                size_t n;
                int r;

                json_field_index(elem, "home_files", i);
                json_field(field, elem, "content");
                r = home_render(field, s->home_files[i].content, HOME_FILE_BYTES_MAX, lookup_check, (void *) s,
                                NULL, &n, ret_error);
                if (r < 0)
                        return r == -E2BIG ? -EINVAL : r;
                total += n;
        }
        if (total > HOME_FILES_BYTES_MAX)
                return refuse(ret_error, "home_files: more than %u bytes in all once rendered (each placeholder "
                              "counts as %d bytes)", HOME_FILES_BYTES_MAX, HOME_VALUE_MAX);
        return 0;
}

static int parse_sandbox(json_object *v, const char *field, void *userdata, char **ret_error) {
        JobSpec *s = userdata;
        SandboxBlock b;
        int r;

        r = sandbox_block_from_json(v, field, &b, ret_error);
        if (r < 0)
                return r;
        sandbox_block_done(&s->sandbox);
        s->sandbox = b;
        return 0;
}

static int sandbox_overrides(json_object *v, const char *field, void *userdata, char **ret_error) {
        SandboxBlock *b = userdata;

        json_object_put(b->overrides);
        b->overrides = json_object_get(v);
        return 0;
}

/* Host names are compared lowercase everywhere after this. */
static int sandbox_allow_hosts(json_object *v, const char *field, void *userdata, char **ret_error) {
        SandboxBlock *b = userdata;
        char **l;
        int r;

        r = dup_string_array(v, field, JOB_SPEC_ALLOW_HOSTS_MAX, check_host, &l, ret_error);
        if (r < 0)
                return r;
        for (char **h = l; *h; h++)
                for (char *c = *h; *c; c++)
                        if (*c >= 'A' && *c <= 'Z')
                                *c += 'a' - 'A';
        strv_free(b->allow_hosts);
        b->allow_hosts = l;
        return 0;
}

static const JsonField sandbox_fields[] = {
        { "profile",     JSON_STRING, .offset = offsetof(SandboxBlock, profile), .check = check_name },
        { "backend",     JSON_STRING, .offset = offsetof(SandboxBlock, backend), .check = check_name },
        { "tier",        JSON_STRING, .offset = offsetof(SandboxBlock, tier),    .check = check_name },
        { "overrides",   JSON_OBJECT, .callback = sandbox_overrides },
        { "allow_hosts", JSON_ANY,    .callback = sandbox_allow_hosts },
        {}
};

int sandbox_block_from_json(json_object *o, const char *field, SandboxBlock *ret, char **ret_error) {
        _cleanup_(sandbox_block_done) SandboxBlock b = {};
        int r;

        b.allow_hosts = calloc(1, sizeof(char *));
        if (!b.allow_hosts)
                return -ENOMEM;
        r = json_dispatch(o, field ?: "sandbox", sandbox_fields, &b, ret_error);
        if (r < 0)
                return r;
        *ret = b;
        b = (SandboxBlock) {};
        return 0;
}

void sandbox_block_done(SandboxBlock *b) {
        if (!b)
                return;
        free(b->profile);
        free(b->backend);
        free(b->tier);
        json_object_put(b->overrides);
        strv_free(b->allow_hosts);
        *b = (SandboxBlock) {};
}

JobSpec *job_spec_free(JobSpec *s) {
        if (!s)
                return NULL;
        free(s->job_id);
        free(s->tenant);
        strv_free(s->command);
        strv_free(s->env);
        free(s->checkout);
        free(s->bundle);
        sandbox_block_done(&s->sandbox);
        strv_free(s->outputs);
        json_object_put(s->credentials);
        home_files_free(s->home_files, s->n_home_files);
        free(s);
        return NULL;
}

static JobSpec *job_spec_new(void) {
        _cleanup_(job_spec_freep) JobSpec *s = calloc(1, sizeof(JobSpec));

        if (!s)
                return NULL;
        s->env = calloc(1, sizeof(char *));
        s->outputs = calloc(1, sizeof(char *));
        s->sandbox.allow_hosts = calloc(1, sizeof(char *));
        if (!s->env || !s->outputs || !s->sandbox.allow_hosts)
                return NULL;
        s->limits = (JobLimits) {
                .wall_clock_s = JOB_SPEC_DEFAULT_WALL_CLOCK_S,
                .output_bytes = JOB_SPEC_DEFAULT_OUTPUT_BYTES,
                .artifact_bytes = JOB_SPEC_DEFAULT_ARTIFACT_BYTES,
                .artifact_files = JOB_SPEC_DEFAULT_ARTIFACT_FILES,
        };
        return TAKE_PTR(s);
}

static const JsonField top_fields[] = {
        { "job_id",      JSON_STRING, .offset = offsetof(JobSpec, job_id),   .flags = JSON_MANDATORY,
          .check = check_job_id },
        { "tenant",      JSON_STRING, .offset = offsetof(JobSpec, tenant),   .flags = JSON_MANDATORY,
          .check = check_tenant },
        { "command",     JSON_ANY,    .callback = parse_command,             .flags = JSON_MANDATORY },
        { "env",         JSON_ANY,    .callback = parse_env },
        { "checkout",    JSON_STRING, .offset = offsetof(JobSpec, checkout), .check = check_checkout },
        { "bundle",      JSON_STRING, .offset = offsetof(JobSpec, bundle),   .check = check_checkout },
        { "sandbox",     JSON_ANY,    .callback = parse_sandbox },
        { "limits",      JSON_OBJECT, .callback = parse_limits },
        { "outputs",     JSON_ANY,    .callback = parse_outputs },
        { "credentials", JSON_ANY,    .callback = parse_credentials },
        { "home_files",  JSON_ANY,    .callback = parse_home_files },
        { "tty",         JSON_BOOL,   .offset = offsetof(JobSpec, tty) },
        { "stdin",       JSON_BOOL,   .offset = offsetof(JobSpec, stdin_open) },
        { "kill_on_hangup", JSON_BOOL, .offset = offsetof(JobSpec, kill_on_hangup) },
        {}
};

int job_spec_parse(const char *buf, size_t len, JobSpec **ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        int r;

        if (!buf || !ret)
                return -EINVAL;
        r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, ret_error);
        if (r < 0)
                return r;
        s = job_spec_new();
        if (!s)
                return -ENOMEM;
        r = json_dispatch(o, NULL, top_fields, s, ret_error);
        if (r < 0)
                return r;

        if (s->kill_on_hangup && !s->tty && !s->stdin_open)
                return refuse(ret_error, "kill_on_hangup: only with tty or stdin (nothing can hang up)");
        if (s->checkout && s->bundle)
                return refuse(ret_error, "bundle: not together with checkout (the bundle is the checkout)");
        r = check_home_templates(s, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}
