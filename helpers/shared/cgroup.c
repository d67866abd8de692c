/* cgroup.c: reading a unit's cgroup: OOM kill counters on the v1 memory hierarchy or cgroup v2. */
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/eventfd.h>

#include "fileio.h"
#include "log.h"
#include "scope.h"

static int read_counter(int dirfd, const char *file, const char *key, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t klen = strlen(key);
        int r;

        r = read_full_file_at(dirfd, file, 64 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
                        return sscanf(line + klen + 1, "%" SCNu64, ret) == 1 ? 0 : -EINVAL;
        return -ENOENT;
}

/* v1 counts an OOM kill only in the memcg whose limit was hit: sum over the subtree. */
static int sum_v1(int dirfd, int depth, uint64_t *sum) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        uint64_t v;

        if (depth > 32)
                return -ELOOP;
        if (read_counter(dirfd, "memory.oom_control", "oom_kill", &v) >= 0)
                *sum += v;
        if (opendir_fd(dirfd, &d) < 0)
                return 0; /* an unreadable child adds nothing */
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int c = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (c >= 0)
                        (void) sum_v1(c, depth + 1, sum);
        }
        return 0;
}

int cgroup_oom_kills(const char *cgroup_path, uint64_t *ret) {
        _cleanup_free_ char *v1 = NULL, *v2 = NULL;
        _cleanup_close_ int fd = -EBADF;
        uint64_t sum = 0;

        if (asprintf(&v1, "/sys/fs/cgroup/memory%s", cgroup_path) < 0 ||
            asprintf(&v2, "/sys/fs/cgroup%s", cgroup_path) < 0)
                return -ENOMEM;
        fd = open(v1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                int r = sum_v1(fd, 0, &sum);
                if (r < 0)
                        return r;
                *ret = sum;
                return 0;
        }
        fd = open(v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* v2 memory.events is hierarchical already. */
        return read_counter(fd, "memory.events", "oom_kill", ret);
}

/* The runtime creates the payload's cgroup in every v1 hierarchy, also where systemd does not manage the
 * scope, and removes only the leaf: remove the empty directories left there (rmdir only: a non-empty
 * cgroup stays and is reported). */
int cgroup_remove_leftovers(const char *scope_cgroup) {
        _cleanup_closedir_ DIR *d = opendir("/sys/fs/cgroup");
        struct dirent *de;
        int r = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *leaf = NULL, *scope = NULL;

                if (de->d_name[0] == '.')
                        continue;
                if (asprintf(&leaf, "/sys/fs/cgroup/%s%s/payload", de->d_name, scope_cgroup) < 0 ||
                    asprintf(&scope, "/sys/fs/cgroup/%s%s", de->d_name, scope_cgroup) < 0)
                        return -ENOMEM;
                if (rmdir(leaf) < 0 && errno != ENOENT && errno != ENOTDIR)
                        r = log_debug_errno(errno, "Cannot remove %s: %m", leaf);
                if (rmdir(scope) < 0 && errno != ENOENT && errno != ENOTDIR)
                        r = log_debug_errno(errno, "Cannot remove %s: %m", scope);
        }
        return r;
}

/* On cgroup v1 the OOM counters vanish with the cgroup, and systemd removes an empty scope's cgroups as
 * soon as the payload is dead: the supervisor registers for the memcg's OOM notification instead
 * (cgroup.event_control), which fires when the memcg runs out of memory and the OOM killer acts. */
int cgroup_oom_watch(const char *cgroup_path, int *ret_eventfd) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dfd = -EBADF, oom = -EBADF, ctl = -EBADF, efd = -EBADF;
        char line[64];
        int r;

        if (asprintf(&dir, "/sys/fs/cgroup/memory%s", cgroup_path) < 0)
                return -ENOMEM;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        oom = openat(dfd, "memory.oom_control", O_RDONLY | O_CLOEXEC);
        ctl = openat(dfd, "cgroup.event_control", O_WRONLY | O_CLOEXEC);
        if (oom < 0 || ctl < 0)
                return -errno;
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return -errno;
        snprintf(line, sizeof line, "%d %d", efd, oom);
        r = write_all(ctl, line, strlen(line));
        if (r < 0)
                return r;
        *ret_eventfd = TAKE_FD(efd);
        return 0;
}
