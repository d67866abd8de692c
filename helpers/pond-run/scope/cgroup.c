/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup.c: reading a unit's cgroup: OOM kill counters on the v1 memory hierarchy or cgroup v2, whichever
 * the layout (cgroup-util.c) has, and the v1 directories the runtime leaves behind. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "cgroup/cgroup-util.h"
#include "scope/cgroup.h"

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

/* The sum of KEY in FILE over the cgroup at dirfd and every cgroup below it; *found says whether any had the
 * file. v1 counts an OOM kill only in the memcg whose limit was hit, and v2's memory.events.local only in
 * the cgroup it happened in: a kill in the payload's cgroup (or one the runtime made below it) is the scope's
 * too. */
static int sum_tree(int dirfd, int depth, const char *file, const char *key, uint64_t *sum, bool *found) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        uint64_t v;

        if (depth > 32)
                return -ELOOP;
        if (read_counter(dirfd, file, key, &v) >= 0) {
                *sum += v;
                *found = true;
        }
        if (opendir_fd(dirfd, &d) < 0)
                return 0; /* an unreadable child adds nothing */
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int c = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (c >= 0)
                        (void) sum_tree(c, depth + 1, file, key, sum, found);
        }
        return 0;
}

/* v1 memory where the layout has it; else (or where v1 has no memory hierarchy) the v2 hierarchy. */
int cgroup_oom_kills(const char *cgroup_path, uint64_t *ret) {
        return cgroup_oom_kills_at(CGROUP_ROOT, cgroup_layout_detect(CGROUP_ROOT), cgroup_path, ret);
}

int cgroup_oom_kills_at(const char *root, CgroupLayout layout, const char *cgroup_path, uint64_t *ret) {
        _cleanup_free_ char *v1 = NULL, *v2 = NULL;
        _cleanup_close_ int fd = -EBADF;
        uint64_t sum = 0;
        int r;

        if (cgroup_layout_has_v1(layout)) {
                r = cgroup_v1_path(root, "memory", cgroup_path, &v1);
                if (r < 0)
                        return r;
                fd = open(v1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0) {
                        bool found = false;

                        r = sum_tree(fd, 0, "memory.oom_control", "oom_kill", &sum, &found);
                        if (r < 0)
                                return r;
                        *ret = sum;
                        return 0;
                }
                if (layout == CGROUP_LAYOUT_LEGACY)
                        return -errno;
        }
        r = cgroup_v2_path(root, layout, cgroup_path, &v2);
        if (r < 0)
                return r;
        fd = open(v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* memory.events.local summed over the subtree where the kernel has it (5.2 on): the same figure
         * whatever the hierarchy's mount options (memory_localevents makes memory.events local too). Else
         * memory.events, hierarchical by default. */
        bool found = false;
        r = sum_tree(fd, 0, "memory.events.local", "oom_kill", &sum, &found);
        if (r < 0)
                return r;
        if (found) {
                *ret = sum;
                return 0;
        }
        r = read_counter(fd, "memory.events", "oom_kill", ret);
        return r;
}

/* v2: the leaves pond made below the scope (cgroup.h), where systemd's own removal of the scope's subtree
 * did not take them already. */
static int remove_v2_leaves(const char *scope_cgroup) {
        static const char *const leaves[] = { CGROUP_LEAF_RUNTIME, CGROUP_LEAF_PIN };
        _cleanup_free_ char *dir = NULL;
        int r = 0;

        if (cgroup_v2_path(CGROUP_ROOT, CGROUP_LAYOUT_UNIFIED, scope_cgroup, &dir) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(leaves); i++) {
                _cleanup_free_ char *leaf = NULL;

                if (asprintf(&leaf, "%s/%s", dir, leaves[i]) < 0)
                        return -ENOMEM;
                if (rmdir(leaf) < 0 && errno != ENOENT && errno != ENOTDIR)
                        r = log_debug_errno(errno, "Cannot remove %s: %m", leaf);
        }
        return r;
}

/* The runtime creates the payload's cgroup in every v1 hierarchy, also where systemd does not manage the
 * scope, and removes only the leaf: remove the empty directories left there (rmdir only: a non-empty
 * cgroup stays and is reported). A unified layout has no such hierarchies. */
int cgroup_remove_leftovers(const char *scope_cgroup) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r = 0;

        CgroupLayout layout = cgroup_layout_detect(CGROUP_ROOT);

        if (layout == CGROUP_LAYOUT_UNIFIED)
                return remove_v2_leaves(scope_cgroup);
        if (!cgroup_layout_has_v1(layout))
                return 0;
        d = opendir(CGROUP_ROOT);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *leaf = NULL, *scope = NULL;

                if (de->d_name[0] == '.')
                        continue;
                if (cgroup_v1_path(CGROUP_ROOT, de->d_name, scope_cgroup, &scope) < 0 ||
                    asprintf(&leaf, "%s/payload", scope) < 0)
                        return -ENOMEM;
                if (rmdir(leaf) < 0 && errno != ENOENT && errno != ENOTDIR)
                        r = log_debug_errno(errno, "Cannot remove %s: %m", leaf);
                if (rmdir(scope) < 0 && errno != ENOENT && errno != ENOTDIR)
                        r = log_debug_errno(errno, "Cannot remove %s: %m", scope);
        }
        return r;
}

