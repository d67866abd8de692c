/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* resview.c: the job's resource view: the decision per backend, LXCFS's health, the view's part of
 * config.json, and taking a dead LXCFS's files away inside a running container. */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "basic/json-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/process-util.h"
#include "basic/string-util.h"
#include "cgroup/cgroup-util.h"
#include "resview/cpu-lease.h"
#include "resview/resview.h"
#include "runtime/runtime.h"

#define FUSE_SUPER_MAGIC 0x65735546
#define UNMOUNT_USEC (5ULL * 1000 * 1000)
#define CPUSET_VALUE_MAX 4096 /* a cpuset.cpus or cpuset.mems value */

static const char *const mode_table[_RESOURCE_VIEW_MODE_MAX] = {
        [RESOURCE_VIEW_REQUIRED] = "required",
        [RESOURCE_VIEW_BEST_EFFORT] = "best-effort",
};

static const char *const source_table[_VIEW_SOURCE_MAX] = {
        [VIEW_SOURCE_CGROUP] = "cgroup",
        [VIEW_SOURCE_LXCFS] = "lxcfs",
        [VIEW_SOURCE_GVISOR] = "gvisor",
        [VIEW_SOURCE_VM] = "vm",
        [VIEW_SOURCE_HOST] = "host",
};

/* What LXCFS renders from the reader's cgroup and runc lets a container bind below /proc (runc refuses
 * any other file there). /proc/slabinfo is left out: the job has no business with it. */
const char *const lxcfs_view_files[] = {
        "proc/cpuinfo", "proc/diskstats", "proc/loadavg", "proc/meminfo", "proc/stat", "proc/swaps",
        "proc/uptime", "sys/devices/system/cpu/online", NULL,
};

const char *resource_view_mode_to_string(ResourceViewMode m) {
        return m >= 0 && m < _RESOURCE_VIEW_MODE_MAX ? mode_table[m] : NULL;
}

ResourceViewMode resource_view_mode_from_string(const char *s) {
        for (int i = 0; s && i < _RESOURCE_VIEW_MODE_MAX; i++)
                if (streq(mode_table[i], s))
                        return (ResourceViewMode) i;
        return _RESOURCE_VIEW_MODE_INVALID;
}

const char *view_source_to_string(ViewSource s) {
        return s >= 0 && s < _VIEW_SOURCE_MAX ? source_table[s] : NULL;
}

static int check_fd(int fd) {
        struct statfs sfs;
        char c;

        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        if (sfs.f_type != FUSE_SUPER_MAGIC)
                return -ENOENT; /* a plain directory where LXCFS would mount: it is not running */
        if (read(fd, &c, 1) < 0)
                return -errno;
        return 0;
}

int lxcfs_check(const char *root, char **ret_reason) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (asprintf(&path, "%s/proc/meminfo", root) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        r = fd < 0 ? -errno : check_fd(fd);
        if (r >= 0 || !ret_reason)
                return r;
        if (r == -ENOENT)
                *ret_reason = strdupf("LXCFS is not running: nothing is mounted at %s (lxcfs.service)", root);
        else if (r == -ENOTCONN)
                *ret_reason = strdupf("LXCFS's mount at %s is dead (ENOTCONN): lxcfs.service was stopped or "
                                      "killed without unmounting", root);
        else
                *ret_reason = strdupf("LXCFS cannot be read at %s: %s", path, strerror(-r));
        return r;
}

void resource_view_done(ResourceView *v) {
        free(v->cpuset);
        free(v->degraded);
        *v = (ResourceView) {};
}

int resource_view_decide(const char *backend, ResourceViewMode mode, unsigned cpus_given, uint64_t memory,
                         int lxcfs, const char *lxcfs_reason, unsigned host_cpus, uint64_t host_memory,
                         ResourceView *ret, char **ret_reason) {
        ResourceView v = {
                .mode = mode, .cpus_given = cpus_given, .memory_seen = memory,
                .cpus_affinity = MIN(cpus_given, host_cpus), .cpus_proc = MIN(cpus_given, host_cpus),
        };
        const RuntimeProvider *provider;

        if (!backend || mode < 0 || mode >= _RESOURCE_VIEW_MODE_MAX || cpus_given == 0 || host_cpus == 0)
                return -EINVAL;
        provider = runtime_provider_find(backend);
        if (!provider)
                return -EINVAL;
        if (provider->proc_view != VIEW_SOURCE_LXCFS) {
                /* The runtime's own kernel renders them: gVisor sizes its vCPUs from the sandbox's cpuset and
                 * MemTotal from its memory limit, a VM from its size. */
                v.cpus_source = v.memory_source = provider->proc_view;
        } else if (lxcfs >= 0) {
                v.cpus_source = v.memory_source = VIEW_SOURCE_LXCFS;
                v.lxcfs = true;
        } else if (mode == RESOURCE_VIEW_REQUIRED) {
                if (ret_reason)
                        *ret_reason = strdupf("resource_view is required and cannot be had: %s",
                                              lxcfs_reason ?: "LXCFS is not available");
                return -EHOSTDOWN;
        } else {
                /* best-effort: affinity is still the cpuset's; the files are the host's */
                v.cpus_source = VIEW_SOURCE_CGROUP;
                v.memory_source = VIEW_SOURCE_HOST;
                v.cpus_proc = host_cpus;
                v.memory_seen = host_memory;
                v.degraded = strdupf("best-effort: %s; the job sees the host's /proc and sysfs",
                                     lxcfs_reason ?: "LXCFS is not available");
                if (!v.degraded)
                        return -ENOMEM;
        }
        *ret = v;
        return 0;
}

