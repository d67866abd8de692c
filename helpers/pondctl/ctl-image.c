/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-image.c: `pondctl image import|list|inspect|rm|gc`: the operator's side of the image store
 * (helpers/shared/image/, docs/images.md). Registries stay outside pond: images come in as files. */
#include <getopt.h>
#include <string.h>
#include <sys/file.h>

#include "basic/json-util.h"
#include "ctl-options.h"
#include "ctl.h"
#include "image/image-store.h"

static json_object *strv_json(char **l) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && l && l[i]; i++)
                json_object_array_add(a, json_object_new_string(l[i]));
        return a;
}

static json_object *record_json(const ImageRecord *r) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "digest", json_object_new_string(r->digest));
        json_object_object_add(o, "names", strv_json(r->names));
        json_object_object_add(o, "config", json_object_new_string(r->config));
        json_object_object_add(o, "architecture", json_object_new_string(r->arch ?: ""));
        json_object_object_add(o, "size", json_object_new_int64((int64_t) r->size));
        json_object_object_add(o, "layers", strv_json(r->layers));
        json_object_object_add(o, "env", strv_json(r->env));
        if (r->workdir)
                json_object_object_add(o, "workdir", json_object_new_string(r->workdir));
        return o;
}

/* --name, of import only (userdata NULL: another verb). */
static int parse_name(const char *arg, void *userdata) {
        const char **name = userdata;

        if (!name)
                return -EINVAL;
        *name = arg;
        return 0;
}

/* Parses --json and, for import, --name; the rest stays in argv from optind on. */
static int parse(int argc, char *argv[], bool *json, const char **name) {
        const CtlOption options[] = { CTL_OPTION_JSON(json), { "name", .parse = parse_name }, {} };

        return ctl_options_parse(argc, argv, options, name) < 0 ? -EINVAL : 0;
}

static int open_store(int op, ImageStore *s) {
        int r = image_store_open_default(op, true, s);

        if (r == -EWOULDBLOCK)
                return ctl_fail(-1, "The image store is busy (an import or a job holds it); try again.");
        if (r < 0)
                return ctl_fail_errno(-1, r, "Cannot open the image store: %m");
        return 0;
}

static int verb_import(int argc, char *argv[]) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        _cleanup_(image_record_done) ImageRecord rec = {};
        _cleanup_free_ char *err = NULL;
        const char *name = NULL;
        bool json = false;
        int r;

        if (parse(argc, argv, &json, &name) < 0 || optind != argc - 1)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl image import PATH [--name REPO:TAG] [--json]");
        if (open_store(LOCK_SH, &s) < 0)
                return CTL_EXIT_ERROR;
        r = image_store_import(&s, argv[optind], name, &rec, &err);
        if (r < 0)
                /* err may quote a name from inside the image */
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Import of %s refused: %s", argv[optind],
                                          err ?: strerror(-r));
        if (json) {
                _cleanup_json_ json_object *o = record_json(&rec);
                ctl_json_print(o);
        } else
                printf("%s%s%s\n", rec.digest, rec.names ? " " : "", rec.names ? rec.names[0] : "");
        return 0;
}

static int verb_list(int argc, char *argv[]) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        _cleanup_json_ json_object *a = NULL;
        ImageRecord *l = NULL;
        bool json = false;
        size_t n = 0;
        int r;

        if (parse(argc, argv, &json, NULL) < 0 || optind != argc)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl image list [--json]");
        if (open_store(LOCK_SH, &s) < 0)
                return CTL_EXIT_ERROR;
        r = image_store_list(&s, &l, &n);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot list images: %m");
        a = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
                if (json)
                        json_object_array_add(a, record_json(&l[i]));
                else if (!l[i].names)
                        printf("%s %3zu layers %12llu  -\n", l[i].digest, l[i].n_layers,
                               (unsigned long long) l[i].size);
                else
                        for (size_t k = 0; l[i].names[k]; k++)
                                printf("%s %3zu layers %12llu  %s\n", l[i].digest, l[i].n_layers,
                                       (unsigned long long) l[i].size, l[i].names[k]);
        }
        if (json)
                ctl_json_print(a);
        image_records_free(l, n);
        return 0;
}

static int verb_inspect(int argc, char *argv[]) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        _cleanup_(image_record_done) ImageRecord rec = {};
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        bool json = false;
        int r;

        if (parse(argc, argv, &json, NULL) < 0 || optind != argc - 1)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl image inspect NAME|DIGEST [--json]");
        if (open_store(LOCK_SH, &s) < 0)
                return CTL_EXIT_ERROR;
        r = image_store_lookup(&s, argv[optind], &rec, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "%s", err ?: strerror(-r));
        o = record_json(&rec);
        ctl_json_print(o);  /* one form: inspect is for reading */
        return 0;
}

static int verb_rm(int argc, char *argv[]) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        bool json = false;
        int ret = 0;

        if (parse(argc, argv, &json, NULL) < 0 || optind >= argc)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl image rm NAME|DIGEST...");
        if (open_store(LOCK_EX, &s) < 0)
                return CTL_EXIT_ERROR;
        for (int i = optind; i < argc; i++) {
                _cleanup_free_ char *err = NULL;
                int r = image_store_remove(&s, argv[i], &err);

                if (r < 0)
                        ret = ctl_fail_untrusted(CTL_EXIT_ERROR, "Cannot remove %s: %s", argv[i],
                                                 err ?: strerror(-r));
        }
        return ret;
}

static int verb_gc(int argc, char *argv[]) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        ImageGcStats st = {};
        bool json = false;
        int r;

        if (parse(argc, argv, &json, NULL) < 0 || optind != argc)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl image gc [--json]");
        if (open_store(LOCK_EX, &s) < 0)
                return CTL_EXIT_ERROR;
        r = image_store_gc(&s, &st);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Image gc failed: %m");
        if (json) {
                _cleanup_json_ json_object *o = json_object_new_object();

                if (!o || json_add(o, "layers", json_object_new_uint64(st.layers)) < 0 ||
                    json_add(o, "blobs", json_object_new_uint64(st.blobs)) < 0 ||
                    json_add(o, "tmp", json_object_new_uint64(st.tmp)) < 0)
                        return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
                ctl_json_print(o);
        } else
                printf("removed %llu layers, %llu blobs, %llu unfinished imports\n",
                       (unsigned long long) st.layers, (unsigned long long) st.blobs, (unsigned long long) st.tmp);
        return 0;
}

int ctl_verb_image(int argc, char *argv[]) {
        static const struct {
                const char *name;
                int (*run)(int argc, char *argv[]);
        } sub[] = {
                { "import", verb_import }, { "list", verb_list }, { "inspect", verb_inspect },
                { "rm", verb_rm },         { "gc", verb_gc },
        };

        for (size_t i = 0; argc >= 2 && i < ELEMENTSOF(sub); i++)
                if (streq(argv[1], sub[i].name))
                        return sub[i].run(argc - 1, argv + 1);
        return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl image import|list|inspect|rm|gc ...; see pondctl(1).");
}
