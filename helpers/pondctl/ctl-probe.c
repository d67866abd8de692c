/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-probe.c: `pondctl probe [--json]`: runs the host probe and prints what this host can really enforce
 * and the capabilities it would advertise (text, or the JSON document dispatch-check --worker reads), the
 * imported images present, by digest, and the worker's tags (worker.json). */
#include <sys/file.h>

#include "ctl-options.h"
#include "ctl-probe.h"
#include "ctl.h"
#include "image/image-store.h"
#include "policy/worker-policy.h"
#include "probe.h"

/* The imported images present here, by manifest digest with their names, so that a control plane can
 * route a job that pins one (docs/images.md). An absent or unreadable store is no images. */
json_object *ctl_probe_images_json(void) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        json_object *a = json_object_new_array();
        ImageRecord *l = NULL;
        size_t n = 0;

        if (!a || image_store_open_default(LOCK_SH | LOCK_NB, false, &s) < 0 || image_store_list(&s, &l, &n) < 0)
                return a;
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object(), *names = json_object_new_array();

                for (size_t k = 0; l[i].names && l[i].names[k]; k++)
                        json_object_array_add(names, json_object_new_string(l[i].names[k]));
                json_object_object_add(o, "digest", json_object_new_string(l[i].digest));
                json_object_object_add(o, "names", names);
                json_object_array_add(a, o);
        }
        image_records_free(l, n);
        return a;
}

json_object *ctl_probe_tags_json(void) {
        _cleanup_(admission_policy_done) AdmissionPolicy p = {};
        _cleanup_free_ char *err = NULL;
        json_object *a = json_object_new_array();
        int r;

        r = admission_policy_load(NULL, &p, &err);
        if (r < 0) {
                log_warning("The worker's tags cannot be read, it carries none: %s", err ?: strerror(-r));
                return a;
        }
        for (char *const *t = admission_policy_tags(&p); a && *t; t++)
                json_object_array_add(a, json_object_new_string(*t));
        return a;
}

int ctl_verb_probe(int argc, char *argv[]) {
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        _cleanup_json_ json_object *o = NULL;
        bool json = false;
        const CtlOption options[] = { CTL_OPTION_JSON(&json), {} };
        int r;

        r = ctl_options_parse(argc, argv, options, NULL);
        if (r < 0)
                return CTL_EXIT_USAGE;
        if (r != argc)
                return ctl_fail(CTL_EXIT_USAGE, "probe takes no arguments; see pondctl --help.");
        /* Trivial containers, nft and the cgroup checks need root; without it they report absent, which is
         * honest but not what this host could do. */
        if (geteuid() != 0)
                log_warning("Not running as root: backends, nftables and cgroups will likely show as "
                            "unusable.");
        r = host_probe(NULL, &p);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Failed to probe the host: %m");
        if (!json) {
                _cleanup_json_ json_object *images = ctl_probe_images_json(), *tags = ctl_probe_tags_json();

                host_probe_print(p, stdout);
                printf("tags: %s\n", json_object_to_json_string_ext(tags, JSON_C_TO_STRING_PLAIN));
                printf("images: %zu imported\n", json_object_array_length(images));
                for (size_t i = 0; i < json_object_array_length(images); i++) {
                        json_object *e = json_object_array_get_idx(images, i);
                        printf("  %s %s\n", json_object_get_string(json_object_object_get(e, "digest")),
                               json_object_to_json_string_ext(json_object_object_get(e, "names"),
                                                              JSON_C_TO_STRING_PLAIN));
                }
                return CTL_EXIT_OK;
        }
        r = host_probe_to_json(p, &o);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Failed to format the probe: %m");
        json_object_object_add(o, "images", ctl_probe_images_json());
        json_object_object_add(o, "tags", ctl_probe_tags_json());
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        return CTL_EXIT_OK;
}
