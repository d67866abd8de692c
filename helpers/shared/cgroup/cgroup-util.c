/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup-util.c: the cgroup layout from statfs, cgroup paths in v1 and v2 hierarchies, and moving a process
 * into a cgroup. */
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>

#include "basic/fileio.h"
#include "cgroup/cgroup-util.h"

static const char *const layout_table[_CGROUP_LAYOUT_MAX] = {
        [CGROUP_LAYOUT_UNIFIED] = "unified",
        [CGROUP_LAYOUT_HYBRID] = "hybrid",
        [CGROUP_LAYOUT_LEGACY] = "legacy",
        [CGROUP_LAYOUT_NONE] = "none",
};

const char *cgroup_layout_to_string(CgroupLayout l) {
        return l >= 0 && l < _CGROUP_LAYOUT_MAX ? layout_table[l] : NULL;
}

static bool fs_is(const char *path, long magic) {
        struct statfs s;
        return statfs(path, &s) >= 0 && s.f_type == magic;
}

bool cgroup_is_v1_hierarchy(const char *path) {
        return fs_is(path, CGROUP_SUPER_MAGIC);
}

CgroupLayout cgroup_layout_detect(const char *root) {
        _cleanup_free_ char *unified = NULL;

        if (fs_is(root, CGROUP2_SUPER_MAGIC))
                return CGROUP_LAYOUT_UNIFIED;
        if (!fs_is(root, TMPFS_MAGIC))
                return CGROUP_LAYOUT_NONE;
        if (asprintf(&unified, "%s/unified", root) >= 0 && fs_is(unified, CGROUP2_SUPER_MAGIC))
                return CGROUP_LAYOUT_HYBRID;
        return CGROUP_LAYOUT_LEGACY;
}

int cgroup_v1_path(const char *root, const char *controller, const char *cgroup, char **ret) {
        char *p = NULL;

        if (asprintf(&p, "%s/%s%s", root, controller, cgroup ?: "") < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int cgroup_v2_path(const char *root, CgroupLayout layout, const char *cgroup, char **ret) {
        const char *sub = layout == CGROUP_LAYOUT_UNIFIED ? "" :
                          layout == CGROUP_LAYOUT_HYBRID ? "/unified" : NULL;
        char *p = NULL;

        if (!sub)
                return -ENOMEDIUM;
        if (asprintf(&p, "%s%s%s", root, sub, cgroup ?: "") < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int cgroup_procs_add(const char *dir, pid_t pid) {
        _cleanup_free_ char *procs = NULL;
        _cleanup_close_ int fd = -EBADF;
        char line[32];

        if (pid <= 0)
                return -EINVAL;
        if (asprintf(&procs, "%s/cgroup.procs", dir) < 0)
                return -ENOMEM;
        fd = open(procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        snprintf(line, sizeof line, "%d", (int) pid);
        return write_all(fd, line, strlen(line));
}
