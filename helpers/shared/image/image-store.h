/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image-store.h: the content-addressed image store under STATEDIR/images (docs/images.md):
 *   lock                      flock: shared for imports and jobs looking an image up, exclusive for rm/gc
 *   blobs/sha256/HEX          every blob (index, manifest, config, layer), named by its verified digest;
 *                             a layer's blob is dropped once the layer is unpacked
 *   layers/HEX/               a layer blob unpacked once, read-only to jobs (an overlay lower)
 *   records/HEX.json          an imported image (HEX: its manifest digest): config, layers, Env, WorkingDir
 *   refs/NAME                 repo:tag -> manifest digest ('/' written as '%')
 *   tmp/                      imports in progress, each a directory its importer holds locked
 * and RUNDIR/images/HEX.lock, held shared by every job that runs on the image: rm never removes an image
 * a job holds, gc never removes a layer or blob an image record names. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/blob.h"
#include "image/image-name.h"

/* What one layer may unpack to, and all the work it may cause (pondctl import/layer.c enforces it). */
typedef struct LayerLimits {
        uint64_t max_entries;   /* entries in one layer */
        uint64_t max_bytes;     /* file content in one layer, uncompressed */
        uint64_t max_stream_bytes; /* every byte read, counted twice over: the blob as stored (compressed) and
                                    * the tar stream out of the decompressor (headers, content, the data of
                                    * entries not copied, padding), each at most this many */
        uint64_t max_usec;      /* the whole unpacking of one layer, wall clock */
} LayerLimits;

/* The stream's bound leaves 4 KiB of headers per entry beside the content's; an hour for the largest layer. */
#define LAYER_LIMITS_DEFAULT                                                                               \
        ((LayerLimits) { .max_entries = 1U << 20, .max_bytes = 64ULL << 30,                                \
                         .max_stream_bytes = (64ULL << 30) + ((1ULL << 20) << 12),                         \
                         .max_usec = 3600ULL * 1000000ULL })

typedef struct ImageStore {
        char *path;
        char *run_path;         /* RUNDIR/images: the jobs' use locks */
        int dirfd, blobsfd, lockfd;
        LayerLimits limits;
} ImageStore;

#define IMAGE_STORE_NULL ((ImageStore) { .dirfd = -EBADF, .blobsfd = -EBADF, .lockfd = -EBADF })

/* Opens the store (with create: creating it, 0700; without: -ENOENT where nothing was ever imported) and
 * takes its lock: LOCK_SH (import, look-up) or LOCK_EX (rm, gc); with LOCK_NB, -EWOULDBLOCK instead of
 * waiting. */
int image_store_open(const char *path, const char *run_path, int lock_op, bool create, ImageStore *ret);
void image_store_close(ImageStore *s);
/* STATEDIR/images and RUNDIR/images. */
int image_store_open_default(int lock_op, bool create, ImageStore *ret);

typedef struct ImageRecord {
        char *digest;           /* the manifest's */
        char *config;
        char **layers;          /* layer blob digests, bottom first; NULL-terminated */
        size_t n_layers;
        char **env;             /* the image config's Env, or NULL */
        char *workdir;          /* the image config's WorkingDir, or NULL */
        char *arch;
        uint64_t size;          /* of the blobs (compressed) */
        char **names;           /* the refs naming it, NULL-terminated or NULL */
} ImageRecord;

void image_record_done(ImageRecord *r);
void image_records_free(ImageRecord *l, size_t n);

/* Imports an OCI layout directory, an oci-archive or a docker-archive. name (or, without one, the
 * archive's own ref name or RepoTags[0] when valid) becomes a ref. Atomic and idempotent. */
int image_store_import(ImageStore *s, const char *source, const char *name, ImageRecord *ret,
                       char **ret_error);
/* By name or digest: -ENOENT with *ret_error saying so. */
int image_store_lookup(ImageStore *s, const char *ref, ImageRecord *ret, char **ret_error);
int image_store_list(ImageStore *s, ImageRecord **ret, size_t *ret_n);
/* A name: the ref goes, and the image with it if no other name is left. A digest: the image and every
 * name. The image stays (-EBUSY) while a job holds it. Needs the exclusive lock. */
int image_store_remove(ImageStore *s, const char *ref, char **ret_error);

typedef struct ImageGcStats {
        uint64_t blobs, layers, tmp;
} ImageGcStats;
/* Removes imports left by a crash and every layer and blob no image record names. Needs the exclusive
 * lock. */
int image_store_gc(ImageStore *s, ImageGcStats *ret);

/* The directory of an unpacked layer. */
int image_store_layer_path(const ImageStore *s, const char *digest, char **ret);
/* Takes the job's shared use lock on the image (keep the fd open while the job runs). */
int image_store_use(const ImageStore *s, const char *digest);
