/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image-job.c: owns an imported image as a job's root: the look-up under the store's shared lock with
 * the image's use lock taken before that lock is let go, pond's small top layer (mount points, pond's own
 * /etc files), and the read-only overlay of that layer over the image's layers. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/dirs.h"
#include "basic/errmsg.h"
#include "basic/strv.h"
#include "image/image-store.h"
#include "image/oci-json.h"
#include "rootfs/image.h"
#include "userns/userns.h"

/* overlayfs reads its options from one page; docs/images.md bounds layers so that they fit. */
#define OVERLAY_OPTIONS_MAX 4000

static int fill_layout(const ImageStore *s, const char *ref, ImageRecord *rec, ImageLayout *l) {
        *l = (ImageLayout) {
                .digest = TAKE_PTR(rec->digest),
                .names = TAKE_PTR(rec->names),
                .env = TAKE_PTR(rec->env),
                .workdir = TAKE_PTR(rec->workdir),
        };
        if (!digest_is_valid(ref) && image_name_normalise(ref, &l->name) < 0)
                return -ENOMEM;
        l->lowers = calloc(rec->n_layers + 1, sizeof(char *));
        if (!l->lowers)
                return -ENOMEM;
        /* Top first. A layer that comes again lower down is left out there: overlayfs refuses the same
         * directory twice (ELOOP), and its topmost copy already shows all it holds. */
        for (size_t i = 0, n = 0; i < rec->n_layers; i++) {
                const char *d = rec->layers[rec->n_layers - 1 - i];
                bool seen = false;
                int r;

                for (size_t k = rec->n_layers - i; k < rec->n_layers; k++)
                        seen = seen || streq(rec->layers[k], d);
                if (seen)
                        continue;
                r = image_store_layer_path(s, d, &l->lowers[n++]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int image_prepare_store(const char *ref, const char *images_dir, ImageLayout *ret, char **ret_error) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        _cleanup_(image_record_done) ImageRecord rec = {};
        _cleanup_(image_layout_done) ImageLayout l = {};
        _cleanup_free_ char *run = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!image_ref_is_valid(ref))
                return error_set(ret_error, -EINVAL, "image: '%s' must be \"host\", a name (repo:tag) or a "
                                 "sha256 digest", ref ?: "");
        if (asprintf(&run, "%s/images", pond_dir(POND_DIR_RUN)) < 0)
                return -ENOMEM;
        /* shared: imports and other jobs go on; rm and gc wait until the use lock below is held */
        r = image_store_open(images_dir, run, LOCK_SH, false, &s);
        if (r == -ENOENT)
                return error_set(ret_error, r, "image '%s' is not present on this worker (nothing imported)", ref);
        if (r < 0)
                return error_set(ret_error, r, "image %s: cannot open the image store: %s", ref, strerror(-r));
        r = image_store_lookup(&s, ref, &rec, ret_error);
        if (r < 0)
                return r;
        fd = image_store_use(&s, rec.digest);
        if (fd < 0)
                return error_set(ret_error, fd, "image %s: cannot take its use lock: %s", ref, strerror(-fd));
        r = fill_layout(&s, ref, &rec, &l);
        if (r < 0)
                return r;
        l.use_fd = malloc(sizeof(int));
        if (!l.use_fd)
                return -ENOMEM;
        *l.use_fd = TAKE_FD(fd);
        *ret = l;
        l = (ImageLayout) {};
        return 0;
}

/* pond's layer on top of the image's: the mount points runc needs in a read-only root and the /etc
 * files pond owns (users, hosts, resolver, nsswitch, the worker's CA bundle), which win over the image's. */
static int make_top(int jobfd) {
        _cleanup_close_ int fd = -EBADF, etc = -EBADF;
        int r;

        if (mkdirat(jobfd, "image-top", 0755) < 0 || fchmodat(jobfd, "image-top", 0755, 0) < 0)
                return -errno;
        fd = openat(jobfd, "image-top", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = image_make_mount_points(fd);
        if (r < 0)
                return r;
        etc = openat(fd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (etc < 0)
                return -errno;
        return image_etc_populate(etc);
}

static int overlay_options(char *const *lowers, char **ret) {
        _cleanup_free_ char *opts = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&opts, &n);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; lowers[i]; i++) {
                /* overlayfs takes ',' ':' and '\\' in a path only escaped; the store and run paths never have
                 * them */
                if (strpbrk(lowers[i], ",:\\")) {
                        fclose(f);
                        return -EINVAL;
                }
                fprintf(f, "%s%s", i == 0 ? "lowerdir=" : ":", lowers[i]);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        if (n > OVERLAY_OPTIONS_MAX)
                return -E2BIG;
        *ret = TAKE_PTR(opts);
        return 0;
}

/* The lower directories, top first: as they are, or (userns_fd >= 0) each as an idmapped clone, named by its
 * fd (overlayfs resolves /proc/self/fd/N to the detached tree and keeps its own reference: the fds in
 * *fds are closed once the overlay is mounted). */
static int lower_list(const char *top, char *const *layers, int userns_fd, int *fds, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;
        int r;

        r = strv_push(&l, strdup(top));
        for (size_t i = 0; r >= 0 && layers && layers[i]; i++)
                r = strv_push(&l, strdup(layers[i]));
        if (r < 0)
                return r;
        for (; userns_fd >= 0 && l[n]; n++) {
                r = idmap_clone(l[n], userns_fd, IDMAP_RDONLY, &fds[n]);
                if (r < 0)
                        return r;
                free(l[n]);
                if (asprintf(&l[n], "/proc/self/fd/%d", fds[n]) < 0) {
                        l[n] = NULL;
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static void close_all(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                fds[i] = safe_close(fds[i]);
}

int image_mount(ImageLayout *l, const char *job_dir, int userns_fd, char **ret_error) {
        _cleanup_free_ char *top = NULL, *root = NULL, *opts = NULL;
        _cleanup_strv_free_ char **lowers = NULL;
        int fds[OCI_MAX_LAYERS + 1];
        _cleanup_close_ int jobfd = -EBADF;
        int r;

        if (!l || !l->digest || !l->lowers || !job_dir)
                return -EINVAL;
        r = image_cleanup(job_dir);     /* a leftover of an earlier attempt is never reused */
        if (r < 0)
                return error_set(ret_error, r, "image %s: cannot remove an old root in %s: %s", l->digest, job_dir,
                                 strerror(-r));
        jobfd = open(job_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (jobfd < 0)
                return error_set(ret_error, -errno, "image %s: cannot open %s: %m", l->digest, job_dir);
        r = make_top(jobfd);
        if (r < 0)
                return error_set(ret_error, r, "image %s: cannot create pond's layer in %s: %s", l->digest,
                                 job_dir, strerror(-r));
        if (mkdirat(jobfd, "rootfs", 0755) < 0)
                return error_set(ret_error, -errno, "image %s: cannot create %s/rootfs: %m", l->digest, job_dir);
        if (asprintf(&top, "%s/image-top", job_dir) < 0 || asprintf(&root, "%s/rootfs", job_dir) < 0)
                return -ENOMEM;
        if (strv_length(l->lowers) > OCI_MAX_LAYERS)
                return error_set(ret_error, -E2BIG, "image %s: more than %u layers", l->digest, OCI_MAX_LAYERS);
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                fds[i] = -EBADF;
        r = lower_list(top, l->lowers, userns_fd, fds, &lowers);
        if (r >= 0)
                r = overlay_options(lowers, &opts);
        if (r < 0) {
                close_all(fds, ELEMENTSOF(fds));
                return error_set(ret_error, r, "image %s: its layers do not fit one overlay mount%s: %s", l->digest,
                                 userns_fd >= 0 ? " mapped to the job's uid range" : "", strerror(-r));
        }
        /* no upperdir: read-only by construction; nosuid and nodev whatever the layers hold */
        r = mount("pond-image", root, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0 ? -errno : 0;
        close_all(fds, ELEMENTSOF(fds));
        if (r < 0)
                return error_set(ret_error, r, "image %s: cannot mount its layers at %s: %s", l->digest, root,
                                 strerror(-r));
        free(l->rootfs);
        l->rootfs = TAKE_PTR(root);
        return 0;
}
