/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* idmap.c: idmapped clones of mounts (mount_setattr(MOUNT_ATTR_IDMAP)): the job sees the checkout, the host's
 * /usr and an image's layers with the owners its user namespace maps, while nothing on disk changes. */
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "userns/userns.h"

int idmap_tree(int tree_fd, int userns_fd, unsigned flags) {
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                            (flags & IDMAP_RDONLY ? MOUNT_ATTR_RDONLY : 0) |
                            (flags & IDMAP_NOEXEC ? MOUNT_ATTR_NOEXEC : 0),
                .userns_fd = (uint64_t) userns_fd,
        };

        return syscall(SYS_mount_setattr, tree_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ? -errno : 0;
}

int idmap_clone(const char *src, int userns_fd, unsigned flags, int *ret_tree_fd) {
        _cleanup_close_ int tree = -EBADF;
        struct stat st;
        int r;

        if (stat(src, &st) < 0)
                return log_debug_errno(errno, "Cannot stat %s: %m", src);
        if (!S_ISDIR(st.st_mode))
                return log_debug_errno(ENOTDIR, "%s is not a directory", src);
        tree = (int) syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (tree < 0)
                return log_debug_errno(errno, "open_tree(%s) failed: %m", src);
        r = idmap_tree(tree, userns_fd, flags);
        if (r < 0)
                return log_debug_errno(r, "Cannot idmap %s (does its file system support idmapped mounts?): %m", src);
        *ret_tree_fd = TAKE_FD(tree);
        return 0;
}

int idmap_mount(const char *src, const char *target, int userns_fd, unsigned flags) {
        _cleanup_close_ int tree = -EBADF;
        int r = idmap_clone(src, userns_fd, flags, &tree);

        if (r < 0)
                return r;
        if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return log_debug_errno(errno, "move_mount to %s failed: %m", target);
        return 0;
}
