/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image.h: the job's root filesystem: the embedded "host" image (an empty rootfs over the host's /usr with
 * a generated minimal /etc) or a directory image under the images directory, used read-only. */
#pragma once

#define IMAGE_HOST "host"
/* The hostname the generated /etc knows (hostname, hosts): give it to OciPaths.hostname. */
#define IMAGE_HOSTNAME "pond"
/* The CA bundle's path on the host (copied into the generated /etc) and in the job (its TLS clients are
 * pointed there). */
#define IMAGE_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

typedef struct ImageLayout {
        char *rootfs;   /* root.path (a store image: NULL until image_mount()) */
        char *host_usr; /* "/usr" to bind read-only at /usr, or NULL (the image brings its own) */
        char *etc;      /* generated /etc to bind read-only, or NULL (the image brings its own) */
        /* An imported image (image/image-store.h, docs/images.md); all NULL for host and directory images. */
        char *digest;   /* its manifest digest: what the signed result names */
        char *name;     /* the name the spec used, or NULL when it named the digest */
        char **names;   /* every name it has on this worker */
        char **env;     /* the image config's Env and WorkingDir (oci.c decides what applies) */
        char *workdir;
        char **lowers;  /* its unpacked layers, top first */
        int *use_fd;    /* the shared use lock that keeps rm and gc off it, held until image_layout_done() */
} ImageLayout;

/* "host": creates job_dir/rootfs and job_dir/etc afresh (job_dir must exist). A name (repo[:tag]) or a
 * sha256 digest of an imported image: looked up in the store at images_dir and held (nothing is mounted
 * yet: image_mount()). Any other name must match [a-z0-9][a-z0-9_.-]{0,63} and be a directory
 * images_dir/NAME with usr/ and the mount points; nothing is downloaded. -EINVAL (bad name), -ENOENT
 * (missing image or mount point) with *ret_error saying which. */
int image_prepare(const char *image_name, const char *images_dir, const char *job_dir, ImageLayout *ret,
                  char **ret_error);
void image_layout_done(ImageLayout *l);

/* image/image-job.c: the store part of image_prepare(), and the job's root for it: job_dir/image-top
 * (pond's mount points and /etc files, the top lower) over the image's layers, mounted read-only as an
 * overlay at job_dir/rootfs (one mount whatever the image's size). Sets l->rootfs. */
int image_prepare_store(const char *ref, const char *images_dir, ImageLayout *ret, char **ret_error);
int image_mount(ImageLayout *l, const char *job_dir, int userns_fd, char **ret_error);
/* With userns_fd >= 0 (a job with a uid range of its own), image_mount() mounts each layer through an
 * idmapped clone, so that the job's namespace sees the image's owners. For host and directory images,
 * image_idmap_root() does the same: job_dir/root, an idmapped clone of l->rootfs with the host's /usr and
 * the generated /etc idmapped onto it (all read-only); l->rootfs names it afterwards, and host_usr and etc
 * are NULL (nothing left for config.json to bind). A no-op for a store image. */
int image_idmap_root(ImageLayout *l, const char *job_dir, int userns_fd, char **ret_error);

/* For image-job.c: the directories every root needs, and pond's own /etc files (no host files but the CA
 * bundle). */
int image_make_mount_points(int rootfd);
int image_etc_populate(int etcfd);

/* Unmounts job_dir/root and job_dir/rootfs where they are mounts (an idmapped root, a store image's
 * overlay), then removes job_dir/root, job_dir/rootfs, job_dir/etc and job_dir/image-top if present: never
 * follows symlinks, never descends into another mount (-EBUSY then). Idempotent. */
int image_cleanup(const char *job_dir);
