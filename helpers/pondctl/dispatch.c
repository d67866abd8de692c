/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dispatch.c: routing a job honestly. The sandbox block is resolved by policy_resolve(), exactly as the
 * worker will resolve it again (the worker never trusts this result); on top of that the dispatch rules:
 * the profile's minimum capabilities, and the pool tags (policy/tags.c, which pond-run refuses by too). A
 * worker is eligible only when it advertises every required capability and carries every tag. */
#include <inttypes.h>

#include "basic/errmsg.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "dispatch.h"
#include "image/image-name.h"
#include "policy/spec.h"
#include "policy/tags.h"

/* A JSON array of strings as "a, b" (checked to hold strings only by the caller). */
static char *json_strings_join(json_object *a) {
        _cleanup_free_ char **l = calloc(json_object_array_length(a) + 1, sizeof(char *));

        if (!l)
                return NULL;
        for (size_t i = 0; i < json_object_array_length(a); i++)
                l[i] = (char *) json_object_get_string(json_object_array_get_idx(a, i));
        return tags_join(l);
}

/* The profile's "requires" (checked by policy_validate()) plus the backend's own capability. */
static int capabilities_for(const Policy *p, const ResolvedPolicy *r, char ***ret, char **ret_backend) {
        _cleanup_strv_free_ char **caps = NULL;
        _cleanup_free_ char *backend = NULL;
        json_object *req = json_get(json_get(json_get(p->profiles, "profiles"), r->profile), "requires");

        if (asprintf(&backend, "sandbox.%s", r->backend) < 0 || strv_add_unique(&caps, backend) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(req); i++)
                if (strv_add_unique(&caps, json_object_get_string(json_object_array_get_idx(req, i))) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(caps);
        *ret_backend = TAKE_PTR(backend);
        return 0;
}

static int add_u64(json_object *o, const char *key, uint64_t v) {
        return json_object_object_add(o, key, json_object_new_int64((int64_t) v));
}

/* Every knob written out in a form policy_resolve() reads back to the same values: the block the
 * worker re-resolves is the block that was checked here. */
static json_object *normalized_block(const ResolvedPolicy *r, char *const *allow_hosts) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *knobs = json_object_new_object(), *hosts = json_object_new_array();

        if (!o || !knobs || !hosts) {
                json_object_put(knobs);
                json_object_put(hosts);
                return NULL;
        }
        json_object_object_add(o, "profile", json_object_new_string(r->profile));
        json_object_object_add(o, "backend", json_object_new_string(r->backend));
        json_object_object_add(o, "tier", json_object_new_string(r->tier));
        add_u64(knobs, "memory", r->memory_bytes);
        if (r->cpus_milli % 1000 == 0)
                add_u64(knobs, "cpus", r->cpus_milli / 1000);
        else
                json_object_object_add(knobs, "cpus",
                                       json_object_new_double((double) r->cpus_milli / 1000.0));
        add_u64(knobs, "pids_limit", r->pids_limit);
        add_u64(knobs, "tmpfs_size", r->tmpfs_bytes);
        add_u64(knobs, "home_size", r->home_bytes);
        add_u64(knobs, "exec_concurrency", r->exec_concurrency);
        json_object_object_add(knobs, "image", json_object_new_string(r->image));
        json_object_object_add(o, "overrides", knobs);
        for (char *const *h = allow_hosts; h && *h; h++)
                json_object_array_add(hosts, json_object_new_string(*h));
        json_object_object_add(o, "allow_hosts", hosts);
        return TAKE_PTR(o);
}

int dispatch_check(const Policy *p, json_object *block, const char *tenant, DispatchDecision **ret,
                   char **ret_error) {
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
        _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;
        _cleanup_(sandbox_block_done) SandboxBlock b = {};
        int k;

        if (tenant && !tag_tenant_is_valid(tenant))
                return error_set(ret_error, -EINVAL,
                                 "--tenant: '%s' must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}", tenant);
        k = sandbox_block_from_json(block, "sandbox", &b, ret_error);
        if (k < 0)
                return k;
        k = policy_resolve(p, &b, &r, ret_error);
        if (k < 0)
                return k;
        d = calloc(1, sizeof *d);
        if (!d)
                return -ENOMEM;
        k = tags_required(r, &b, tenant, &d->required_tags, ret_error);
        if (k < 0)
                return k;
        k = capabilities_for(p, r, &d->required_capabilities, &d->required_capability);
        if (k < 0)
                return k;
        d->sandbox_block = normalized_block(r, b.allow_hosts);
        if (!d->sandbox_block)
                return -ENOMEM;
        *ret = TAKE_PTR(d);
        return 0;
}

DispatchDecision *dispatch_decision_free(DispatchDecision *d) {
        if (!d)
                return NULL;
        json_object_put(d->sandbox_block);
        free(d->required_capability);
        strv_freep(&d->required_capabilities);
        strv_freep(&d->required_tags);
        free(d);
        return NULL;
}

static json_object *strv_json(char *const *l) {
        json_object *a = json_object_new_array();

        for (; a && l && *l; l++)
                json_object_array_add(a, json_object_new_string(*l));
        return a;
}

