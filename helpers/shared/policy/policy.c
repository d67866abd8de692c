/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* policy.c: loads policy/profiles.json and resolves a job's sandbox block against it, fail closed:
 * anything not explicitly allowed by the policy file is a refusal with a reason. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "basic/dirs.h"
#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "image/image-name.h"
#include "policy/policy-file.h"
#include "policy/policy.h"
#include "policy/seccomp-check.h"
#include "runtime/runtime.h"

static const char *const fs_posture_table[_FS_POSTURE_MAX] = {
        [FS_HOST] = "host",
        [FS_READONLY] = "readonly",
        [FS_OVERLAY] = "overlay",
};

static const char *const net_posture_table[_NET_POSTURE_MAX] = {
        [NET_OPEN] = "open",
        [NET_BROKER_ONLY] = "broker-only",
        [NET_ALLOWLIST] = "allowlist",
};

static int table_lookup(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (int) i;
        return -EINVAL;
}

FsPosture fs_posture_from_string(const char *s) {
        return table_lookup(fs_posture_table, _FS_POSTURE_MAX, s);
}
const char *net_posture_to_string(NetPosture p) {
        return p >= 0 && p < _NET_POSTURE_MAX ? net_posture_table[p] : NULL;
}
NetPosture net_posture_from_string(const char *s) {
        return table_lookup(net_posture_table, _NET_POSTURE_MAX, s);
}

static const char * const sidecar_death_table[_SIDECAR_DEATH_MAX] = {
        [SIDECAR_DEATH_FAIL] = "fail",
        [SIDECAR_DEATH_RECORD] = "record",
};
/* Absent (NULL) is the default, "fail". */
SidecarDeath sidecar_death_from_string(const char *s) {
        return s ? table_lookup(sidecar_death_table, _SIDECAR_DEATH_MAX, s) : SIDECAR_DEATH_FAIL;
}

#define fail(ret_error, ...) error_set((ret_error), -EINVAL, __VA_ARGS__)

static bool array_has_string(json_object *a, const char *s) {
        if (!json_object_is_type(a, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                const char *e = json_object_get_string(json_object_array_get_idx(a, i));
                if (e && streq(e, s))
                        return true;
        }
        return false;
}

static char *keys_joined(json_object *o) {
        char *out = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);

        if (!f)
                return NULL;
        if (json_object_is_type(o, json_type_array))
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        fprintf(f, "%s%s", i ? ", " : "", json_object_get_string(json_object_array_get_idx(o, i)));
        else {
                bool first = true;
                json_object_object_foreach(o, k, v) {
                        (void) v;
                        fprintf(f, "%s%s", first ? "" : ", ", k);
                        first = false;
                }
        }
        fclose(f);
        return out;
}

/* Parses a knob value into the unit the runtimes take: bytes, milli-CPUs, a count, or an image name. */
static int knob_parse(json_object *spec, const char *name, json_object *value, uint64_t *ret, char **ret_error) {
        const char *type = json_object_get_string(json_get(spec, "type"));

        if (streq(type, "size")) {
                if (json_object_is_type(value, json_type_int)) {
                        int64_t v = json_object_get_int64(value);
                        if (v <= 0)
                                return fail(ret_error, "sandbox.overrides.%s: must be a positive size", name);
                        *ret = (uint64_t) v;
                        return 0;
                }
                if (!json_object_is_type(value, json_type_string) ||
                    parse_size(json_object_get_string(value), ret) < 0)
                        return fail(ret_error, "sandbox.overrides.%s: must be a size like \"512M\" or bytes",
                                    name);
                return 0;
        }
        if (streq(type, "cpus")) {
                double d;
                if (json_object_is_type(value, json_type_int) || json_object_is_type(value, json_type_double))
                        d = json_object_get_double(value);
                else
                        return fail(ret_error, "sandbox.overrides.%s: must be a number of CPUs like 1.5", name);
                if (!isfinite(d) || d <= 0 || d > 1e6)
                        return fail(ret_error, "sandbox.overrides.%s: must be a positive number of CPUs", name);
                *ret = (uint64_t) llround(d * 1000);
                return 0;
        }
        if (streq(type, "integer")) {
                if (!json_object_is_type(value, json_type_int) || json_object_get_int64(value) <= 0)
                        return fail(ret_error, "sandbox.overrides.%s: must be a positive integer", name);
                *ret = (uint64_t) json_object_get_int64(value);
                return 0;
        }
        return fail(ret_error, "policy: knob %s has unknown type '%s'", name, type ?: "(none)");
}

