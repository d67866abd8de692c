/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-oci.c: libFuzzer target for the image documents pond reads from an import (oci-json.c: index,
 * manifest, config, docker-archive's manifest.json): no input may crash or leak, an accepted document
 * holds only valid digests and layer media types within the bounds, a refusal always says why. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "image/oci-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, char **error) {
        if (r < 0 && r != -ENOMEM && !*error)
                abort();        /* a refusal without a reason */
        free(*error);
        *error = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *buf = (const char *) data;
        char *error = NULL;
        OciIndex i = {};
        OciManifest m = {};
        OciConfig c = {};
        DockerImage d = {};
        int r;

        r = oci_index_parse(buf, size, &i, &error);
        check(r, &error);
        for (size_t k = 0; r >= 0 && k < i.n_manifests; k++)
                if (!digest_is_valid(i.manifests[k].digest) || i.n_manifests > OCI_MAX_MANIFESTS)
                        abort();
        oci_index_done(&i);

        r = oci_manifest_parse(buf, size, &m, &error);
        check(r, &error);
        if (r >= 0 && (!digest_is_valid(m.config.digest) || m.n_layers > OCI_MAX_LAYERS))
                abort();
        for (size_t k = 0; r >= 0 && k < m.n_layers; k++)
                if (!digest_is_valid(m.layers[k].digest) || !oci_layer_media_type_ok(m.layers[k].media_type))
                        abort();
        oci_manifest_done(&m);

        r = oci_config_parse(buf, size, &c, &error);
        check(r, &error);
        for (size_t k = 0; r >= 0 && k < c.n_diff_ids; k++)
                if (!digest_is_valid(c.diff_ids[k]))
                        abort();
        oci_config_done(&c);

        r = docker_manifest_parse(buf, size, &d, &error);
        check(r, &error);
        if (r >= 0 && (!d.config || d.n_layers > OCI_MAX_LAYERS))
                abort();
        docker_image_done(&d);
        return 0;
}
