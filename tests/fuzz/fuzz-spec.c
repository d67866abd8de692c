/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-spec.c: libFuzzer target for job_spec_parse() (and so json_parse_strict()): no input may crash,
 * leak, or be accepted without a complete spec, nor refused without a reason. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "basic/jobid.h"
#include "basic/macro.h"
#include "policy/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool has_dotdot(const char *path) {
        for (const char *p = path;; p++) {
                if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2]) && (p == path || p[-1] == '/'))
                        return true;
                if (!*p)
                        return false;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = job_spec_parse((const char *) data, size, &s, &error);
        if (r < 0) {
                /* Every refusal but OOM says why. */
                if (r != -ENOMEM && !error)
                        abort();
                if (s)
                        abort();
                return 0;
        }
        /* What the rest of pond relies on after a successful parse. */
        if (error || !s || !job_id_is_valid(s->job_id) || !s->tenant || !s->command || !s->command[0] ||
            !s->command[0][0] || !s->env || !s->outputs || !s->sandbox.allow_hosts)
                abort();
        if (s->limits.wall_clock_s < 1 || s->limits.wall_clock_s > JOB_SPEC_MAX_WALL_CLOCK_S ||
            s->limits.output_bytes < 1 || s->limits.output_bytes > JOB_SPEC_MAX_OUTPUT_BYTES ||
            s->limits.artifact_bytes < 1 || s->limits.artifact_bytes > JOB_SPEC_MAX_ARTIFACT_BYTES ||
            s->limits.artifact_files < 1 || s->limits.artifact_files > JOB_SPEC_MAX_ARTIFACT_FILES)
                abort();
        for (char **o = s->outputs; *o; o++)
                if ((*o)[0] == '/' || has_dotdot(*o))
                        abort();
        if (s->checkout && s->checkout[0] != '/')
                abort();
        return 0;
}