int dispatch_decision_to_json(const DispatchDecision *d, json_object **ret) {
        json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "sandbox_block", json_object_get(d->sandbox_block));
        json_object_object_add(o, "required_capability", json_object_new_string(d->required_capability));
        json_object_object_add(o, "required_capabilities", strv_json(d->required_capabilities));
        json_object_object_add(o, "required_tags", strv_json(d->required_tags));
        *ret = o;
        return 0;
}

/* "name=N" with N all digits: the name's length, and N in *ret_n; else 0. */
static size_t leveled(const char *s, uint64_t *ret_n) {
        const char *eq = strchr(s, '=');
        char *end = NULL;

        if (!eq || eq == s || !eq[1] || strspn(eq + 1, "0123456789") != strlen(eq + 1) || strlen(eq + 1) > 9)
                return 0;
        *ret_n = strtoull(eq + 1, &end, 10);
        return (size_t) (eq - s);
}

static bool capability_met(const char *required, json_object *caps) {
        uint64_t need = 0, have = 0;
        size_t n = leveled(required, &need);

        for (size_t i = 0; i < json_object_array_length(caps); i++) {
                const char *c = json_object_get_string(json_object_array_get_idx(caps, i));
                if (streq(c, required))
                        return true;
                if (n > 0 && leveled(c, &have) == n && strncmp(c, required, n) == 0 && have >= need)
                        return true;
        }
        return false;
}

/* An imported image the block names (a digest, or a repo:tag) must be one the worker's probe lists:
 * "host" and bare directory-image names are on every worker that has them, the probe cannot tell. */
static bool image_present(const char *image, json_object *images) {
        bool digest = digest_is_valid(image);

        if (!image || streq(image, "host") || (!digest && !strchr(image, ':')))
                return true;
        for (size_t i = 0; json_object_is_type(images, json_type_array) && i < json_object_array_length(images);
             i++) {
                json_object *e = json_object_array_get_idx(images, i), *names = json_get(e, "names");

                if (digest && streq(json_get_str(e, "digest") ?: "", image))
                        return true;
                for (size_t k = 0; !digest && json_object_is_type(names, json_type_array) &&
                                   k < json_object_array_length(names); k++)
                        if (streq(json_object_get_string(json_object_array_get_idx(names, k)) ?: "", image))
                                return true;
        }
        return false;
}

/* The probe's "tags" (what worker.json gave the worker, docs/dispatch.md); none if it has no such key. */
static int probe_tags(json_object *probe, char ***ret, char **ret_reason) {
        json_object *a = json_get(probe, "tags");
        _cleanup_strv_free_ char **tags = calloc(1, sizeof(char *));

        if (!tags)
                return -ENOMEM;
        if (a && (!json_object_is_type(a, json_type_array) || json_object_array_length(a) > TAGS_MAX))
                return error_set(ret_reason, -EINVAL, "worker probe: tags is not an array of at most %d tags",
                                 TAGS_MAX);
        for (size_t i = 0; a && i < json_object_array_length(a); i++) {
                json_object *t = json_object_array_get_idx(a, i);

                if (!json_object_is_type(t, json_type_string) || !tag_is_valid(json_object_get_string(t)))
                        return error_set(ret_reason, -EINVAL, "worker probe: tags[%zu] is not a tag", i);
                if (strv_add_unique(&tags, json_object_get_string(t)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(tags);
        return 0;
}

int dispatch_worker_eligible(const DispatchDecision *d, json_object *probe, char *const *worker_tags,
                             char **ret_reason) {
        json_object *caps = json_get(probe, "capabilities");
        _cleanup_strv_free_ char **own = NULL;
        const char *image, *missing;
        int r;

        if (!json_object_is_type(probe, json_type_object) || !json_object_is_type(caps, json_type_array) ||
            !json_object_is_type(json_get(probe, "probe_version"), json_type_int) ||
            json_object_get_int(json_get(probe, "probe_version")) != 1)
                return error_set(ret_reason, -EINVAL, "worker probe: not a pondctl probe --json document "
                                 "(probe_version 1 with a capabilities array)");
        for (size_t i = 0; i < json_object_array_length(caps); i++)
                if (!json_object_is_type(json_object_array_get_idx(caps, i), json_type_string))
                        return error_set(ret_reason, -EINVAL,
                                         "worker probe: capabilities[%zu] is not a string", i);
        if (!worker_tags) {
                r = probe_tags(probe, &own, ret_reason);
                if (r < 0)
                        return r;
                worker_tags = own;
        }
        for (char **c = d->required_capabilities; c && *c; c++)
                if (!capability_met(*c, caps)) {
                        _cleanup_free_ char *has = json_strings_join(caps);
                        error_set(ret_reason, -EINVAL, "worker lacks capability '%s' (it advertises: %s)", *c,
                                  has ?: "?");
                        return 0;
                }
        missing = tags_first_missing(d->required_tags, worker_tags);
        if (missing) {
                _cleanup_free_ char *has = tags_join(worker_tags);
                error_set(ret_reason, -EINVAL, "worker lacks tag '%s' (it has: %s)", missing, has ?: "?");
                return 0;
        }
        image = json_get_str(json_get(d->sandbox_block, "overrides"), "image");
        if (!image_present(image, json_get(probe, "images"))) {
                error_set(ret_reason, -EINVAL, "worker does not have image '%s' (pondctl probe lists the images "
                          "present)", image);
                return 0;
        }
        return 1;
}
