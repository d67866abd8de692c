/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* oci-json.c: owns parsing the OCI index, manifest and config and docker-archive's manifest.json into
 * plain structs; each refusal names the field. */
#include <stdlib.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/oci-json.h"

#define fail(ret_error, ...) error_set((ret_error), -EINVAL, __VA_ARGS__)

/* json_dispatch() over the members the table names; the others are ignored (the image spec's rule for
 * readers: registries and builders add annotations and fields of their own). */
static int dispatch_known(json_object *o, const char *where, const JsonField table[], void *userdata,
                          char **ret_error) {
        _cleanup_json_ json_object *subset = NULL;

        if (!json_object_is_type(o, json_type_object))
                return json_dispatch(o, where, table, userdata, ret_error);
        subset = json_object_new_object();
        if (!subset)
                return -ENOMEM;
        for (const JsonField *f = table; f->name; f++) {
                json_object *v;
                if (json_object_object_get_ex(o, f->name, &v) &&
                    json_object_object_add(subset, f->name, json_object_get(v)) < 0)
                        return -ENOMEM;
        }
        return json_dispatch(subset, where, table, userdata, ret_error);
}

static const char *check_digest(const char *s) {
        return digest_is_valid(s) ? NULL : "must be \"sha256:\" and 64 lowercase hex digits";
}

static int parse_top(const char *buf, size_t len, json_object **ret, char **ret_error) {
        return json_parse_strict(buf, len, OCI_JSON_MAX, JSON_STRICT_MAX_DEPTH, ret, ret_error);
}

static int annotations_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        OciDescriptor *d = userdata;
        json_object *name = json_get(v, OCI_REF_NAME);
        const char *s;
        int r;

        if (!name)
                return 0;
        r = json_check_string(name, field, 256, &s, ret_error);
        if (r < 0)
                return r;
        free(d->ref_name);
        d->ref_name = strdup(s);
        return d->ref_name ? 0 : -ENOMEM;
}

static const JsonField platform_fields[] = {
        { "os",           JSON_STRING, .offset = offsetof(OciDescriptor, os),   .max = 64 },
        { "architecture", JSON_STRING, .offset = offsetof(OciDescriptor, arch), .max = 64 },
        {}
};

static int platform_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        return dispatch_known(v, field, platform_fields, userdata, ret_error);
}

static const JsonField descriptor_fields[] = {
        { "mediaType",   JSON_STRING, .offset = offsetof(OciDescriptor, media_type), .flags = JSON_MANDATORY,
          .min = 1, .max = 256 },
        { "digest",      JSON_STRING, .offset = offsetof(OciDescriptor, digest), .flags = JSON_MANDATORY,
          .check = check_digest },
        { "size",        JSON_U64,    .offset = offsetof(OciDescriptor, size), .flags = JSON_MANDATORY,
          .max = INT64_MAX },
        { "annotations", JSON_OBJECT, .callback = annotations_cb },
        { "platform",    JSON_OBJECT, .callback = platform_cb },
        {}
};

static void descriptor_done(OciDescriptor *d) {
        free(d->media_type);
        free(d->digest);
        free(d->ref_name);
        free(d->os);
        free(d->arch);
        *d = (OciDescriptor) {};
}

static int descriptors_parse(json_object *a, const char *where, size_t max, OciDescriptor **ret, size_t *ret_n,
                             char **ret_error) {
        size_t n = json_object_array_length(a);
        OciDescriptor *l;
        int r;

        if (n > max)
                return fail(ret_error, "%s: more than %zu entries", where, max);
        l = calloc(n + 1, sizeof *l);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char field[JSON_FIELD_MAX];

                json_field_index(field, where, i);
                r = dispatch_known(json_object_array_get_idx(a, i), field, descriptor_fields, &l[i], ret_error);
                if (r < 0) {
                        for (size_t k = 0; k <= i; k++)
                                descriptor_done(&l[k]);
                        free(l);
                        return r;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

static int index_manifests_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        OciIndex *i = userdata;
        return descriptors_parse(v, field, OCI_MAX_MANIFESTS, &i->manifests, &i->n_manifests, ret_error);
}

static int schema_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        uint64_t n;
        (void) userdata;
        return json_check_u64(v, field, 2, 2, &n, ret_error);
}

static const JsonField index_fields[] = {
        { "schemaVersion", JSON_ANY,   .callback = schema_cb, .flags = JSON_MANDATORY },
        { "manifests",     JSON_ARRAY, .callback = index_manifests_cb, .flags = JSON_MANDATORY },
        {}
};

