/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup-util.h: what a cgroup file system looks like here. The layout (unified, hybrid, legacy) is told
 * apart by file system types, as systemd does, not guessed from which paths happen to open; the path
 * helpers name a cgroup in a v1 controller's hierarchy or in the v2 one of that layout. */
#pragma once

#include "basic/macro.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

typedef enum CgroupLayout {
        CGROUP_LAYOUT_UNIFIED, /* cgroup2 on /sys/fs/cgroup */
        CGROUP_LAYOUT_HYBRID,  /* v1 controllers, plus cgroup2 on /sys/fs/cgroup/unified */
        CGROUP_LAYOUT_LEGACY,  /* v1 only */
        CGROUP_LAYOUT_NONE,    /* nothing recognisable mounted */
        _CGROUP_LAYOUT_MAX,
        _CGROUP_LAYOUT_INVALID = -EINVAL,
} CgroupLayout;

const char *cgroup_layout_to_string(CgroupLayout l);

/* The layout below root (normally CGROUP_ROOT): statfs of root and of root/unified. */
CgroupLayout cgroup_layout_detect(const char *root);

/* Whether a v1 (cgroup, not cgroup2) hierarchy is mounted at path. */
bool cgroup_is_v1_hierarchy(const char *path);

/* Whether a v1 layout has controller hierarchies (legacy or hybrid). */
static inline bool cgroup_layout_has_v1(CgroupLayout l) {
        return l == CGROUP_LAYOUT_LEGACY || l == CGROUP_LAYOUT_HYBRID;
}

/* root/CONTROLLER followed by cgroup (an absolute cgroup path such as "/pond.slice/x.scope", or NULL for
 * the hierarchy itself). */
int cgroup_v1_path(const char *root, const char *controller, const char *cgroup, char **ret);

/* The cgroup in the v2 hierarchy of layout: root itself when unified, root/unified when hybrid;
 * -ENOMEDIUM for a layout without one. */
int cgroup_v2_path(const char *root, CgroupLayout layout, const char *cgroup, char **ret);

/* Moves pid into the cgroup at dir (a directory of a hierarchy: dir/cgroup.procs). */
int cgroup_procs_add(const char *dir, pid_t pid);
