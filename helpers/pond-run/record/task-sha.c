/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* task-sha.c: task_sha, the identity of a job's task apart from its id (task-sha.h): what quorum re-runs of one
 * job on several workers share, while their input_sha (which covers the spec's bytes, id included) differs. */
#include <string.h>
#include <json-c/json.h>

#include "basic/json-strict.h"
#include "basic/macro.h"
#include "record/task-sha.h"

int task_sha_compute(const char *spec, size_t spec_len, const uint8_t tree[SHA256_SIZE],
                     char ret_hex[SHA256_HEX_SIZE]) {
        static const char *const per_run[] = { "job_id", "checkout", "bundle", "credentials" };
        _cleanup_json_ json_object *o = NULL;
        uint8_t buf[sizeof TASK_SHA_DOMAIN - 1 + 2 * SHA256_SIZE], d[SHA256_SIZE];
        const char *text;
        int r;

        if (!spec || !tree)
                return -EINVAL;
        r = json_parse_strict(spec, spec_len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, NULL);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(per_run); i++)
                json_object_object_del(o, per_run[i]);
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return -ENOMEM;
        memcpy(buf, TASK_SHA_DOMAIN, sizeof TASK_SHA_DOMAIN - 1);
        sha256_bytes(text, strlen(text), buf + sizeof TASK_SHA_DOMAIN - 1);
        memcpy(buf + sizeof TASK_SHA_DOMAIN - 1 + SHA256_SIZE, tree, SHA256_SIZE);
        sha256_bytes(buf, sizeof buf, d);
        hex_encode(d, sizeof d, ret_hex);
        return 0;
}