static int knob_bound(json_object *spec, const char *name, const char *which, uint64_t *ret) {
        json_object *b = json_get(spec, which);
        return b ? knob_parse(spec, name, b, ret, NULL) : -EINVAL;
}

/* Value within [min, max] of the knob, as declared in the policy. */
static int knob_check(json_object *knobs, const char *name, json_object *value, uint64_t *ret,
                      char **ret_error) {
        json_object *spec = json_get(knobs, name);
        uint64_t v, lo, hi;
        int r;

        r = knob_parse(spec, name, value, &v, ret_error);
        if (r < 0)
                return r;
        if (knob_bound(spec, name, "min", &lo) < 0 || knob_bound(spec, name, "max", &hi) < 0)
                return fail(ret_error, "policy: knob %s lacks valid bounds", name);
        if (v < lo || v > hi)
                return fail(ret_error, "sandbox.overrides.%s: %s is out of bounds (%s .. %s)", name,
                            json_object_to_json_string(value),
                            json_object_to_json_string(json_get(spec, "min")),
                            json_object_to_json_string(json_get(spec, "max")));
        *ret = v;
        return 0;
}

/* "host", a directory image's name, an imported image's repo:tag or sha256 digest (image-store.h). */
static bool image_knob_is_valid(const char *s) {
        return image_ref_is_valid(s) && strlen(s) <= IMAGE_REF_MAX;
}

/* Applies one knob value (a profile default or an override) to the resolved policy. */
static int knob_apply(json_object *knobs, ResolvedPolicy *r, const char *name, json_object *value,
                      char **ret_error) {
        uint64_t v = 0;
        int k;

        if (!json_get(knobs, name))
                return fail(ret_error,
                            "sandbox.overrides.%s: not an overridable knob (only memory, cpus, pids_limit, "
                            "tmpfs_size, home_size, exec_concurrency, image; a profile's posture cannot be "
                            "changed)", name);
        if (streq(name, "image")) {
                const char *s = json_object_is_type(value, json_type_string) ? json_object_get_string(value)
                                                                             : NULL;
                if (!image_knob_is_valid(s))
                        return fail(ret_error, "sandbox.overrides.image: must be \"host\", an image name "
                                    "(repo[:tag], [a-z0-9][a-z0-9._/-]*) or \"sha256:\" and 64 hex digits");
                free(r->image);
                r->image = strdup(s);
                return r->image ? 0 : -ENOMEM;
        }
        k = knob_check(knobs, name, value, &v, ret_error);
        if (k < 0)
                return k;
        if (streq(name, "memory"))
                r->memory_bytes = v;
        else if (streq(name, "cpus"))
                r->cpus_milli = v;
        else if (streq(name, "pids_limit"))
                r->pids_limit = v;
        else if (streq(name, "tmpfs_size"))
                r->tmpfs_bytes = v;
        else if (streq(name, "home_size"))
                r->home_bytes = v;
        else if (streq(name, "exec_concurrency") && v <= POLICY_EXEC_CONCURRENCY_MAX)
                r->exec_concurrency = v;
        else if (streq(name, "exec_concurrency"))
                return fail(ret_error, "policy: knob exec_concurrency: %" PRIu64 " is beyond the %d execs a job's "
                            "init serves at once", v, POLICY_EXEC_CONCURRENCY_MAX);
        else
                return fail(ret_error, "policy: knob %s is not known to this pond", name);
        return 0;
}

static int pick(json_object *allowed, const char *requested, const char *fallback, const char *field,
                char **ret, char **ret_error) {
        const char *v = requested ?: fallback;
        _cleanup_free_ char *known = keys_joined(allowed);

        if (!v || !array_has_string(allowed, v))
                return fail(ret_error, "sandbox.%s: '%s' is not allowed here (allowed: %s)", field, v ?: "(none)",
                            known ?: "?");
        *ret = strdup(v);
        return *ret ? 0 : -ENOMEM;
}

