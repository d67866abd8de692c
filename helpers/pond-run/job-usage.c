/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-usage.c: what the job used, for its result's "usage" (docs/result-format.md): the scope's cgroup
 * counters (cgroup-usage.c), read once the payload is over and before the scope is stopped, and the bytes
 * its egress proxy and broker moved; and, once its result is signed, the worker's Prometheus counters
 * (metrics.c, docs/operations.md "Metrics"). */
#include <inttypes.h>

#include "basic/dirs.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "job.h"
#include "record/metrics.h"

/* Counters only grow: a later reading's figure replaces an earlier one, one it could not read does not. */
static void merge(CgroupUsage *into, const CgroupUsage *u) {
        uint64_t *dst[] = { &into->cpu_user_usec, &into->cpu_system_usec, &into->memory_peak_bytes,
                            &into->io_read_bytes, &into->io_write_bytes, &into->tasks_peak };
        const uint64_t src[] = { u->cpu_user_usec, u->cpu_system_usec, u->memory_peak_bytes, u->io_read_bytes,
                                 u->io_write_bytes, u->tasks_peak };

        for (size_t i = 0; i < ELEMENTSOF(src); i++)
                if (src[i] != CGROUP_USAGE_UNKNOWN)
                        *dst[i] = src[i];
}

/* Before each kill of the payload (on cgroup v2 the kill takes the pin too), at the init's exit and again
 * before the scope is stopped: the last reading that succeeds is the one reported. */
void job_usage_read(Job *j) {
        CgroupUsage u;
        int r;

        if (!j->runtime.scope_cgroup)
                return;
        r = cgroup_usage_read(j->runtime.scope_cgroup, &u);
        if (r < 0) {
                log_debug_errno(r, "Cannot read the usage counters of %s: %m", j->runtime.scope_cgroup);
                return;
        }
        /* The pin that kept the v1 counters is one task of its own, there from before the payload's first. */
        if (j->runtime.pin_in_pids && u.tasks_peak != CGROUP_USAGE_UNKNOWN && u.tasks_peak > 0)
                u.tasks_peak--;
        merge(&j->outcome.usage, &u);
        j->outcome.usage_read = true;
}

/* The sidecars' byte totals, summed; false when neither reported any. */
static bool net_bytes(const Job *j, uint64_t *up, uint64_t *down) {
        bool any = false;

        *up = *down = 0;
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                json_object *st = j->sidecars[s].stats, *u, *d;

                if (!st || !json_object_object_get_ex(st, "bytes_up", &u) ||
                    !json_object_object_get_ex(st, "bytes_down", &d))
                        continue;
                *up += json_object_get_uint64(u);
                *down += json_object_get_uint64(d);
                any = true;
        }
        return any;
}

json_object *job_usage_json(const Job *j) {
        json_object *o;
        uint64_t up, down;
        bool net;

        if (!j->outcome.usage_read)
                return NULL;
        o = cgroup_usage_to_json(&j->outcome.usage);
        if (!o)
                return NULL;
        net = net_bytes(j, &up, &down);
        json_object_object_add(o, "net_bytes_up", net ? json_object_new_uint64(up) : NULL);
        json_object_object_add(o, "net_bytes_down", net ? json_object_new_uint64(down) : NULL);
        json_object_object_add(o, "cgroup", json_object_new_string(
                cgroup_layout_to_string(cgroup_layout_detect(CGROUP_ROOT)) ?: "none"));
        return o;
}

static uint64_t egress_denied(const Job *j) {
        json_object *st = j->sidecars[POND_SIDECAR_EGRESS].stats, *d;

        return st && json_object_object_get_ex(st, "denied", &d) ? json_object_get_uint64(d) : 0;
}

/* A result that could not be counted is still the result: the file is the operator's view, not a record. */
void job_metrics_record(const Job *j) {
        _cleanup_free_ char *dir = NULL;
        const CgroupUsage *u = &j->outcome.usage;
        MetricsJob m = {
                .status = job_status(j),
                .refusal_reason = j->outcome.reason,
                .egress_denied = egress_denied(j),
                .oom_killed = j->outcome.oom_killed,
        };
        bool reset = false;
        int r;

        (void) net_bytes(j, &m.net_bytes_up, &m.net_bytes_down);
        if (j->outcome.usage_read && u->cpu_user_usec != CGROUP_USAGE_UNKNOWN)
                m.cpu_usec = u->cpu_user_usec + u->cpu_system_usec;
        if (asprintf(&dir, "%s/%s", pond_dir(POND_DIR_STATE), METRICS_DIR_NAME) < 0) {
                log_oom();
                return;
        }
        r = metrics_record(dir, &m, &reset);
        if (reset)
                log_warning("%s/%s was not pond's counters file: it was started again from zero.", dir, METRICS_FILE);
        if (r < 0)
                log_warning_errno(r, "Cannot count job %s in %s/%s: %m", j->paths.id, dir, METRICS_FILE);
}
