/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stage.c: staging the checkout. Cost is a few mounts whatever the checkout's size: nothing is copied.
 * The lower view is an idmapped, read-only, nosuid, nodev clone of the checkout in which its owner
 * appears as the job user (others as the overflow id); writes go to an overlay upper directory in a
 * size-capped tmpfs, which is the job's disk quota and the change set collected afterwards. */
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "stage/ns-open.h"
#include "stage/stage.h"
#include "userns/userns.h"

/* Clones the mount and directory checkout_fd is open on (not its submounts), in source_ns where it was
 * opened, idmapped so that its owner is the job user (host ids job_uid/job_gid), and attaches it at target
 * (in our namespace: a detached clone goes anywhere). The fd is what acceptance opened and checked: whatever
 * the checkout's path leads to by now, the tree mounted is that one, and its owner is checked on the clone. */
static int mount_checkout(const char *source_ns, int checkout_fd, uid_t owner, const char *target, bool readonly,
                          uid_t job_uid, gid_t job_gid) {
        _cleanup_close_ int tree = -EBADF, userns = -EBADF;
        struct stat st;
        int r;

        r = ns_clone_fd(source_ns, checkout_fd, 0, &tree);
        if (r < 0)
                return log_debug_errno(r, "Cannot clone the checkout's mount: %m");
        if (fstat(tree, &st) < 0)
                return log_debug_errno(errno, "Cannot stat the checkout: %m");
        if (!S_ISDIR(st.st_mode))
                return log_debug_errno(ENOTDIR, "The checkout is not a directory");
        if (owner != STAGE_ANY_OWNER && st.st_uid != owner)
                return log_debug_errno(EPERM, "The checkout is owned by uid %u, not by the job's submitter (uid %u)",
                                       (unsigned) st.st_uid, (unsigned) owner);
        r = userns_map_one(st.st_uid, st.st_gid, job_uid, job_gid, &userns);
        if (r < 0)
                return log_debug_errno(r, "Cannot create the idmapping user namespace: %m");
        r = idmap_tree(tree, userns, readonly ? IDMAP_RDONLY : 0);
        if (r < 0)
                return log_debug_errno(r, "Cannot idmap the checkout (does its file system support idmapped "
                                       "mounts?): %m");
        if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return log_debug_errno(errno, "move_mount to %s failed: %m", target);
        return 0;
}

static int mkdir_owned(const char *path, uid_t uid, gid_t gid, mode_t mode) {
        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return -errno;
        if (chown(path, uid, gid) < 0)
                return -errno;
        return 0;
}