/* The profile's "images" (names, digests or "*") plus its own default image, which is always allowed. */
static int images_allowed(json_object *prof, ResolvedPolicy *r) {
        json_object *a = json_get(prof, "images");

        for (size_t i = 0; json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++)
                if (strv_push(&r->images_allowed,
                              strdup(json_object_get_string(json_object_array_get_idx(a, i)) ?: "")) < 0)
                        return -ENOMEM;
        return strv_push(&r->images_allowed, strdup(r->image));
}

bool policy_image_allowed(const ResolvedPolicy *r, const char *digest, char *const *names) {
        for (size_t i = 0; r && r->images_allowed && r->images_allowed[i]; i++) {
                const char *a = r->images_allowed[i];

                if (streq(a, "*") || (digest && streq(a, digest)))
                        return true;
                for (size_t k = 0; names && names[k]; k++)
                        if (streq(a, names[k]))
                                return true;
        }
        return false;
}

int policy_resolve(const Policy *p, const SandboxBlock *block, ResolvedPolicy **ret, char **ret_error) {
        _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;
        json_object *profiles = json_get(p->profiles, "profiles"), *knobs = json_get(p->profiles, "knobs"), *prof;
        json_object *backends = json_get(p->profiles, "backends");
        _cleanup_free_ char *known = keys_joined(profiles), *known_backends = keys_joined(backends), *where = NULL;
        const char *backend, *default_backend;
        const RuntimeProvider *provider;
        int k;

        if (!block->profile)
                return fail(ret_error, "sandbox.profile: missing; every job needs a profile (\"none\" opts "
                            "out explicitly; known: %s)", known ?: "?");
        prof = json_get(profiles, block->profile);
        if (!prof)
                return fail(ret_error, "sandbox.profile: unknown profile '%s' (known: %s)", block->profile,
                            known ?: "?");
        default_backend = json_object_get_string(json_get(prof, "default_backend"));
        backend = block->backend ?: default_backend;
        if (!backend || !json_get(backends, backend))
                return fail(ret_error, "sandbox.backend: unknown backend '%s' (known: %s)", backend ?: "(none)",
                            known_backends ?: "?");

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->profile = strdup(block->profile);
        if (!r->profile)
                return -ENOMEM;
        k = pick(json_get(prof, "backends"), block->backend, default_backend, "backend", &r->backend, ret_error);
        if (k < 0)
                return k;
        k = pick(json_get(p->profiles, "tiers"), block->tier,
                 json_object_get_string(json_get(prof, "default_tier")), "tier", &r->tier, ret_error);
        if (k < 0)
                return k;
        r->confined = json_object_get_boolean(json_get(prof, "confined"));
        r->fs = fs_posture_from_string(json_object_get_string(json_get(prof, "filesystem")));
        r->net = net_posture_from_string(json_object_get_string(json_get(prof, "network")));
        r->nofile = (uint64_t) json_object_get_int64(json_get(json_get(prof, "rlimits"), "nofile"));
        r->nproc = (uint64_t) json_object_get_int64(json_get(json_get(prof, "rlimits"), "nproc"));
        /* optional: best-effort where a policy file predates the field (policy_validate checks its value) */
        r->resource_view = json_get(prof, "resource_view")
                ? resource_view_mode_from_string(json_object_get_string(json_get(prof, "resource_view")))
                : RESOURCE_VIEW_BEST_EFFORT;
        r->on_sidecar_death = sidecar_death_from_string(json_object_get_string(json_get(prof, "on_sidecar_death")));
        where = strdupf("policy: profiles.%s.landlock", block->profile);
        if (!where)
                return -ENOMEM;
        k = landlock_profile_parse(json_get(prof, "landlock"), where, &r->landlock, ret_error);
        if (k < 0)
                return k;
        if (r->landlock.mode != LANDLOCK_OFF && !r->confined)
                return fail(ret_error, "policy: profile %s: landlock needs a confined profile", block->profile);

        /* optional: a profile's defaults that predate the knob get the built-in one */
        r->exec_concurrency = POLICY_EXEC_CONCURRENCY_DEFAULT;
        json_object_object_foreach(json_get(prof, "defaults"), dk, dv) {
                k = knob_apply(knobs, r, dk, dv, ret_error);
                if (k < 0)
                        return k;
        }
        k = images_allowed(prof, r);
        if (k < 0)
                return k;
        if (block->overrides) {
                if (!json_object_is_type(block->overrides, json_type_object))
                        return fail(ret_error, "sandbox.overrides: must be an object");
                json_object_object_foreach(block->overrides, ok, ov) {
                        k = knob_apply(knobs, r, ok, ov, ret_error);
                        if (k < 0)
                                return k;
                }
        }
        /* Where the payload's tasks live in the runtime's own kernel (gVisor's sandbox), the host's pids cgroup
         * counts only the runtime's host threads and stubs, never the payload's tasks; the runtime enforces
         * RLIMIT_NPROC itself, so there it is the job's task cap (docs/threat-model.md, "Task limits"). */
        r->host_pids_limit = r->pids_limit;
        provider = runtime_provider_find(r->backend);
        if (provider && provider->host_tasks) {
                r->nproc = MIN(r->nproc, r->pids_limit);
                r->host_pids_limit = provider->host_tasks(r->pids_limit);
        }
        *ret = TAKE_PTR(r);
        return 0;
}

