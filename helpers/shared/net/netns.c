/* netns.c: named network namespaces, as `ip netns add/delete` make them: a fresh namespace kept alive by a
 * bind mount of its nsfs inode, so runtimes can join it by path and cleanup can find it by name. */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fileio.h"
#include "log.h"
#include "net.h"

int netns_create(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        int status, r;
        pid_t pid;

        r = mkdir_p(NET_NETNS_DIR, 0755);
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        if (fd < 0)
                return log_debug_errno(errno, "Cannot create %s: %m", path);
        /* The child unshares only the network: the bind mount lands in our mount namespace. */
        pid = fork();
        if (pid < 0) {
                r = -errno;
                goto fail;
        }
        if (pid == 0) {
                if (unshare(CLONE_NEWNET) < 0 || mount("/proc/self/ns/net", path, NULL, MS_BIND, NULL) < 0)
                        _exit(1);
                _exit(0);
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                r = -EPERM;
                goto fail;
        }
        return 0;
fail:
        (void) unlink(path);
        return log_debug_errno(r, "Cannot create the network namespace %s: %m", path);
}

int netns_remove(const char *path) {
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return log_debug_errno(errno, "Cannot unmount %s: %m", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
