/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image.c: which root a job gets: the embedded "host" image (an empty rootfs with mount points and
 * usr-merge symlinks, plus a generated minimal /etc), a directory image under images_dir, or an imported
 * one (image-job.c); and the idmapped view of a host or directory root. */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "oci/oci.h"
#include "rootfs/image.h"
#include "rootfs/layout.h"
#include "userns/userns.h"

#define fail(ret_error, error, ...) error_set((ret_error), -(error), __VA_ARGS__)

static bool image_name_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 64 || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0]))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_.-", s[i]))
                        return false;
        return true;
}

/* Modes are set explicitly: the supervisor's umask must not make /etc unreadable for uid 1000. */
static int prepare_host(const char *job_dir, ImageLayout *ret, char **ret_error) {
        ImageLayout l = {};
        _cleanup_close_ int jobfd = -EBADF;
        int r;

        /* A leftover from an earlier attempt is replaced, never reused: its content is not ours to trust. */
        r = image_cleanup(job_dir);
        if (r < 0)
                return fail(ret_error, -r, "image host: cannot remove an old rootfs/etc in %s: %s", job_dir,
                            strerror(-r));
        jobfd = open(job_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (jobfd < 0)
                return fail(ret_error, errno, "image host: cannot open job directory %s: %m", job_dir);
        r = image_make_host_rootfs(jobfd);
        if (r < 0)
                return fail(ret_error, -r, "image host: cannot create %s/rootfs: %s", job_dir, strerror(-r));
        r = image_make_host_etc(jobfd);
        if (r < 0)
                return fail(ret_error, -r, "image host: cannot generate %s/etc: %s", job_dir, strerror(-r));
        if (asprintf(&l.rootfs, "%s/rootfs", job_dir) < 0 || asprintf(&l.etc, "%s/etc", job_dir) < 0 ||
            !(l.host_usr = strdup("/usr"))) {
                image_layout_done(&l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

static int prepare_directory(const char *name, const char *images_dir, ImageLayout *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *missing;

        if (!image_name_valid(name))
                return fail(ret_error, EINVAL,
                            "image: \"%s\" must be \"host\" or match [a-z0-9][a-z0-9_.-]{0,63}", name ?: "");
        if (!images_dir)
                return fail(ret_error, ENOENT, "image %s: no images directory configured", name);
        if (asprintf(&path, "%s/%s", images_dir, name) < 0)
                return -ENOMEM;
        /* O_NOFOLLOW: an image is a directory the operator put there, not a link to somewhere else */
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return fail(ret_error, errno, "image %s: %s is not a directory: %m", name, path);
        missing = image_mount_point_missing(fd);
        if (missing)
                return fail(ret_error, ENOENT, "image %s: %s/%s is missing or not a directory", name, path,
                            missing);
        *ret = (ImageLayout) { .rootfs = TAKE_PTR(path) };
        return 0;
}

int image_prepare(const char *image_name, const char *images_dir, const char *job_dir, ImageLayout *ret,
                  char **ret_error) {
        int r;

        if (!ret || !job_dir)
                return -EINVAL;
        if (image_name && streq(image_name, IMAGE_HOST))
                return prepare_host(job_dir, ret, ret_error);
        /* An imported image first; a bare name that the store does not know may still be a directory. */
        r = images_dir && image_name ? image_prepare_store(image_name, images_dir, ret, ret_error) : -ENOENT;
        if (r != -ENOENT || !image_name || strchr(image_name, ':') || !image_name_valid(image_name))
                return r;
        return prepare_directory(image_name, images_dir, ret, ret_error);
}

int image_idmap_root(ImageLayout *l, const char *job_dir, int userns_fd, char **ret_error) {
        _cleanup_free_ char *root = NULL, *usr = NULL, *etc = NULL;
        int r;

        if (!l || !l->rootfs || !job_dir || userns_fd < 0)
                return -EINVAL;
        if (l->digest)
                return 0;       /* image_mount() mapped its layers: an overlay cannot be idmapped itself */
        if (asprintf(&root, "%s/root", job_dir) < 0 || asprintf(&usr, "%s/usr", root) < 0 ||
            asprintf(&etc, "%s/etc", root) < 0)
                return -ENOMEM;
        if (mkdir(root, 0755) < 0)
                return fail(ret_error, errno, "cannot create %s: %m", root);
        r = idmap_mount(l->rootfs, root, userns_fd, IDMAP_RDONLY);
        if (r >= 0 && l->host_usr)
                r = idmap_mount(l->host_usr, usr, userns_fd, IDMAP_RDONLY);
        if (r >= 0 && l->etc)
                r = idmap_mount(l->etc, etc, userns_fd, IDMAP_RDONLY | IDMAP_NOEXEC);
        if (r < 0)
                return fail(ret_error, -r, "cannot map the root %s to the job's uid range: %s", l->rootfs,
                            strerror(-r));
        free(l->rootfs);
        l->rootfs = TAKE_PTR(root);
        free(l->host_usr);
        free(l->etc);
        l->host_usr = l->etc = NULL;
        return 0;
}