int oci_index_parse(const char *buf, size_t len, OciIndex *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        OciIndex i = {};
        int r;

        r = parse_top(buf, len, &o, ret_error);
        if (r < 0)
                return r;
        r = dispatch_known(o, "index", index_fields, &i, ret_error);
        if (r < 0) {
                oci_index_done(&i);
                return r;
        }
        *ret = i;
        return 0;
}

void oci_index_done(OciIndex *i) {
        for (size_t k = 0; i && i->manifests && k < i->n_manifests; k++)
                descriptor_done(&i->manifests[k]);
        if (i) {
                free(i->manifests);
                *i = (OciIndex) {};
        }
}

static int manifest_config_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        OciManifest *m = userdata;
        return dispatch_known(v, field, descriptor_fields, &m->config, ret_error);
}

static int manifest_layers_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        OciManifest *m = userdata;
        return descriptors_parse(v, field, OCI_MAX_LAYERS, &m->layers, &m->n_layers, ret_error);
}

static const JsonField manifest_fields[] = {
        { "schemaVersion", JSON_ANY,    .callback = schema_cb, .flags = JSON_MANDATORY },
        { "mediaType",     JSON_STRING, .offset = offsetof(OciManifest, media_type), .max = 256 },
        { "config",        JSON_OBJECT, .callback = manifest_config_cb, .flags = JSON_MANDATORY },
        { "layers",        JSON_ARRAY,  .callback = manifest_layers_cb, .flags = JSON_MANDATORY },
        {}
};

bool oci_layer_media_type_ok(const char *mt) {
        static const char *const ok[] = {
                "application/vnd.oci.image.layer.v1.tar",
                "application/vnd.oci.image.layer.v1.tar+gzip",
                "application/vnd.oci.image.layer.v1.tar+zstd",
                "application/vnd.oci.image.layer.nondistributable.v1.tar",
                "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
                "application/vnd.docker.image.rootfs.diff.tar",
                "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
        };
        for (size_t i = 0; mt && i < ELEMENTSOF(ok); i++)
                if (streq(mt, ok[i]))
                        return true;
        return false;
}

int oci_manifest_parse(const char *buf, size_t len, OciManifest *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        OciManifest m = {};
        int r;

        r = parse_top(buf, len, &o, ret_error);
        if (r < 0)
                return r;
        r = dispatch_known(o, "manifest", manifest_fields, &m, ret_error);
        if (r >= 0 && m.media_type && !streq(m.media_type, OCI_MT_MANIFEST) &&
            !streq(m.media_type, DOCKER_MT_MANIFEST))
                r = fail(ret_error, "manifest.mediaType: '%s' is not an image manifest", m.media_type);
        for (size_t i = 0; r >= 0 && i < m.n_layers; i++)
                if (!oci_layer_media_type_ok(m.layers[i].media_type))
                        r = fail(ret_error, "manifest.layers[%zu].mediaType: '%s' is not a layer pond can unpack",
                                 i, m.layers[i].media_type);
        if (r < 0) {
                oci_manifest_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

void oci_manifest_done(OciManifest *m) {
        if (!m)
                return;
        free(m->media_type);
        descriptor_done(&m->config);
        for (size_t k = 0; m->layers && k < m->n_layers; k++)
                descriptor_done(&m->layers[k]);
        free(m->layers);
        *m = (OciManifest) {};
}

/* A JSON array of strings into a NULL-terminated strv, each at most max_len bytes. */
static int strv_from_json(json_object *a, const char *field, size_t max_n, size_t max_len, char ***ret,
                          size_t *ret_n, char **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;
        int r;

        r = json_check_array(a, field, 0, max_n, ret_error);
        if (r < 0)
                return r;
        n = json_object_array_length(a);
        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char f[JSON_FIELD_MAX];
                const char *s;

                json_field_index(f, field, i);
                r = json_check_string(json_object_array_get_idx(a, i), f, max_len, &s, ret_error);
                if (r < 0)
                        return r;
                l[i] = strdup(s);
                if (!l[i])
                        return -ENOMEM;
        }
        strv_free(*ret);
        *ret = TAKE_PTR(l);
        if (ret_n)
                *ret_n = n;
        return 0;
}

static int env_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        OciConfig *c = userdata;
        int r = strv_from_json(v, field, OCI_MAX_ENV, 32768, &c->env, NULL, ret_error);

        for (size_t i = 0; r >= 0 && c->env[i]; i++)
                if (!strchr(c->env[i], '=') || c->env[i][0] == '=')
                        return fail(ret_error, "%s[%zu]: must be NAME=VALUE", field, i);
        return r;
}

