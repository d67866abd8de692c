/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* userns.c: user namespaces made by pond. The job's own is created by a child that became the range's first
 * uid, so the namespace is owned by that uid: the kernel charges what the job's processes hold (inotify
 * instances, POSIX message queues, processes) to the job's user in the namespace and then to the
 * namespace's owner on the host, i.e. to the job's range, never to root or to a uid another job shares.
 * The helper children exist only to own a namespace while it is mapped and pinned; they are killed and
 * reaped on every path. */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "userns/userns.h"

/* Writes map to /proc/PID/{uid,gid}_map: which is "uid_map" or "gid_map". */
static int write_id_map(pid_t pid, const char *which, const char *map) {
        _cleanup_close_ int fd = -EBADF;
        char path[64];

        snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, which);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write_all(fd, map, strlen(map));
}

static int become_owner_and_unshare(void *userdata) {
        uid_t owner = *(const uid_t *) userdata;

        if (owner != 0 && (setgroups(0, NULL) < 0 || setresgid(owner, owner, owner) < 0 ||
                           setresuid(owner, owner, owner) < 0))
                return -errno;
        return unshare(CLONE_NEWUSER) < 0 ? -errno : 0;
}

/* A child that became uid/gid owner (if owner != 0) and unshared a user namespace, parked: the caller maps
 * the namespace through /proc/PID and kills the child. */
static int fork_namespace_owner(uid_t owner, PidRef *ret_child) {
        return fork_parked("(pond-userns)", become_owner_and_unshare, &owner, NULL, 0, ret_child);
}

int userns_map_one(uid_t inside_uid, gid_t inside_gid, uid_t outside_uid, gid_t outside_gid, int *ret_fd) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        char path[64], map[64];
        int fd, r;

        r = fork_namespace_owner(0, &child);
        if (r < 0)
                return r;
        snprintf(map, sizeof map, "%u %u 1\n", (unsigned) inside_uid, (unsigned) outside_uid);
        r = write_id_map(child.pid, "uid_map", map);
        if (r < 0)
                return r;
        snprintf(map, sizeof map, "%u %u 1\n", (unsigned) inside_gid, (unsigned) outside_gid);
        r = write_id_map(child.pid, "gid_map", map);
        if (r < 0)
                return r;
        snprintf(path, sizeof path, "/proc/%d/ns/user", (int) child.pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

int userns_create(const char *pin_path, uid_t base, uint32_t size) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        _cleanup_close_ int pin = -EBADF;
        char path[64], map[64];
        int r;

        if (!pin_path || base == 0 || size == 0)
                return -EINVAL;
        r = fork_namespace_owner(base, &child);
        if (r < 0)
                return log_debug_errno(r, "Cannot create a user namespace owned by uid %u: %m", (unsigned) base);
        snprintf(map, sizeof map, "0 %u %u\n", (unsigned) base, (unsigned) size);
        r = write_id_map(child.pid, "uid_map", map);
        if (r >= 0)
                r = write_id_map(child.pid, "gid_map", map);
        if (r < 0)
                return log_debug_errno(r, "Cannot map the job's user namespace to %s: %m", map);
        pin = open(pin_path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        if (pin < 0)
                return log_debug_errno(errno, "Cannot create %s: %m", pin_path);
        snprintf(path, sizeof path, "/proc/%d/ns/user", (int) child.pid);
        if (mount(path, pin_path, NULL, MS_BIND, NULL) < 0) {
                r = log_debug_errno(errno, "Cannot pin the job's user namespace at %s: %m", pin_path);
                (void) unlink(pin_path);
                return r;
        }
        return 0;
}

int userns_remove(const char *pin_path) {
        if (umount2(pin_path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return log_debug_errno(errno, "Cannot unmount %s: %m", pin_path);
        if (unlink(pin_path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