ResolvedPolicy *resolved_policy_free(ResolvedPolicy *r) {
        if (!r)
                return NULL;
        free(r->profile);
        free(r->backend);
        free(r->tier);
        free(r->image);
        strv_free(r->images_allowed);
        landlock_profile_done(&r->landlock);
        free(r);
        return NULL;
}

/* "requires": what a worker must advertise (pondctl probe) to take the profile's jobs; dispatch.c adds the
 * backend's own sandbox.<backend>, so naming one here could only contradict the block's backend. */
static bool requires_is_valid(json_object *req) {
        if (!json_object_is_type(req, json_type_array) || json_object_array_length(req) > 32)
                return false;
        for (size_t i = 0; i < json_object_array_length(req); i++) {
                json_object *e = json_object_array_get_idx(req, i);
                const char *s = json_object_get_string(e);
                size_t n = s ? strlen(s) : 0;

                if (!json_object_is_type(e, json_type_string) || n == 0 || n > 64 ||
                    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._=-") != n || strncmp(s, "sandbox.", 8) == 0)
                        return false;
        }
        return true;
}

/* "images" is optional: without it a profile allows only its default image. */
static bool images_is_valid(json_object *a) {
        if (!a)
                return true;
        if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) > 256)
                return false;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *e = json_object_array_get_idx(a, i);
                const char *s = json_object_get_string(e);

                if (!json_object_is_type(e, json_type_string) || !(streq(s, "*") || image_knob_is_valid(s)))
                        return false;
        }
        return true;
}

/* Every profile must resolve with its own defaults and name only known postures and backends; a policy
 * file that does not is refused as a whole rather than half-applied. */
static int policy_validate(const Policy *p, char **ret_error) {
        json_object *profiles = json_get(p->profiles, "profiles"), *backends = json_get(p->profiles, "backends");

        if (!json_object_is_type(profiles, json_type_object) || !json_object_is_type(backends, json_type_object) ||
            !json_object_is_type(json_get(p->profiles, "knobs"), json_type_object) ||
            !json_object_is_type(json_get(p->profiles, "tiers"), json_type_array))
                return fail(ret_error, "policy: profiles.json needs objects profiles, knobs, backends and an "
                            "array tiers");
        json_object_object_foreach(profiles, name, prof) {
                SandboxBlock b = { .profile = name };
                _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;
                json_object *rl = json_get(prof, "rlimits"), *names = json_get(prof, "backends");
                int k;

                if (!json_object_is_type(json_get(prof, "confined"), json_type_boolean) ||
                    fs_posture_from_string(json_object_get_string(json_get(prof, "filesystem"))) < 0 ||
                    net_posture_from_string(json_object_get_string(json_get(prof, "network"))) < 0 ||
                    !json_object_is_type(json_get(prof, "defaults"), json_type_object) ||
                    !json_object_is_type(json_get(rl, "nofile"), json_type_int) ||
                    !json_object_is_type(json_get(rl, "nproc"), json_type_int) ||
                    json_object_get_int64(json_get(rl, "nofile")) <= 0 ||
                    json_object_get_int64(json_get(rl, "nproc")) <= 0)
                        return fail(ret_error, "policy: profile %s: needs confined, filesystem, network, "
                                    "defaults and positive rlimits.nofile/nproc", name);
                for (size_t i = 0; i < json_object_array_length(names); i++)
                        if (!json_get(backends, json_object_get_string(json_object_array_get_idx(names, i))))
                                return fail(ret_error, "policy: profile %s names an unknown backend", name);
                /* A confined profile can never run on the host network or filesystem. */
                if (json_object_get_boolean(json_get(prof, "confined")) &&
                    (streq(json_object_get_string(json_get(prof, "network")), "open") ||
                     streq(json_object_get_string(json_get(prof, "filesystem")), "host")))
                        return fail(ret_error, "policy: confined profile %s cannot have an open posture", name);
                if (json_get(prof, "resource_view") &&
                    resource_view_mode_from_string(json_object_get_string(json_get(prof, "resource_view"))) < 0)
                        return fail(ret_error, "policy: profile %s: resource_view must be \"required\" or "
                                    "\"best-effort\"", name);
                if (!images_is_valid(json_get(prof, "images")))
                        return fail(ret_error, "policy: profile %s: images must be an array of at most 256 "
                                    "image names, sha256 digests or \"*\"", name);
                if (sidecar_death_from_string(json_object_get_string(json_get(prof, "on_sidecar_death"))) < 0)
                        return fail(ret_error, "policy: profile %s: on_sidecar_death must be \"fail\" or "
                                    "\"record\"", name);
                if (!requires_is_valid(json_get(prof, "requires")))
                        return fail(ret_error, "policy: profile %s: requires must be an array of at most 32 "
                                    "capability names [a-z0-9._=-] other than sandbox.*", name);
                k = policy_resolve(p, &b, &r, ret_error);
                if (k < 0)
                        return k;
                if (!r->image || r->memory_bytes == 0 || r->cpus_milli == 0 || r->pids_limit == 0 ||
                    r->tmpfs_bytes == 0 || r->home_bytes == 0)
                        return fail(ret_error, "policy: profile %s: defaults must set every knob", name);
        }
        return 0;
}

