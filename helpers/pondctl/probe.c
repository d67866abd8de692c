/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* probe.c: runs every host check (probe-backend.c, probe-kernel.c, probe-cgroup.c), derives the
 * capabilities a worker may advertise from their results alone, and renders the report as JSON (stable
 * keys, read by dispatch-check --worker) and as text. */
#include <fcntl.h>

#include "basic/string-util.h"
#include "probe.h"

#define PROBE_JSON_VERSION 1

/* Only what was shown to work: a backend whose trivial container failed, a controller on a read-only
 * hierarchy, a feature that answered with an error, none of these is advertised. */
int host_probe_derive_capabilities(HostProbe *p) {
        _cleanup_strv_free_ char **caps = calloc(1, sizeof(char *));
        int r = 0;

        if (!caps)
                return -ENOMEM;
        for (size_t b = 0; b < p->n_backends && r >= 0; b++)
                if (p->backends[b].present && p->backends[b].works)
                        r = strv_push(&caps, strdupf("sandbox.%s", p->backends[b].name));
        for (ProbeController c = 0; c < _PROBE_CONTROLLER_MAX && r >= 0; c++)
                if (p->cgroup.usable[c])
                        r = strv_push(&caps, strdupf("cgroup.%s", probe_controller_to_string(c)));
        if (r >= 0 && p->seccomp.available)
                r = strv_push(&caps, strdup("seccomp"));
        if (r >= 0 && p->landlock_abi > 0)
                r = strv_push(&caps, strdupf("landlock.abi=%u", p->landlock_abi));
        if (r >= 0 && p->nftables.available)
                r = strv_push(&caps, strdup("nftables"));
        if (r >= 0 && p->kvm.available)
                r = strv_push(&caps, strdup("kvm"));
        if (r >= 0 && p->userns.available)
                r = strv_push(&caps, strdup("userns"));
        if (r >= 0 && p->systemd.available)
                r = strv_push(&caps, strdup("systemd"));
        if (r >= 0 && p->resource_view.available)
                r = strv_push(&caps, strdup("resource_view.lxcfs"));
        if (r < 0)
                return r;
        strv_freep(&p->capabilities);
        p->capabilities = TAKE_PTR(caps);
        return 0;
}

int host_probe_new(HostProbe **ret) {
        _cleanup_(host_probe_freep) HostProbe *p = calloc(1, sizeof *p);

        if (!p)
                return -ENOMEM;
        p->backends = calloc(runtime_provider_count(), sizeof *p->backends);
        if (!p->backends)
                return -ENOMEM;
        RUNTIME_PROVIDER_FOREACH(provider)
                p->backends[p->n_backends++] = (ProbeBackendResult) { .name = provider->name };
        *ret = TAKE_PTR(p);
        return 0;
}

ProbeBackendResult *host_probe_backend(const HostProbe *p, const char *name) {
        for (size_t b = 0; b < p->n_backends; b++)
                if (streq(p->backends[b].name, name))
                        return &p->backends[b];
        return NULL;
}

int host_probe(const ProbeOptions *o, HostProbe **ret) {
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        static const ProbeOptions defaults = {};
        size_t b = 0;
        int r;

        r = host_probe_new(&p);
        if (r < 0)
                return r;
        o = o ?: &defaults;
        probe_kvm(&p->kvm);
        RUNTIME_PROVIDER_FOREACH(provider)
                probe_backend(provider, o, &p->backends[b++]);
        probe_landlock(&p->landlock_abi, &p->landlock_reason);
        probe_seccomp(&p->seccomp);
        probe_cgroup(o->cgroup_root ?: CGROUP_ROOT, &p->cgroup);
        probe_nftables(&p->nftables);
        probe_userns(&p->userns);
        probe_systemd(&p->systemd);
        probe_resource_view(&p->resource_view);
        r = host_probe_derive_capabilities(p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

static void feature_done(ProbeFeature *f) {
        free(f->detail);
        free(f->reason);
}

HostProbe *host_probe_free(HostProbe *p) {
        if (!p)
                return NULL;
        for (size_t b = 0; b < p->n_backends; b++)
                probe_backend_done(&p->backends[b]);
        free(p->backends);
        for (ProbeController c = 0; c < _PROBE_CONTROLLER_MAX; c++)
                free(p->cgroup.reason[c]);
        feature_done(&p->kvm);
        feature_done(&p->seccomp);
        feature_done(&p->nftables);
        feature_done(&p->userns);
        feature_done(&p->systemd);
        feature_done(&p->resource_view);
        free(p->landlock_reason);
        strv_freep(&p->capabilities);
        free(p);
        return NULL;
}

static json_object *str_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

static json_object *backend_json(const ProbeBackendResult *b) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "present", json_object_new_boolean(b->present));
        json_object_object_add(o, "path", str_or_null(b->path));
        json_object_object_add(o, "version", str_or_null(b->version));
        json_object_object_add(o, "works", json_object_new_boolean(b->works));
        json_object_object_add(o, "platform", str_or_null(b->platform));
        json_object_object_add(o, "reason", str_or_null(b->reason));
        return o;
}

