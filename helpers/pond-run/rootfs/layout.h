/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layout.h: what every job root is made of (ImageLayout, the mount points, pond's /etc) and how a job's
 * root directories go away. */
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
void image_layout_done(ImageLayout *l);

/* The directories every root needs, and pond's own /etc files (no host files but the CA bundle). */
int image_make_mount_points(int rootfd);
int image_etc_populate(int etcfd);
/* The first mount point rootfd lacks (or has as something else than a directory), or NULL. */
const char *image_mount_point_missing(int rootfd);
/* The host image in the job directory jobfd: rootfs/ (the mount points, usr-merge links to the host's
 * /usr) and etc/ (pond's /etc files with the host's CA bundle and alternatives). */
int image_make_host_rootfs(int jobfd);
int image_make_host_etc(int jobfd);

/* Unmounts job_dir/root and job_dir/rootfs where they are mounts (an idmapped root, a store image's
 * overlay), then removes job_dir/root, job_dir/rootfs, job_dir/etc and job_dir/image-top if present: never
 * follows symlinks, never descends into another mount (-EBUSY then). Idempotent. */
int image_cleanup(const char *job_dir);