int cgroup_v2_attach_leaf_at(const char *root, CgroupLayout layout, const char *scope_cgroup, const char *leaf,
                             pid_t pid) {
        _cleanup_free_ char *dir = NULL, *leaf_dir = NULL;
        int r;

        if (layout != CGROUP_LAYOUT_UNIFIED)
                return -ENOENT;
        if (pid <= 0 || !leaf || strchr(leaf, '/') || leaf[0] == '.')
                return -EINVAL;
        r = cgroup_v2_path(root, layout, scope_cgroup, &dir);
        if (r < 0)
                return r;
        if (asprintf(&leaf_dir, "%s/%s", dir, leaf) < 0)
                return -ENOMEM;
        if (mkdir(leaf_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        return cgroup_procs_add(leaf_dir, pid);
}

int cgroup_v2_attach_leaf(const char *scope_cgroup, const char *leaf, pid_t pid) {
        return cgroup_v2_attach_leaf_at(CGROUP_ROOT, cgroup_layout_detect(CGROUP_ROOT), scope_cgroup, leaf, pid);
}

int cgroup_read_procs(const char *cgroup_path, pid_t *pids, size_t max, size_t *ret_n) {
        CgroupLayout layout = cgroup_layout_detect(CGROUP_ROOT);
        _cleanup_free_ char *dir = NULL, *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0;
        int r;

        r = cgroup_layout_has_v1(layout) ? cgroup_v1_path(CGROUP_ROOT, "pids", cgroup_path, &dir)
                                         : cgroup_v2_path(CGROUP_ROOT, layout, cgroup_path, &dir);
        if (r < 0)
                return r;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = read_full_file_at(fd, "cgroup.procs", 1024 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        for (char *p = buf, *end; *p; p = end) {
                long v = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (v > 0 && n < max)
                        pids[n++] = (pid_t) v;
                while (*end == '\n')
                        end++;
        }
        *ret_n = n;
        return 0;
}

/* On cgroup v1 the OOM counters vanish with the cgroup, and systemd removes an empty scope's cgroups as
 * soon as the payload is dead. A process placed in the memcg (and only there: systemd and KillUnit see the
 * scope through another hierarchy) keeps it, and its oom_kill count, until the supervisor has read it. */
int cgroup_oom_pin(const char *cgroup_path, pid_t pid) {
        _cleanup_free_ char *dir = NULL;
        int r;

        if (!cgroup_layout_has_v1(cgroup_layout_detect(CGROUP_ROOT)))
                return -ENOENT;
        if (pid <= 0)
                return -EINVAL;
        r = cgroup_v1_path(CGROUP_ROOT, "memory", cgroup_path, &dir);
        if (r < 0)
                return r;
        return cgroup_procs_add(dir, pid);
}

/* The memcg's OOM notification (cgroup.event_control) fires when the memcg runs out of memory, but also
 * when the memcg is removed: it is a hint to read the oom_kill count, never an OOM kill by itself. */
int cgroup_oom_watch(const char *cgroup_path, int *ret_eventfd) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dfd = -EBADF, oom = -EBADF, ctl = -EBADF, efd = -EBADF;
        char line[64];
        int r;

        if (!cgroup_layout_has_v1(cgroup_layout_detect(CGROUP_ROOT)))
                return -ENOENT;
        r = cgroup_v1_path(CGROUP_ROOT, "memory", cgroup_path, &dir);
        if (r < 0)
                return r;
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
