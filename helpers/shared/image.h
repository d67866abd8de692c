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
        char *rootfs;   /* root.path */
        char *host_usr; /* "/usr" to bind read-only at /usr, or NULL (the image brings its own) */
        char *etc;      /* generated /etc to bind read-only, or NULL (the image brings its own) */
} ImageLayout;

/* "host": creates job_dir/rootfs and job_dir/etc afresh (job_dir must exist). Any other name must match
 * [a-z0-9][a-z0-9_.-]{0,63} and be a directory images_dir/NAME with usr/ and the mount points; nothing is
 * downloaded. -EINVAL (bad name), -ENOENT (missing image or mount point) with *ret_error saying which. */
int image_prepare(const char *image_name, const char *images_dir, const char *job_dir, ImageLayout *ret,
                  char **ret_error);
void image_layout_done(ImageLayout *l);

/* Removes job_dir/rootfs and job_dir/etc if present: never follows symlinks, never descends into another
 * mount (-EBUSY then). Idempotent. */
int image_cleanup(const char *job_dir);
