/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-spec.c: job specs as pondctl writes them: built from `pondctl run` options (over a spec file or
 * nothing), the checkout rewrite shared by submit and hash-input (so the bytes a worker hashes are the
 * bytes pondctl predicted), generated job ids, and the local check with the worker's own parser. */
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "ctl.h"
#include "hash/hash.h"
#include "policy/spec.h"

#define CTL_SPEC_JSON_FLAGS \
        (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

#define refuse(ret_error, ...) error_set((ret_error), -EINVAL, __VA_ARGS__)

int ctl_job_id_generate(char **ret) {
        uint8_t rnd[4];
        char hex[2 * sizeof rnd + 1], stamp[32];
        time_t t = time(NULL);
        struct tm tm;
        char *id;

        if (sodium_init() < 0 || !gmtime_r(&t, &tm))
                return -EIO;
        randombytes_buf(rnd, sizeof rnd);
        hex_encode(rnd, sizeof rnd, hex);
        if (strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm) == 0)
                return -EIO;
        if (asprintf(&id, CTL_JOB_ID_PREFIX "%s-%s", stamp, hex) < 0)
                return -ENOMEM;
        *ret = id;
        return 0;
}

/* The object at key in o, created if missing; a spec file with something else there is refused. */
static int child_object(json_object *o, const char *key, const char *field, json_object **ret,
                        char **ret_error) {
        json_object *c;

        if (json_object_object_get_ex(o, key, &c)) {
                if (!json_object_is_type(c, json_type_object))
                        return refuse(ret_error, "%s: must be an object", field);
                *ret = c;
                return 0;
        }
        c = json_object_new_object();
        if (!c || json_object_object_add(o, key, c) < 0)
                return -ENOMEM;
        *ret = c;
        return 0;
}

static int set(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        return json_object_object_add(o, key, v) < 0 ? -ENOMEM : 0;
}

static int set_string(json_object *o, const char *key, const char *s) {
        return s ? set(o, key, json_object_new_string(s)) : 0;
}

static int set_strv(json_object *o, const char *key, char **l) {
        json_object *a;

        if (!l || !*l)
                return 0;
        a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        for (char **i = l; *i; i++)
                if (json_object_array_add(a, json_object_new_string(*i)) < 0) {
                        json_object_put(a);
                        return -ENOMEM;
                }
        return set(o, key, a);
}

