/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stage.c: staging the checkout. Cost is a few mounts whatever the checkout's size: nothing is copied.
 * The lower view is an idmapped, read-only, nosuid, nodev clone of the checkout in which its owner
 * appears as the job user (others as the overflow id); writes go to an overlay upper directory in a
 * size-capped tmpfs, which is the job's disk quota and the change set collected afterwards. */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fileio.h"
#include "log.h"
#include "ns-open.h"
#include "oci.h"
#include "process-util.h"
#include "stage.h"

/* Writes "inside outside 1" to /proc/PID/{uid,gid}_map: which is "uid_map" or "gid_map". */
static int write_id_map(pid_t pid, const char *which, unsigned inside, unsigned outside) {
        _cleanup_close_ int fd = -EBADF;
        char path[64], map[64];

        snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, which);
        snprintf(map, sizeof map, "%u %u 1\n", inside, outside);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write_all(fd, map, strlen(map));
}

/* A user namespace mapping uid/gid owner -> JOB_UID/JOB_GID, as an fd for MOUNT_ATTR_IDMAP. The helper
 * process only exists to own the namespace while we open it; it is killed and reaped on every path. */
static int userns_for_owner(uid_t uid, gid_t gid, int *ret_fd) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        int sync_pipe[2], fd, r;
        char path[64], c;

        if (pipe2(sync_pipe, O_CLOEXEC) < 0)
                return -errno;
        rd = sync_pipe[0];
        wr = sync_pipe[1];
        r = safe_fork_full("(pond-userns)", NULL, &wr, 1,
                           FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_CLOSE_ALL_FDS, &child);
        if (r < 0)
                return r;
        if (r == 0) {
                if (unshare(CLONE_NEWUSER) < 0)
                        _exit(1);
                (void) write(wr, "x", 1);
                pause();
                _exit(0);
        }
        wr = safe_close(wr);
        /* EOF: the child could not unshare and exited. */
        if (read(rd, &c, 1) != 1)
                return -EPERM;
        r = write_id_map(child.pid, "uid_map", (unsigned) uid, (unsigned) JOB_UID);
        if (r < 0)
                return r;
        r = write_id_map(child.pid, "gid_map", (unsigned) gid, (unsigned) JOB_GID);
        if (r < 0)
                return r;
        snprintf(path, sizeof path, "/proc/%d/ns/user", (int) child.pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

/* Clones the checkout's mount (not its submounts) as source_ns sees it, idmaps it, and attaches it at target
 * (in our namespace: a detached clone goes anywhere). */
static int mount_idmapped(const char *source_ns, const char *src, const char *target, bool readonly) {
        _cleanup_close_ int tree = -EBADF, userns = -EBADF;
        struct mount_attr attr = {};
        struct stat st;
        int r;

        r = ns_open_tree(source_ns, src, OPEN_TREE_CLONE, &tree);
        if (r < 0)
                return log_debug_errno(r, "open_tree(%s) failed: %m", src);
        if (fstat(tree, &st) < 0)
                return log_debug_errno(errno, "Cannot stat checkout %s: %m", src);
        if (!S_ISDIR(st.st_mode))
                return log_debug_errno(ENOTDIR, "Checkout %s is not a directory", src);
        r = userns_for_owner(st.st_uid, st.st_gid, &userns);
        if (r < 0)
                return log_debug_errno(r, "Cannot create the idmapping user namespace: %m");
        attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0);
        attr.userns_fd = (uint64_t) userns;
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return log_debug_errno(errno, "Cannot idmap the checkout %s (does its file system support "
                                       "idmapped mounts?): %m", src);
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

static int mount_scratch(const char *job_dir, uint64_t bytes, char **ret_upper, char **ret_work) {
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
        r = mkdir_owned(upper, JOB_UID, JOB_GID, 0755);
        if (r < 0)
                return r;
        if (mkdir(work, 0700) < 0)
                return -errno;
        *ret_upper = TAKE_PTR(upper);
        *ret_work = TAKE_PTR(work);
        return 0;
}

static int stage_overlay(const char *job_dir, const char *source_ns, const char *checkout, uint64_t scratch_bytes,
                         Stage *s) {
        _cleanup_free_ char *work = NULL, *opts = NULL;
        int r;

        s->lower = path_join(job_dir, checkout ? "lower" : "empty");
        if (!s->lower)
                return -ENOMEM;
        if (mkdir(s->lower, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (checkout) {
                r = mount_idmapped(source_ns, checkout, s->lower, true);
                if (r < 0)
                        return r;
        }
        r = mount_scratch(job_dir, scratch_bytes, &s->upper, &work);
        if (r < 0)
                return r;
        if (asprintf(&opts, "lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,metacopy=off,index=off",
                     s->lower, s->upper, work) < 0)
                return -ENOMEM;
        if (mount("pond-workspace", s->workspace, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
                return log_debug_errno(errno, "Cannot mount the overlay at %s: %m", s->workspace);
        return 0;
}

int stage_setup(const char *job_dir, const char *source_ns, const char *checkout, FsPosture fs, uint64_t scratch_bytes,
                Stage *ret) {
        Stage s = {};
        int r;

        s.workspace = path_join(job_dir, "workspace");
        if (!s.workspace)
                return -ENOMEM;
        if (mkdir(s.workspace, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                goto fail;
        }
        switch (fs) {
        case FS_READONLY:
                s.readonly = true;
                r = checkout ? mount_idmapped(source_ns, checkout, s.workspace, true) : 0;
                if (r >= 0 && checkout && !(s.lower = strdup(s.workspace)))
                        r = -ENOMEM;
                break;
        case FS_HOST:
                /* Profile none edits the checkout in place: the explicit, local-only opt-out. */
                if (checkout) {
                        r = mount_idmapped(source_ns, checkout, s.workspace, false);
                        break;
                }
                _fallthrough_;
        case FS_OVERLAY:
                r = stage_overlay(job_dir, source_ns, checkout, scratch_bytes, &s);
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
