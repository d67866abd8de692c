/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* resview.h: what a job sees of the CPUs and memory it was given (its "resource view"): which source
 * renders each interface per backend, whether LXCFS can render it here, the LXCFS files bound over the
 * container's /proc and /sys, and their repair when LXCFS goes away during a job. docs/architecture.md,
 * "What a job sees of its resources". */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

/* Where LXCFS (lxcfs.service) mounts its file system. */
#define LXCFS_ROOT "/var/lib/lxcfs"

/* The profile's field resource_view: what happens when the view cannot be had. */
typedef enum ResourceViewMode {
        RESOURCE_VIEW_REQUIRED,     /* the job is refused (or, during the job, fails) with the cause */
        RESOURCE_VIEW_BEST_EFFORT,  /* the job runs and sees the host's values; the result says so */
        _RESOURCE_VIEW_MODE_MAX,
        _RESOURCE_VIEW_MODE_INVALID = -EINVAL,
} ResourceViewMode;

const char *resource_view_mode_to_string(ResourceViewMode m);
ResourceViewMode resource_view_mode_from_string(const char *s);

/* What renders an interface for the job. */
typedef enum ViewSource {
        VIEW_SOURCE_CGROUP, /* the kernel, from the job's cgroup (its cpuset: sched_getaffinity) */
        VIEW_SOURCE_LXCFS,  /* LXCFS's files, from the job's cgroup */
        VIEW_SOURCE_GVISOR, /* gVisor's own /proc and /sys, sized from the sandbox's cgroup */
        VIEW_SOURCE_VM,     /* the VM's own kernel (kata) */
        VIEW_SOURCE_HOST,   /* the host's values: nothing renders the job's own */
        _VIEW_SOURCE_MAX,
        _VIEW_SOURCE_INVALID = -EINVAL,
} ViewSource;

const char *view_source_to_string(ViewSource s);

/* The LXCFS files bound into a runc container, relative to LXCFS_ROOT and to the container's root. */
extern const char *const lxcfs_view_files[];

/* 0 when LXCFS answers below root (a read of its proc/meminfo on a FUSE file system); else -ENOENT (not
 * mounted: not installed or not running), -ENOTCONN (its mount is dead: LXCFS was killed) or another
 * -errno, and *ret_reason (if not NULL) says which in words naming LXCFS. */
int lxcfs_check(const char *root, char **ret_reason);

/* What a job was given and what it sees, decided before it runs and amended if the view breaks. */
typedef struct ResourceView {
        ResourceViewMode mode;
        unsigned cpus_given;        /* ceil(cpus): the size of the job's cpuset */
        char *cpuset;               /* the host CPUs it runs on ("0-1"), or NULL */
        unsigned cpus_affinity;     /* what sched_getaffinity/nproc say */
        unsigned cpus_proc;         /* what /proc/cpuinfo, /proc/stat and /sys/.../cpu/online say */
        uint64_t memory_seen;       /* MemTotal of /proc/meminfo */
        ViewSource cpus_source, memory_source;
        bool lxcfs;                 /* LXCFS's files are bound into the container */
        char *degraded;             /* why the job sees host values (best-effort), or NULL */
} ResourceView;

void resource_view_done(ResourceView *v);

/* The decision for one job, at its acceptance. backend: its provider's name; lxcfs: lxcfs_check()'s
 * answer (ignored where the backend renders its own view); host_cpus, host_memory: the host's. Under
 * "required" an unavailable view is -EHOSTDOWN with *ret_reason saying why; under "best-effort" it is a
 * view of the host's values whose degraded says why (malloc'd). */
int resource_view_decide(const char *backend, ResourceViewMode mode, unsigned cpus_given, uint64_t memory,
                         int lxcfs, const char *lxcfs_reason, unsigned host_cpus, uint64_t host_memory,
                         ResourceView *ret, char **ret_reason);

/* The job's cpuset, once leased: the CPUs the job counts are the set's. */
int resource_view_set_cpuset(ResourceView *v, const char *cpuset);

/* The view once LXCFS went away (before the bind, or during the job, its files then unmounted): the
 * kernel's files show. why says when and what, for the result's degraded. */
int resource_view_lost(ResourceView *v, unsigned host_cpus, uint64_t host_memory, const char *why);

/* result.json's "resources" and the started record's words. */
json_object *resource_view_to_json(const ResourceView *v, uint64_t cpus_milli, uint64_t memory_given,
                                   uint64_t pids_given);

/* Adds the view to an OCI config.json: linux.resources.cpu.cpus (the cpuset; runc writes it to the
 * payload's cpuset cgroup, and the kernel sets the init's affinity from it), and when v->lxcfs the LXCFS
 * files bound read-only over the container's ones. */
int resource_view_apply(const ResourceView *v, const char *lxcfs_root, json_object *config);

/* On a v1 cpuset hierarchy: creates the job's scope there (and pond.slice) with its parent's cpus and mems,
 * then narrows the scope to cpus. runc fills empty intermediate cpusets itself, runsc does not, and the
 * kernel refuses (EACCES) a child cpuset outside an empty parent's. Nothing to do without one. */
int resource_view_prepare_cpuset(const char *scope_cgroup, const char *cpus);

/* 1 if the container of init_pid reads ENOTCONN where its LXCFS files are (their LXCFS is gone), 0 if it
 * reads them, -errno if it cannot be told (the container is gone). */
int resource_view_stale(pid_t init_pid);

/* Lazily unmounts the LXCFS files inside the mount namespace of init_pid (in a forked child that joins it),
 * so that the job reads the kernel's files instead of an error. */
int resource_view_unmount(pid_t init_pid);