int resource_view_set_cpuset(ResourceView *v, const char *cpuset) {
        cpu_set_t set;
        char *copy;
        int r = cpu_list_parse(cpuset, &set);

        if (r < 0)
                return r;
        copy = strdup(cpuset);
        if (!copy)
                return -ENOMEM;
        free(v->cpuset);
        v->cpuset = copy;
        v->cpus_affinity = (unsigned) CPU_COUNT(&set);
        if (v->cpus_source != VIEW_SOURCE_CGROUP) /* else /proc is the host's */
                v->cpus_proc = v->cpus_affinity;
        return 0;
}

int resource_view_lost(ResourceView *v, unsigned host_cpus, uint64_t host_memory, const char *why) {
        char *d = strdupf("best-effort: %s; the job sees the host's /proc and sysfs", why);

        if (!d)
                return -ENOMEM;
        free(v->degraded);
        v->degraded = d;
        v->lxcfs = false;
        v->cpus_source = VIEW_SOURCE_CGROUP;
        v->memory_source = VIEW_SOURCE_HOST;
        v->cpus_proc = host_cpus;
        v->memory_seen = host_memory;
        return 0;
}

static json_object *str_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

json_object *resource_view_to_json(const ResourceView *v, uint64_t cpus_milli, uint64_t memory_given,
                                   uint64_t pids_given) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *given = json_object_new_object(), *seen = json_object_new_object();

        if (!o || json_add(o, "given", given) < 0 || json_add(o, "seen", seen) < 0)
                return NULL;
        if (json_add(given, "cpus", json_object_new_double((double) cpus_milli / 1000.0)) < 0 ||
            json_add(given, "cpus_ceil", json_object_new_uint64(v->cpus_given)) < 0 ||
            json_add(given, "memory_bytes", json_object_new_uint64(memory_given)) < 0 ||
            json_add(given, "pids_limit", json_object_new_uint64(pids_given)) < 0 ||
            json_add(seen, "cpus_affinity", json_object_new_uint64(v->cpus_affinity)) < 0 ||
            json_add(seen, "cpus_proc", json_object_new_uint64(v->cpus_proc)) < 0 ||
            json_add(seen, "memory_bytes", json_object_new_uint64(v->memory_seen)) < 0 ||
            json_add(seen, "cpus_source", json_object_new_string(view_source_to_string(v->cpus_source))) < 0 ||
            json_add(seen, "memory_source", json_object_new_string(view_source_to_string(v->memory_source))) < 0 ||
            json_add(o, "view", json_object_new_string(resource_view_mode_to_string(v->mode))) < 0)
                return NULL;
        /* null members: present and null, as elsewhere in the result */
        json_object_object_add(given, "cpuset", str_or_null(v->cpuset));
        json_object_object_add(o, "degraded", str_or_null(v->degraded));
        return TAKE_PTR(o);
}

static int push_bind(json_object *mounts, const char *src, const char *file) {
        _cleanup_free_ char *dst = NULL;
        json_object *m = json_object_new_object(), *opts = json_object_new_array();
        static const char *const options[] = { "bind", "ro", "nosuid", "nodev", "noexec" };

        if (asprintf(&dst, "/%s", file) < 0 || !m || !opts) {
                json_object_put(m);
                json_object_put(opts);
                return -ENOMEM;
        }
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                json_object_array_add(opts, json_object_new_string(options[i]));
        if (json_add(m, "destination", json_object_new_string(dst)) < 0 ||
            json_add(m, "type", json_object_new_string("bind")) < 0 ||
            json_add(m, "source", json_object_new_string(src)) < 0 ||
            json_add(m, "options", opts) < 0) {
                json_object_put(m);
                return -ENOMEM;
        }
        if (json_object_array_add(mounts, m) < 0) {
                json_object_put(m);
                return -ENOMEM;
        }
        return 0;
}