static json_object *feature_json(const ProbeFeature *f, const char *detail_key) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "available", json_object_new_boolean(f->available));
        json_object_object_add(o, detail_key, str_or_null(f->detail));
        json_object_object_add(o, "reason", str_or_null(f->reason));
        return o;
}

static json_object *cgroup_json(const ProbeCgroup *c) {
        json_object *o = json_object_new_object(), *ctrls = json_object_new_object();

        if (!o || !ctrls) {
                json_object_put(o);
                json_object_put(ctrls);
                return NULL;
        }
        json_object_object_add(o, "layout", json_object_new_string(cgroup_layout_to_string(c->layout)));
        for (ProbeController k = 0; k < _PROBE_CONTROLLER_MAX; k++) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "usable", json_object_new_boolean(c->usable[k] > 0));
                json_object_object_add(e, "version", c->usable[k] ? json_object_new_int(c->usable[k]) : NULL);
                json_object_object_add(e, "reason", str_or_null(c->reason[k]));
                json_object_object_add(ctrls, probe_controller_to_string(k), e);
        }
        json_object_object_add(o, "controllers", ctrls);
        return o;
}

int host_probe_to_json(const HostProbe *p, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *backends = json_object_new_object(), *ll = json_object_new_object();
        json_object *caps = json_object_new_array();

        if (!o || !backends || !ll || !caps) {
                json_object_put(backends);
                json_object_put(ll);
                json_object_put(caps);
                return -ENOMEM;
        }
        json_object_object_add(o, "probe_version", json_object_new_int(PROBE_JSON_VERSION));
        for (size_t b = 0; b < p->n_backends; b++)
                json_object_object_add(backends, p->backends[b].name, backend_json(&p->backends[b]));
        json_object_object_add(o, "backends", backends);
        json_object_object_add(o, "kvm", feature_json(&p->kvm, "api_version"));
        json_object_object_add(ll, "available", json_object_new_boolean(p->landlock_abi > 0));
        json_object_object_add(ll, "abi", json_object_new_int((int) p->landlock_abi));
        json_object_object_add(ll, "reason", str_or_null(p->landlock_reason));
        json_object_object_add(o, "landlock", ll);
        json_object_object_add(o, "seccomp", feature_json(&p->seccomp, "actions"));
        json_object_object_add(o, "cgroup", cgroup_json(&p->cgroup));
        json_object_object_add(o, "nftables", feature_json(&p->nftables, "version"));
        json_object_object_add(o, "userns", feature_json(&p->userns, "limit"));
        json_object_object_add(o, "systemd", feature_json(&p->systemd, "version"));
        json_object_object_add(o, "resource_view", feature_json(&p->resource_view, "detail"));
        for (char **c = p->capabilities; c && *c; c++)
                json_object_array_add(caps, json_object_new_string(*c));
        json_object_object_add(o, "capabilities", caps);
        *ret = TAKE_PTR(o);
        return 0;
}

static void print_feature(FILE *f, const char *name, const ProbeFeature *x) {
        if (x->available)
                fprintf(f, "%-10s yes%s%s\n", name, x->detail ? ", " : "", x->detail ?: "");
        else
                fprintf(f, "%-10s no: %s\n", name, x->reason ?: "?");
}

void host_probe_print(const HostProbe *p, FILE *f) {
        for (size_t b = 0; b < p->n_backends; b++) {
                const ProbeBackendResult *r = &p->backends[b];
                fprintf(f, "%-10s %s", r->name,
                        !r->present ? "absent" : r->works ? "works" : "BROKEN");
                if (r->present)
                        fprintf(f, " (%s, %s)", r->path, r->version ?: "version unknown");
                if (r->platform)
                        fprintf(f, " platform %s", r->platform);
                if (r->reason)
                        fprintf(f, ": %s", r->reason);
                fputc('\n', f);
        }
        print_feature(f, "kvm", &p->kvm);
        if (p->landlock_abi > 0)
                fprintf(f, "%-10s ABI %u\n", "landlock", p->landlock_abi);
        else
                fprintf(f, "%-10s no: %s\n", "landlock", p->landlock_reason ?: "?");
        print_feature(f, "seccomp", &p->seccomp);
        fprintf(f, "%-10s %s;", "cgroup", cgroup_layout_to_string(p->cgroup.layout));
        for (ProbeController c = 0; c < _PROBE_CONTROLLER_MAX; c++)
                if (p->cgroup.usable[c])
                        fprintf(f, " %s(v%d)", probe_controller_to_string(c), p->cgroup.usable[c]);
        fputc('\n', f);
        for (ProbeController c = 0; c < _PROBE_CONTROLLER_MAX; c++)
                if (!p->cgroup.usable[c])
                        fprintf(f, "%-10s   %s unusable: %s\n", "", probe_controller_to_string(c),
                                p->cgroup.reason[c] ?: "?");
        print_feature(f, "nftables", &p->nftables);
        print_feature(f, "userns", &p->userns);
        print_feature(f, "systemd", &p->systemd);
        print_feature(f, "view", &p->resource_view);
        fprintf(f, "%-10s", "advertise");
        for (char **c = p->capabilities; c && *c; c++)
                fprintf(f, " %s", *c);
        fputc('\n', f);
}
