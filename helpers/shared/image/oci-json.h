/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* oci-json.h: the OCI image documents pond reads (image index, image manifest, image config) and
 * docker-archive's manifest.json, parsed strictly (json-strict) through json-util's dispatch tables.
 * Members pond does not use are ignored, as the image spec asks of readers; those it uses are checked. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "image/blob.h"

#define OCI_JSON_MAX (4U << 20)    /* index, manifest, config: larger ones are refused */
#define OCI_MAX_MANIFESTS 64U      /* in one index */
#define OCI_MAX_LAYERS 40U         /* overlay lowerdir= must fit in one page; see docs/images.md */
#define OCI_MAX_ENV 1024U

#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_CONFIG "application/vnd.oci.image.config.v1+json"
#define OCI_MT_LAYER_TAR "application/vnd.oci.image.layer.v1.tar"
#define DOCKER_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_MT_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define OCI_REF_NAME "org.opencontainers.image.ref.name"

typedef struct OciDescriptor {
        char *media_type;
        char *digest;
        uint64_t size;
        char *ref_name;         /* annotations' org.opencontainers.image.ref.name, or NULL */
        char *os, *arch;        /* platform, or NULL */
} OciDescriptor;

typedef struct OciIndex {
        OciDescriptor *manifests;
        size_t n_manifests;
} OciIndex;

typedef struct OciManifest {
        char *media_type;
        OciDescriptor config;
        OciDescriptor *layers;  /* bottom first */
        size_t n_layers;
} OciManifest;

typedef struct OciConfig {
        char *os, *arch;
        char **env;             /* NULL-terminated, or NULL */
        char *workdir;
        char **diff_ids;        /* NULL-terminated */
        size_t n_diff_ids;
} OciConfig;

typedef struct DockerImage {
        char *config;           /* a member name */
        char **repo_tags;       /* NULL-terminated, or NULL */
        char **layers;          /* member names, bottom first, NULL-terminated */
        size_t n_layers;
} DockerImage;

int oci_index_parse(const char *buf, size_t len, OciIndex *ret, char **ret_error);
void oci_index_done(OciIndex *i);
int oci_manifest_parse(const char *buf, size_t len, OciManifest *ret, char **ret_error);
void oci_manifest_done(OciManifest *m);
int oci_config_parse(const char *buf, size_t len, OciConfig *ret, char **ret_error);
void oci_config_done(OciConfig *c);
/* docker-archive's manifest.json: an array of images; only the first is imported (docker save of one
 * image writes one). */
int docker_manifest_parse(const char *buf, size_t len, DockerImage *ret, char **ret_error);
void docker_image_done(DockerImage *d);

/* A layer media type pond unpacks (tar, tar+gzip, tar+zstd, OCI or Docker): libarchive detects which. */
bool oci_layer_media_type_ok(const char *mt);