static char *path_join(const char *a, const char *b) {
        char *p = NULL;
        return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

static int mount_scratch(const char *job_dir, uint64_t bytes, uid_t job_uid, gid_t job_gid, char **ret_upper,
                         char **ret_work) {
        _cleanup_free_ char *scratch = path_join(job_dir, "scratch"), *upper = NULL, *work = NULL;
        char opts[128];
        int r;

        if (!scratch)
                return -ENOMEM;
        if (mkdir(scratch, 0700) < 0 && errno != EEXIST)
                return -errno;
        /* nr_inodes bounds inode memory the same way size bounds data. */
        snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%llu,mode=0700", (unsigned long long) bytes,
                 (unsigned long long) (bytes / 4096 < 1024 ? 1024 : bytes / 4096));
        if (mount("pond-scratch", scratch, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return log_debug_errno(errno, "Cannot mount the scratch tmpfs at %s: %m", scratch);
        upper = path_join(scratch, "upper");
        work = path_join(scratch, "work");
        if (!upper || !work)
                return -ENOMEM;
        /* The job user must be able to create entries at the workspace's top level. */
        r = mkdir_owned(upper, job_uid, job_gid, 0755);
        if (r < 0)
                return r;
        if (mkdir(work, 0700) < 0)
                return -errno;
        *ret_upper = TAKE_PTR(upper);
        *ret_work = TAKE_PTR(work);
        return 0;
}

static int stage_overlay(const char *job_dir, const char *source_ns, int checkout_fd, uid_t owner,
                         uint64_t scratch_bytes, uid_t job_uid, gid_t job_gid, Stage *s) {
        _cleanup_free_ char *work = NULL, *opts = NULL;
        int r;

        s->lower = path_join(job_dir, checkout_fd >= 0 ? "lower" : "empty");
        if (!s->lower)
                return -ENOMEM;
        if (mkdir(s->lower, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (checkout_fd >= 0) {
                r = mount_checkout(source_ns, checkout_fd, owner, s->lower, true, job_uid, job_gid);
                if (r < 0)
                        return r;
        }
        r = mount_scratch(job_dir, scratch_bytes, job_uid, job_gid, &s->upper, &work);
        if (r < 0)
                return r;
        if (asprintf(&opts, "lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,metacopy=off,index=off",
                     s->lower, s->upper, work) < 0)
                return -ENOMEM;
        if (mount("pond-workspace", s->workspace, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
                return log_debug_errno(errno, "Cannot mount the overlay at %s: %m", s->workspace);
        return 0;
}

int stage_setup(const char *job_dir, const char *source_ns, int checkout_fd, FsPosture fs, uint64_t scratch_bytes,
                uid_t job_uid, gid_t job_gid, Stage *ret) {
        return stage_setup_owned(job_dir, source_ns, checkout_fd, STAGE_ANY_OWNER, fs, scratch_bytes, job_uid,
                                 job_gid, ret);
}

int stage_setup_owned(const char *job_dir, const char *source_ns, int checkout_fd, uid_t owner, FsPosture fs,
                      uint64_t scratch_bytes, uid_t job_uid, gid_t job_gid, Stage *ret) {
        Stage s = {};
        int r;

        s.workspace = path_join(job_dir, "workspace");
        if (!s.workspace)
                return -ENOMEM;
        /* Its mode whatever the umask (the supervisor's unit has 0077): without a checkout it is what the job
         * sees, and a job in a uid range of its own is "other" to it. */
        if ((mkdir(s.workspace, 0755) < 0 && errno != EEXIST) || chmod(s.workspace, 0755) < 0) {
                r = -errno;
                goto fail;
        }
        switch (fs) {
        case FS_READONLY:
                s.readonly = true;
                r = checkout_fd >= 0 ? mount_checkout(source_ns, checkout_fd, owner, s.workspace, true, job_uid,
                                                      job_gid) : 0;
                if (r >= 0 && checkout_fd >= 0 && !(s.lower = strdup(s.workspace)))
                        r = -ENOMEM;
                break;
        case FS_HOST:
                /* Profile none edits the checkout in place: the explicit, local-only opt-out. */
                if (checkout_fd >= 0) {
                        r = mount_checkout(source_ns, checkout_fd, owner, s.workspace, false, job_uid, job_gid);
                        break;
                }
                _fallthrough_;
        case FS_OVERLAY:
                r = stage_overlay(job_dir, source_ns, checkout_fd, owner, scratch_bytes, job_uid, job_gid, &s);
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0)
                goto fail;
        *ret = s;
        return 0;
fail:
        stage_done(&s);
        (void) stage_teardown(job_dir);
        return r;
}

int stage_teardown(const char *job_dir) {
        static const char *const mounts[] = { "workspace", "lower", "scratch" };
        int r = 0;

        /* Top-most first: the overlay pins lower and scratch. */
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
                _cleanup_free_ char *p = path_join(job_dir, mounts[i]);
                if (!p)
                        return -ENOMEM;
                /* Loop: a mountpoint may have been stacked by a partial earlier run. */
                for (int n = 0; n < 16; n++)
                        if (umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
                                if (errno != EINVAL && errno != ENOENT)
                                        r = log_debug_errno(errno, "Cannot unmount %s: %m", p);
                                break;
                        }
        }
        return r;
}

void stage_done(Stage *s) {
        free(s->workspace);
        free(s->lower);
        free(s->upper);
        *s = (Stage) {};
}
