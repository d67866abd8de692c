/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image.h: the job's root filesystem: the embedded "host" image (an empty rootfs over the host's /usr with
 * a generated minimal /etc) or a directory image under the images directory, used read-only. */
#pragma once

#include "rootfs/layout.h"

/* "host": creates job_dir/rootfs and job_dir/etc afresh (job_dir must exist). A name (repo[:tag]) or a
 * sha256 digest of an imported image: looked up in the store at images_dir and held (nothing is mounted
 * yet: image_mount()). Any other name must match [a-z0-9][a-z0-9_.-]{0,63} and be a directory
 * images_dir/NAME with usr/ and the mount points; nothing is downloaded. -EINVAL (bad name), -ENOENT
 * (missing image or mount point) with *ret_error saying which. */
int image_prepare(const char *image_name, const char *images_dir, const char *job_dir, ImageLayout *ret,
                  char **ret_error);

/* image-job.c: the store part of image_prepare(), and the job's root for it: job_dir/image-top
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
