/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-policy.c: libFuzzer target for the sandbox block as the dispatcher writes it: json_parse_strict(),
 * sandbox_block_from_json() and policy_resolve() against the real policy/ directory. No input may crash or
 * leak, be refused without a reason, or resolve to a policy outside the bounds policy/profiles.json sets
 * (the knobs' min and max, a known profile, backend, tier and posture, confined unless profile "none"). */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "policy/policy.h"
#include "policy/spec.h"

#ifndef POND_SOURCE_ROOT
#error "POND_SOURCE_ROOT must name the source tree (for policy/)"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Policy *policy;
static struct {
        uint64_t memory_min, memory_max, tmpfs_min, tmpfs_max, home_min, home_max;
        uint64_t cpus_milli_min, cpus_milli_max, pids_min, pids_max;
} bounds;

static json_object *knob(const char *name, const char *which) {
        return json_get(json_get(json_get(policy->profiles, "knobs"), name), which);
}

static uint64_t knob_size(const char *name, const char *which) {
        uint64_t v;
        if (parse_size(json_object_get_string(knob(name, which)), &v) < 0)
                abort();
        return v;
}

static double knob_number(const char *name, const char *which) {
        json_object *v = knob(name, which);
        if (!v)
                abort();
        return json_object_get_double(v);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        char *error = NULL;

        if (policy_load(POND_SOURCE_ROOT "/policy", &policy, &error) < 0) {
                fprintf(stderr, "fuzz-policy: cannot load %s/policy: %s\n", POND_SOURCE_ROOT, error ?: "?");
                abort();
        }
        bounds.memory_min = knob_size("memory", "min");
        bounds.memory_max = knob_size("memory", "max");
        bounds.tmpfs_min = knob_size("tmpfs_size", "min");
        bounds.tmpfs_max = knob_size("tmpfs_size", "max");
        bounds.home_min = knob_size("home_size", "min");
        bounds.home_max = knob_size("home_size", "max");
        /* cpus are kept in thousandths: allow the rounding either way */
        bounds.cpus_milli_min = (uint64_t) floor(knob_number("cpus", "min") * 1000.0);
        bounds.cpus_milli_max = (uint64_t) ceil(knob_number("cpus", "max") * 1000.0);
        bounds.pids_min = (uint64_t) knob_number("pids_limit", "min");
        bounds.pids_max = (uint64_t) knob_number("pids_limit", "max");
        return 0;
}

static bool in_array(json_object *a, const char *s) {
        for (size_t i = 0; i < json_object_array_length(a); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(a, i)), s))
                        return true;
        return false;
}

static void check_resolved(const SandboxBlock *b, const ResolvedPolicy *r) {
        json_object *prof;

        if (!r->profile || !r->backend || !r->tier || !r->image || !b->profile || !streq(r->profile, b->profile))
                abort();
        prof = json_get(json_get(policy->profiles, "profiles"), r->profile);
        if (!prof || !in_array(json_get(prof, "backends"), r->backend) ||
            !json_get(json_get(policy->profiles, "backends"), r->backend) ||
            !in_array(json_get(policy->profiles, "tiers"), r->tier))
                abort();
        if (b->backend && !streq(b->backend, r->backend))
                abort();
        if (b->tier && !streq(b->tier, r->tier))
                abort();
        if (r->confined != !streq(r->profile, "none"))
                abort();
        if (r->fs < 0 || r->fs >= _FS_POSTURE_MAX || r->net < 0 || r->net >= _NET_POSTURE_MAX)
                abort();
        if (r->memory_bytes < bounds.memory_min || r->memory_bytes > bounds.memory_max ||
            r->tmpfs_bytes < bounds.tmpfs_min || r->tmpfs_bytes > bounds.tmpfs_max ||
            r->home_bytes < bounds.home_min || r->home_bytes > bounds.home_max ||
            r->cpus_milli < bounds.cpus_milli_min || r->cpus_milli > bounds.cpus_milli_max ||
            r->cpus_milli == 0 || r->pids_limit < bounds.pids_min || r->pids_limit > bounds.pids_max)
                abort();
        if (r->nofile == 0 || r->nproc == 0 || r->image[0] == '\0')
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_(sandbox_block_done) SandboxBlock b = {};
        _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;
        _cleanup_free_ char *error = NULL;
        int k;

        k = json_parse_strict((const char *) data, size, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, &error);
        if (k < 0) {
                if (k != -ENOMEM && !error)
                        abort();
                if (o)
                        abort();
                return 0;
        }
        if (error)
                abort();

        k = sandbox_block_from_json(o, NULL, &b, &error);
        if (k < 0) {
                /* on failure the block is untouched */
                if ((k != -ENOMEM && !error) || b.profile || b.backend || b.tier || b.overrides || b.allow_hosts)
                        abort();
                return 0;
        }
        if (error || !b.allow_hosts)
                abort();

        k = policy_resolve(policy, &b, &r, &error);
        if (k < 0) {
                if ((k != -ENOMEM && !error) || r)
                        abort();
                return 0;
        }
        if (error || !r)
                abort();
        check_resolved(&b, r);
        return 0;
}