static int apply_env(json_object *spec, char **env, char **ret_error) {
        json_object *o;
        int r;

        if (!env || !*env)
                return 0;
        r = child_object(spec, "env", "env", &o, ret_error);
        if (r < 0)
                return r;
        for (char **e = env; *e; e++) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *k = NULL;

                if (!eq || eq == *e)
                        return refuse(ret_error, "--env: '%s' must be KEY=VALUE", *e);
                k = strndup(*e, (size_t) (eq - *e));
                if (!k)
                        return -ENOMEM;
                r = set_string(o, k, eq + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int apply_overrides(json_object *sandbox, const CtlSpecOptions *o, char **ret_error) {
        json_object *ov;
        int r;

        if (!o->image && !o->memory && !o->tmpfs_size && o->cpus <= 0 && o->pids == 0)
                return 0;
        r = child_object(sandbox, "overrides", "sandbox.overrides", &ov, ret_error);
        if (r < 0)
                return r;
        r = set_string(ov, "image", o->image);
        if (r >= 0)
                r = set_string(ov, "memory", o->memory);
        if (r >= 0)
                r = set_string(ov, "tmpfs_size", o->tmpfs_size);
        if (r >= 0 && o->cpus > 0)
                r = set(ov, "cpus", json_object_new_double(o->cpus));
        if (r >= 0 && o->pids > 0)
                r = set(ov, "pids_limit", json_object_new_int64((int64_t) o->pids));
        return r;
}

static int apply_sandbox(json_object *spec, const CtlSpecOptions *o, char **ret_error) {
        json_object *sb;
        int r;

        if (!o->profile && !o->backend && !o->tier && !o->image && !o->memory && !o->tmpfs_size &&
            o->cpus <= 0 && o->pids == 0 && !(o->allow_hosts && *o->allow_hosts))
                return 0;
        r = child_object(spec, "sandbox", "sandbox", &sb, ret_error);
        if (r < 0)
                return r;
        r = set_string(sb, "profile", o->profile);
        if (r >= 0)
                r = set_string(sb, "backend", o->backend);
        if (r >= 0)
                r = set_string(sb, "tier", o->tier);
        if (r >= 0)
                r = set_strv(sb, "allow_hosts", o->allow_hosts);
        if (r >= 0)
                r = apply_overrides(sb, o, ret_error);
        return r;
}

static int apply_ids(json_object *spec, const CtlSpecOptions *o) {
        _cleanup_free_ char *id = NULL;
        int r;

        if (o->job_id)
                return set_string(spec, "job_id", o->job_id);
        if (json_object_object_get_ex(spec, "job_id", NULL))
                return 0;
        r = ctl_job_id_generate(&id);
        if (r < 0)
                return r;
        return set_string(spec, "job_id", id);
}

int ctl_spec_build(json_object *base, const CtlSpecOptions *o, json_object **ret, char **ret_error) {
        _cleanup_json_ json_object *spec = NULL;
        json_object *limits;
        int r;

        if (base) {
                if (!json_object_is_type(base, json_type_object))
                        return refuse(ret_error, "top level: must be an object");
                if (json_object_deep_copy(base, &spec, NULL) < 0)
                        return -ENOMEM;
        } else if (!(spec = json_object_new_object()))
                return -ENOMEM;

        r = apply_ids(spec, o);
        if (r >= 0 && (o->tenant || !json_object_object_get_ex(spec, "tenant", NULL)))
                r = set_string(spec, "tenant", o->tenant ?: "local");
        if (r >= 0)
                r = set_strv(spec, "command", o->command);
        if (r >= 0)
                r = apply_env(spec, o->env, ret_error);
        if (r >= 0)
                r = set_string(spec, "checkout", o->checkout);
        if (r >= 0)
                r = apply_sandbox(spec, o, ret_error);
        if (r >= 0 && o->timeout_s > 0) {
                r = child_object(spec, "limits", "limits", &limits, ret_error);
                if (r >= 0)
                        r = set(limits, "wall_clock_s", json_object_new_int64((int64_t) o->timeout_s));
        }
        if (r >= 0)
                r = set_strv(spec, "outputs", o->outputs);
        /* -t asks for a terminal with the caller's keyboard on it; -i for the caller's stdin alone */
        if (r >= 0 && o->tty)
                r = set(spec, "tty", json_object_new_boolean(true));
        if (r >= 0 && (o->tty || o->stdin_open))
                r = set(spec, "stdin", json_object_new_boolean(true));
        if (r >= 0 && o->kill_on_hangup)
                r = set(spec, "kill_on_hangup", json_object_new_boolean(true));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(spec);
        return 0;
}

int ctl_spec_serialize(json_object *spec, char **ret, size_t *ret_len) {
        size_t n = 0;
        const char *s = json_object_to_json_string_length(spec, CTL_SPEC_JSON_FLAGS, &n);
        char *buf;

        if (!s)
                return -ENOMEM;
        buf = malloc(n + 2);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, s, n);
        buf[n] = '\n';
        buf[n + 1] = 0;
        *ret = buf;
        *ret_len = n + 1;
        return 0;
}

int ctl_spec_rewrite(const char *buf, size_t len, const char *checkout, char **ret, size_t *ret_len,
                     char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        char *copy;
        int r;

        if (!checkout) {
                /* Verbatim: the control plane may have hashed exactly these bytes. */
                copy = malloc(len + 1);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, buf, len);
                copy[len] = 0;
                *ret = copy;
                *ret_len = len;
                return 0;
        }
        r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, ret_error);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object))
                return refuse(ret_error, "top level: must be an object");
        r = set_string(o, "checkout", checkout);
        if (r < 0)
                return r;
        return ctl_spec_serialize(o, ret, ret_len);
}

int ctl_spec_read(const char *path, char **ret, size_t *ret_len, char **ret_error) {
        bool in = streq(path, "-");
        int r = in ? read_full_stream(STDIN_FILENO, CTL_SPEC_MAX, ret, ret_len) :
                     read_full_file(path, CTL_SPEC_MAX, ret, ret_len);

        if (r == -EFBIG)
                return refuse(ret_error, "%s: larger than %d bytes", in ? "stdin" : path, CTL_SPEC_MAX);
        return r;
}

int ctl_spec_validate(const char *buf, size_t len, JobSpec **ret, char **ret_error) {
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        int r;

        r = job_spec_parse(buf, len, &s, ret_error);
        if (r < 0)
                return r;
        if (ret)
                *ret = TAKE_PTR(s);
        return 0;
}

int ctl_checkout_resolve(const char *path, char **ret) {
        _cleanup_free_ char *abs = realpath(path, NULL);
        struct stat st;

        if (!abs)
                return -errno;
        if (stat(abs, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        *ret = TAKE_PTR(abs);
        return 0;
}
