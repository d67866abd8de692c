/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* probe-cgroup.c: the cgroup layout (unified, hybrid, legacy: cgroup_layout_detect() in cgroup-util.c) and
 * which controllers pond can really limit through. A controller is usable only where its hierarchy is
 * mounted read-write: nspawn, for one, mounts v1 controllers read-only in a container, and a limit that
 * cannot be written is no limit. */
#include <sys/statvfs.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "probe.h"

/* v2 names; v1 calls io blkio. */
static const char *const controller_table[_PROBE_CONTROLLER_MAX] = {
        [PROBE_CONTROLLER_CPU] = "cpu",
        [PROBE_CONTROLLER_MEMORY] = "memory",
        [PROBE_CONTROLLER_PIDS] = "pids",
        [PROBE_CONTROLLER_CPUSET] = "cpuset",
        [PROBE_CONTROLLER_IO] = "io",
};

const char *probe_controller_to_string(ProbeController c) {
        return c < _PROBE_CONTROLLER_MAX ? controller_table[c] : NULL;
}

/* "mounted read-only" or NULL when a hierarchy at path can be written to. */
static const char *writable(const char *path) {
        struct statvfs v;

        if (statvfs(path, &v) < 0)
                return "cannot be inspected";
        if (v.f_flag & ST_RDONLY)
                return "its hierarchy is mounted read-only";
        if (access(path, W_OK) < 0)
                return "its hierarchy is not writable by this process";
        return NULL;
}

/* Is name listed in dir/cgroup.controllers (space separated)? */
static bool v2_lists(const char *dir, const char *name) {
        _cleanup_free_ char *path = strdupf("%s/cgroup.controllers", dir), *buf = NULL;
        size_t len;

        if (!path || read_full_file(path, 4096, &buf, &len) < 0)
                return false;
        for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
                if (streq(t, name))
                        return true;
        return false;
}

static void controller_v2(const char *dir, ProbeController c, ProbeCgroup *ret) {
        const char *why;

        if (!v2_lists(dir, controller_table[c])) {
                ret->reason[c] = strdupf("not in %s/cgroup.controllers", dir);
                return;
        }
        why = writable(dir);
        if (why) {
                ret->reason[c] = strdupf("%s: %s", dir, why);
                return;
        }
        ret->usable[c] = 2;
}

/* v1: the controller's own hierarchy, mounted at root/NAME (co-mounts appear through symlinks). */
static void controller_v1(const char *root, CgroupLayout layout, ProbeController c, ProbeCgroup *ret) {
        const char *name = c == PROBE_CONTROLLER_IO ? "blkio" : controller_table[c];
        _cleanup_free_ char *dir = NULL, *unified = NULL;
        const char *why;

        if (cgroup_v1_path(root, name, NULL, &dir) < 0)
                return;
        if (!cgroup_is_v1_hierarchy(dir)) {
                /* On a hybrid host a controller not bound to v1 may live in the unified hierarchy. */
                if (cgroup_v2_path(root, layout, NULL, &unified) >= 0 &&
                    v2_lists(unified, controller_table[c]))
                        return controller_v2(unified, c, ret);
                ret->reason[c] = strdupf("no v1 hierarchy mounted at %s", dir);
                return;
        }
        why = writable(dir);
        if (why) {
                ret->reason[c] = strdupf("%s: %s", dir, why);
                return;
        }
        ret->usable[c] = 1;
}

void probe_cgroup(const char *root, ProbeCgroup *ret) {
        *ret = (ProbeCgroup) {};
        ret->layout = cgroup_layout_detect(root);
        for (ProbeController c = 0; c < _PROBE_CONTROLLER_MAX; c++)
                switch (ret->layout) {
                case CGROUP_LAYOUT_UNIFIED:
                        controller_v2(root, c, ret);
                        break;
                case CGROUP_LAYOUT_HYBRID:
                case CGROUP_LAYOUT_LEGACY:
                        controller_v1(root, ret->layout, c, ret);
                        break;
                default:
                        ret->reason[c] = strdupf("no cgroup file system at %s", root);
                        break;
                }
}
