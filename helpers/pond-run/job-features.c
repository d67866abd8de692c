/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-features.c: the one table of pond-run's features and the phases they hook, in the order they run.
 * A phase calls job_features_<phase>() and names no feature; a feature owns its part of the Job and is
 * called only through here (or by the phase that owns the step it serves, never back up). */
#include "job.h"

static const JobFeature job_features[] = {
        { .name = "bundle", .accept = job_accept_bundle, .refusal = "bundle: refused" },
        { .name = "sidecars", .accept = job_sidecars_configure, .refusal = "sidecar configuration: refused" },
        { .name = "broker", .accept = job_broker_accept },
        { .name = "home", .accept = job_home_accept, .refusal = "home_files: refused", .bundle = job_home },
        { .name = "console", .accept = job_console_accept, .refusal = "tty: refused" },
        { .name = "runtime", .watch = job_runtime_watch },
        { .name = "resview", .accept = job_resview_accept, .refusal = "resource_view: refused",
          .bundle = job_resview_lease, .config = job_resview_apply, .watch = job_resview_watch },
        { .name = "image", .accept = job_image_accept, .refusal = "sandbox.overrides.image: image not available" },
};

int job_features_accept(Job *j) {
        for (size_t i = 0; i < ELEMENTSOF(job_features); i++) {
                _cleanup_free_ char *err = NULL;
                int r;

                if (!job_features[i].accept)
                        continue;
                r = job_features[i].accept(j, &err);
                if (r < 0)
                        return job_fail(j, r, "%s", err ?: job_features[i].refusal ?: "refused");
        }
        return 0;
}

int job_features_bundle(Job *j) {
        for (size_t i = 0; i < ELEMENTSOF(job_features); i++) {
                int r = job_features[i].bundle ? job_features[i].bundle(j) : 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

int job_features_config(Job *j, json_object *config) {
        for (size_t i = 0; i < ELEMENTSOF(job_features); i++) {
                int r = job_features[i].config ? job_features[i].config(j, config) : 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

int job_features_watch(Job *j, sd_event *e) {
        for (size_t i = 0; i < ELEMENTSOF(job_features); i++) {
                int r = job_features[i].watch ? job_features[i].watch(j, e) : 0;
                if (r < 0)
                        return r;
        }
        return 0;
}
