/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-usage.c: what a job uses, for `pondctl status`: read live from its scope's cgroup while it runs (the
 * same counters and keys as the result's "usage", cgroup-usage.c), or the signed result's once it ended. */
#include <inttypes.h>
#include <stdio.h>

#include "basic/json-util.h"
#include "cgroup/cgroup-usage.h"
#include "ctl.h"

json_object *ctl_usage_live(const JobPaths *p) {
        CgroupUsage u;
        json_object *o;

        if (cgroup_usage_read(p->scope_cgroup, &u) < 0)
                return NULL;
        o = cgroup_usage_to_json(&u);
        if (o)
                json_object_object_add(o, "live", json_object_new_boolean(true));
        return o;
}

static bool figure(json_object *usage, const char *key, uint64_t *ret) {
        json_object *v;

        if (!json_object_object_get_ex(usage, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        *ret = json_object_get_uint64(v);
        return true;
}

static void bytes(FILE *f, const char *what, json_object *usage, const char *key) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        uint64_t v;
        double d;
        size_t i = 0;

        if (!figure(usage, key, &v)) {
                fprintf(f, ", %s -", what);
                return;
        }
        for (d = (double) v; d >= 1024 && i + 1 < ELEMENTSOF(units); i++)
                d /= 1024;
        fprintf(f, i == 0 ? ", %s %.0f %s" : ", %s %.1f %s", what, d, units[i]);
}

void ctl_usage_print(FILE *f, const char *prefix, json_object *usage) {
        uint64_t user, sys, tasks;

        if (!usage || !json_object_is_type(usage, json_type_object))
                return;
        fputs(prefix, f);
        if (figure(usage, "cpu_user_ms", &user) && figure(usage, "cpu_system_ms", &sys))
                fprintf(f, "cpu %" PRIu64 ".%03" PRIu64 " s user + %" PRIu64 ".%03" PRIu64 " s system", user / 1000,
                        user % 1000, sys / 1000, sys % 1000);
        else
                fputs("cpu -", f);
        bytes(f, "memory peak", usage, "memory_peak_bytes");
        bytes(f, "io read", usage, "io_read_bytes");
        bytes(f, "written", usage, "io_write_bytes");
        if (figure(usage, "tasks_peak", &tasks))
                fprintf(f, ", tasks peak %" PRIu64, tasks);
        if (json_object_object_get_ex(usage, "net_bytes_up", NULL)) {
                bytes(f, "net up", usage, "net_bytes_up");
                bytes(f, "down", usage, "net_bytes_down");
        }
        fprintf(f, "%s\n", json_get_true(usage, "live") ? " (live)" : "");
}