static int load_json(const char *dir, const char *name, json_object **ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *buf = NULL, *err = NULL;
        size_t len;
        int r;

        if (dir)
                r = asprintf(&path, "%s/%s", dir, name) < 0 ? -ENOMEM : 0;
        else
                r = policy_file(name, &path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(ret_error, "policy: cannot look up %s in %s: %s", name, pond_dir(POND_DIR_CONFIG),
                            strerror(-r)), r;
        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r < 0)
                return fail(ret_error, "policy: cannot read %s: %s", path, strerror(-r)), r;
        r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, ret, &err);
        if (r < 0)
                return fail(ret_error, "policy: %s: %s", path, err ?: "invalid JSON"), r;
        return 0;
}

/* A profile may only name backends this build has a provider for: a policy that could send a job to a
 * backend nothing implements is refused when it is loaded, not when a job asks for that backend. */
static int policy_check_providers(const Policy *p, char **ret_error) {
        json_object *profiles = NULL;
        char known[128] = "";

        RUNTIME_PROVIDER_FOREACH(provider)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? ", " : "",
                         provider->name);
        if (!json_object_object_get_ex(p->profiles, "profiles", &profiles))
                return 0;
        json_object_object_foreach(profiles, name, prof) {
                json_object *backends = NULL;

                if (!json_object_object_get_ex(prof, "backends", &backends) ||
                    !json_object_is_type(backends, json_type_array))
                        continue;
                for (size_t i = 0; i < json_object_array_length(backends); i++) {
                        const char *b = json_object_get_string(json_object_array_get_idx(backends, i));
                        if (!runtime_provider_find(b))
                                return error_set(ret_error, -EINVAL, "policy: profile %s names backend '%s', "
                                                 "which no runtime provider implements (implemented: %s)",
                                                 name, b ?: "(none)", known);
                }
        }
        return 0;
}

int policy_load(const char *dir, Policy **ret, char **ret_error) {
        _cleanup_(policy_freep) Policy *p = NULL;
        int r;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        r = load_json(dir, "profiles.json", &p->profiles, ret_error);
        if (r < 0)
                return r;
        r = load_json(dir, "seccomp.json", &p->seccomp, ret_error);
        if (r < 0)
                return r;
        r = policy_validate(p, ret_error);
        if (r < 0)
                return r;
        r = policy_check_providers(p, ret_error);
        if (r < 0)
                return r;
        r = seccomp_policy_check(p->seccomp, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

Policy *policy_free(Policy *p) {
        if (!p)
                return NULL;
        json_object_put(p->profiles);
        json_object_put(p->seccomp);
        free(p);
        return NULL;
}