/* The members of config.config pond applies (docs/images.md says why the others are ignored). */
static const JsonField exec_fields[] = {
        { "Env",        JSON_ARRAY,  .callback = env_cb },
        { "WorkingDir", JSON_STRING, .offset = offsetof(OciConfig, workdir), .max = 4096 },
        {}
};

static int exec_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        return dispatch_known(v, field, exec_fields, userdata, ret_error);
}

static int diff_ids_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        OciConfig *c = userdata;
        int r = strv_from_json(v, field, OCI_MAX_LAYERS, DIGEST_SIZE, &c->diff_ids, &c->n_diff_ids, ret_error);

        for (size_t i = 0; r >= 0 && i < c->n_diff_ids; i++)
                if (!digest_is_valid(c->diff_ids[i]))
                        return fail(ret_error, "%s[%zu]: must be a sha256 digest", field, i);
        return r;
}

static const JsonField rootfs_fields[] = {
        { "diff_ids", JSON_ARRAY, .callback = diff_ids_cb, .flags = JSON_MANDATORY },
        {}
};

static int rootfs_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        return dispatch_known(v, field, rootfs_fields, userdata, ret_error);
}

static const JsonField config_fields[] = {
        { "os",           JSON_STRING, .offset = offsetof(OciConfig, os), .max = 64, .flags = JSON_MANDATORY },
        { "architecture", JSON_STRING, .offset = offsetof(OciConfig, arch), .max = 64, .flags = JSON_MANDATORY },
        { "config",       JSON_OBJECT, .callback = exec_cb, .flags = JSON_NULLABLE },
        { "rootfs",       JSON_OBJECT, .callback = rootfs_cb, .flags = JSON_MANDATORY },
        {}
};

int oci_config_parse(const char *buf, size_t len, OciConfig *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        OciConfig c = {};
        int r;

        r = parse_top(buf, len, &o, ret_error);
        if (r < 0)
                return r;
        r = dispatch_known(o, "config", config_fields, &c, ret_error);
        if (r >= 0 && !streq(c.os, "linux"))
                r = fail(ret_error, "config.os: '%s' is not linux", c.os);
        if (r < 0) {
                oci_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

void oci_config_done(OciConfig *c) {
        if (!c)
                return;
        free(c->os);
        free(c->arch);
        strv_free(c->env);
        free(c->workdir);
        strv_free(c->diff_ids);
        *c = (OciConfig) {};
}

static int repo_tags_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        DockerImage *d = userdata;
        return strv_from_json(v, field, 64, 256, &d->repo_tags, NULL, ret_error);
}

static int docker_layers_cb(json_object *v, const char *field, void *userdata, char **ret_error) {
        DockerImage *d = userdata;
        return strv_from_json(v, field, OCI_MAX_LAYERS, 1024, &d->layers, &d->n_layers, ret_error);
}

static const JsonField docker_fields[] = {
        { "Config",   JSON_STRING, .offset = offsetof(DockerImage, config), .flags = JSON_MANDATORY,
          .min = 1, .max = 1024 },
        { "RepoTags", JSON_ARRAY,  .callback = repo_tags_cb, .flags = JSON_NULLABLE },
        { "Layers",   JSON_ARRAY,  .callback = docker_layers_cb, .flags = JSON_MANDATORY },
        {}
};

int docker_manifest_parse(const char *buf, size_t len, DockerImage *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        DockerImage d = {};
        int r;

        r = parse_top(buf, len, &o, ret_error);
        if (r < 0)
                return r;
        r = json_check_array(o, "manifest.json", 1, 1, ret_error);
        if (r < 0)
                return r == -EINVAL ? fail(ret_error, "manifest.json: must list exactly one image") : r;
        r = dispatch_known(json_object_array_get_idx(o, 0), "manifest.json[0]", docker_fields, &d, ret_error);
        if (r < 0) {
                docker_image_done(&d);
                return r;
        }
        *ret = d;
        return 0;
}

void docker_image_done(DockerImage *d) {
        if (!d)
                return;
        free(d->config);
        strv_free(d->repo_tags);
        strv_free(d->layers);
        *d = (DockerImage) {};
}
