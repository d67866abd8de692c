/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* slurm-node.c: a worker as a Slurm node: the Features its probe and tags amount to, and the CPUs and
 * memory Slurm may allocate within its admission ceiling; and the one mapping from a capability or tag to
 * a feature name that slurm-request.c asks for. */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/image-name.h"
#include "slurm.h"

static const struct {
        const char *pond;       /* a capability or tag prefix */
        const char *slurm;      /* its feature prefix */
} feature_prefixes[] = {
        { "sandbox.", "sb_" },
        { "landlock.abi=", "landlock" },
        { "pool:", "pool_" },
        { "tenant:", "tenant_" },
};

/* prefix + s with every character outside [A-Za-z0-9_] as '_'. */
static int feature_name(const char *prefix, const char *s, char **ret) {
        char *f;

        if (asprintf(&f, "%s%s", prefix, s) < 0)
                return -ENOMEM;
        for (char *c = f + strlen(prefix); *c; c++)
                if (!isalnum((unsigned char) *c) && *c != '_')
                        *c = '_';
        *ret = f;
        return 0;
}

int slurm_feature_for(const char *name, char **ret) {
        for (size_t i = 0; i < ELEMENTSOF(feature_prefixes); i++)
                if (strncmp(name, feature_prefixes[i].pond, strlen(feature_prefixes[i].pond)) == 0)
                        return feature_name(feature_prefixes[i].slurm, name + strlen(feature_prefixes[i].pond),
                                            ret);
        return feature_name(strchr(name, ':') ? "tag_" : "cap_", name, ret);
}

int slurm_image_feature(const char *digest, char **ret) {
        if (!digest || !digest_is_valid(digest) || strncmp(digest, "sha256:", 7) != 0)
                return -EINVAL;
        return asprintf(ret, "img_%.*s", SLURM_IMAGE_FEATURE_HEX, digest + 7) < 0 ? -ENOMEM : 0;
}

/* "name=N" (N decimal, 1..SLURM_LEVEL_MAX): N; else 0. */
static unsigned capability_level(const char *c) {
        const char *eq = strchr(c, '=');
        char *end = NULL;
        unsigned long n;

        if (!eq || !isdigit((unsigned char) eq[1]))
                return 0;
        n = strtoul(eq + 1, &end, 10);
        return *end || n > SLURM_LEVEL_MAX ? 0 : (unsigned) n;
}

/* A capability's features: a leveled one "name=N" at every level 1..N, so that a constraint for level K is
 * met by every node at K or above (as dispatch-check compares levels). */
static int add_capability(const char *c, char ***features) {
        unsigned level = capability_level(c);
        _cleanup_free_ char *f = NULL;
        int r;

        if (level == 0) {
                r = slurm_feature_for(c, &f);
                return r < 0 ? r : strv_add_unique(features, f);
        }
        for (unsigned k = 1; k <= level; k++) {
                _cleanup_free_ char *at = NULL, *fk = NULL;

                if (asprintf(&at, "%.*s%u", (int) (strchr(c, '=') - c + 1), c, k) < 0)
                        return -ENOMEM;
                r = slurm_feature_for(at, &fk);
                if (r < 0 || (r = strv_add_unique(features, fk)) < 0)
                        return r;
        }
        return 0;
}

static int add_images(json_object *images, char ***features) {
        for (size_t i = 0; json_object_is_type(images, json_type_array) && i < json_object_array_length(images);
             i++) {
                _cleanup_free_ char *f = NULL;
                int r = slurm_image_feature(json_get_str(json_object_array_get_idx(images, i), "digest"), &f);

                if (r == -EINVAL)
                        continue; /* not an image pond could pin: nothing to route by */
                if (r < 0 || (r = strv_add_unique(features, f)) < 0)
                        return r;
        }
        return 0;
}

int slurm_node_features(json_object *probe, char *const *tags, char ***ret, char **ret_error) {
        json_object *caps = json_get(probe, "capabilities");
        _cleanup_strv_free_ char **features = NULL;
        int r;

        if (!json_object_is_type(caps, json_type_array) || json_object_get_int(json_get(probe, "probe_version")) != 1)
                return error_set(ret_error, -EINVAL, "worker probe: not a pondctl probe --json document "
                                 "(probe_version 1 with a capabilities array)");
        for (size_t i = 0; i < json_object_array_length(caps); i++) {
                json_object *c = json_object_array_get_idx(caps, i);

                if (!json_object_is_type(c, json_type_string))
                        return error_set(ret_error, -EINVAL, "worker probe: capabilities[%zu] is not a string", i);
                r = add_capability(json_object_get_string(c), &features);
                if (r < 0)
                        return r;
        }
        for (; tags && *tags; tags++) {
                _cleanup_free_ char *f = NULL;

                r = slurm_feature_for(*tags, &f);
                if (r < 0 || (r = strv_add_unique(&features, f)) < 0)
                        return r;
        }
        r = add_images(json_get(probe, "images"), &features);
        if (r < 0)
                return r;
        if (!features && strv_build(&features, NULL) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(features);
        return 0;
}

int slurm_node_resources(const AdmissionPolicy *p, unsigned host_cpus, uint64_t host_memory_bytes,
                         SlurmNodeResources *ret, char **ret_error) {
        uint64_t cpus = host_cpus, memory = host_memory_bytes;

        if (p->max_cpus_milli)
                cpus = MIN(cpus, p->max_cpus_milli / 1000);
        if (p->max_jobs)
                cpus = MIN(cpus, p->max_jobs);
        if (p->max_memory_bytes)
                memory = MIN(memory, p->max_memory_bytes);
        if (cpus == 0)
                return error_set(ret_error, -EINVAL, "the admission ceiling leaves less than one whole CPU "
                                 "(host %u, max_cpus %" PRIu64 ".%03" PRIu64 "): Slurm allocates whole CPUs",
                                 host_cpus, p->max_cpus_milli / 1000, p->max_cpus_milli % 1000);
        if (memory >> 20 == 0)
                return error_set(ret_error, -EINVAL, "the admission ceiling leaves less than 1 MiB of memory");
        *ret = (SlurmNodeResources) { .cpus = (unsigned) cpus, .memory_mib = memory >> 20 };
        return 0;
}
