/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup-usage.h: what a cgroup's processes used, from the kernel's own counters: CPU user and system time,
 * peak memory, block IO bytes read and written, the peak number of tasks. Each figure comes from the v1
 * controller's hierarchy where the layout has one, else from the v2 hierarchy (docs/result-format.md,
 * "usage", names each file); one the kernel does not keep there is CGROUP_USAGE_UNKNOWN. */
#pragma once

#include <json-c/json.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup-util.h"

#define CGROUP_USAGE_UNKNOWN UINT64_MAX

typedef struct CgroupUsage {
        uint64_t cpu_user_usec, cpu_system_usec;
        uint64_t memory_peak_bytes;
        uint64_t io_read_bytes, io_write_bytes;
        uint64_t tasks_peak;
} CgroupUsage;

#define CGROUP_USAGE_NULL { CGROUP_USAGE_UNKNOWN, CGROUP_USAGE_UNKNOWN, CGROUP_USAGE_UNKNOWN, \
                            CGROUP_USAGE_UNKNOWN, CGROUP_USAGE_UNKNOWN, CGROUP_USAGE_UNKNOWN }

/* The parsers, over a file's text. -EINVAL for text that is not the kernel's format. */
/* A file of one number and a newline (memory.max_usage_in_bytes, memory.peak, pids.peak, cpuacct.usage_*). */
int cgroup_parse_u64(const char *text, uint64_t *ret);
/* v2 cpu.stat: user_usec and system_usec. */
int cgroup_parse_cpu_stat(const char *text, uint64_t *ret_user_usec, uint64_t *ret_system_usec);
/* v2 io.stat: rbytes and wbytes summed over the devices (an empty file is 0 and 0). */
int cgroup_parse_io_stat(const char *text, uint64_t *ret_read, uint64_t *ret_write);
/* v1 blkio.throttle.io_service_bytes_recursive: the "Read" and "Write" lines summed over the devices. */
int cgroup_parse_blkio_bytes(const char *text, uint64_t *ret_read, uint64_t *ret_write);

/* The figures of cgroup (an absolute cgroup path, "/pond.slice/pond-ID.scope") below root, in layout
 * (cgroup_layout_detect(root) for the host's). Figures that cannot be read stay CGROUP_USAGE_UNKNOWN;
 * -ENOENT when none could be read (no such cgroup). */
int cgroup_usage_read_at(const char *root, CgroupLayout layout, const char *cgroup, CgroupUsage *ret);
int cgroup_usage_read(const char *cgroup, CgroupUsage *ret);

/* {cpu_user_ms, cpu_system_ms, memory_peak_bytes, io_read_bytes, io_write_bytes, tasks_peak}, each null
 * when unknown. */
json_object *cgroup_usage_to_json(const CgroupUsage *u);

/* Moves pid into cgroup in the v1 cpuacct, blkio and pids hierarchies (where this layout has them, each as
 * it can): a process there keeps systemd from removing those cgroups, and their counters, when the scope
 * empties, until pid is killed. No hierarchy a kill enumerates (systemd's, runc's devices) is touched.
 * Returns whether pid is in the pids hierarchy now (it counts there: the peak is one more). */
bool cgroup_usage_pin(const char *cgroup, pid_t pid);
/* The v1 hierarchies cgroup_usage_pin() places the pin in (the memcg is cgroup_oom_pin()'s). */
#define CGROUP_USAGE_V1_CONTROLLERS "cpuacct", "blkio", "pids"