int resource_view_apply(const ResourceView *v, const char *lxcfs_root, json_object *config) {
        json_object *cpu = json_get(json_get(json_get(config, "linux"), "resources"), "cpu");
        json_object *mounts = json_get(config, "mounts");

        if (!cpu || !json_object_is_type(mounts, json_type_array))
                return -EINVAL;
        if (v->cpuset && json_add(cpu, "cpus", json_object_new_string(v->cpuset)) < 0)
                return -ENOMEM;
        /* After /proc and /sys (the mounts are made in order); a file this LXCFS lacks is left alone. */
        for (size_t i = 0; v->lxcfs && lxcfs_view_files[i]; i++) {
                _cleanup_free_ char *src = NULL;
                int r;

                if (asprintf(&src, "%s/%s", lxcfs_root, lxcfs_view_files[i]) < 0)
                        return -ENOMEM;
                if (access(src, R_OK) < 0)
                        continue;
                r = push_bind(mounts, src, lxcfs_view_files[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int read_value(int dfd, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

static int write_value(int dfd, const char *name, const char *value) {
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        return write(fd, value, strlen(value)) < 0 ? -errno : 0;
}

/* dir's cpus and mems from parent's where dir's are empty (as a new v1 cpuset's are) */
static int inherit_cpuset(int parent, int dir) {
        static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char mine[CPUSET_VALUE_MAX], theirs[CPUSET_VALUE_MAX];
                int r = read_value(dir, files[i], mine, sizeof mine);

                if (r >= 0 && mine[0] == 0)
                        r = read_value(parent, files[i], theirs, sizeof theirs);
                if (r >= 0 && mine[0] == 0)
                        r = write_value(dir, files[i], theirs);
                if (r < 0)
                        return r;
        }
        return 0;
}

int resource_view_prepare_cpuset(const char *scope_cgroup, const char *cpus) {
        _cleanup_free_ char *root = NULL, *rel = NULL;
        _cleanup_close_ int fd = -EBADF;
        char *p, *save = NULL;
        int r;

        if (!cgroup_layout_has_v1(cgroup_layout_detect(CGROUP_ROOT)))
                return 0;
        r = cgroup_v1_path(CGROUP_ROOT, "cpuset", "/", &root);
        if (r < 0)
                return r;
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno; /* no v1 cpuset hierarchy */
        if (!cgroup_is_v1_hierarchy(root))
                return 0;
        rel = strdup(scope_cgroup);
        if (!rel)
                return -ENOMEM;
        for (p = strtok_r(rel, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
                _cleanup_close_ int child = -EBADF;

                if (streq(p, "..") || streq(p, "."))
                        return -EINVAL;
                if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                child = openat(fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (child < 0)
                        return -errno;
                r = inherit_cpuset(fd, child);
                if (r < 0)
                        return r;
                safe_close(fd);
                fd = TAKE_FD(child);
        }
        return write_value(fd, "cpuset.cpus", cpus);
}

int resource_view_stale(pid_t init_pid) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char c;

        if (init_pid <= 0)
                return -ESRCH;
        /* through the init's root: the path crosses the container's own mounts, LXCFS's binds included */
        if (asprintf(&path, "/proc/%d/root/proc/meminfo", (int) init_pid) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOTCONN ? 1 : -errno;
        if (read(fd, &c, 1) < 0)
                return errno == ENOTCONN ? 1 : -errno;
        return 0;
}

static _noreturn_ void unmount_child(int nsfd) {
        int failed = 0;

        if (setns(nsfd, CLONE_NEWNS) < 0)
                _exit(2);
        for (size_t i = 0; lxcfs_view_files[i]; i++) {
                char path[128];

                snprintf(path, sizeof path, "/%s", lxcfs_view_files[i]);
                /* EINVAL: not a mount point (never bound, or taken away already) */
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                        failed = 1;
        }
        _exit(failed);
}

int resource_view_unmount(pid_t init_pid) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        _cleanup_free_ char *ns = NULL;
        _cleanup_close_ int nsfd = -EBADF;
        siginfo_t si;
        int r;

        if (init_pid <= 0)
                return -ESRCH;
        if (asprintf(&ns, "/proc/%d/ns/mnt", (int) init_pid) < 0)
                return -ENOMEM;
        nsfd = open(ns, O_RDONLY | O_CLOEXEC);
        if (nsfd < 0)
                return -errno;
        /* a child of its own: setns() of a mount namespace changes the caller's root for good */
        r = safe_fork_full("(pond-view)", NULL, &nsfd, 1, FORK_EXEC_FLAGS, &child);
        if (r < 0)
                return r;
        if (r == 0)
                unmount_child(nsfd);
        r = pidref_wait_or_kill(&child, UNMOUNT_USEC, &si);
        if (r < 0)
                return r;
        return r == 0 && siginfo_exited_ok(&si) ? 0 : -EIO;
}
