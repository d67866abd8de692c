/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* oci.c: owns the OCI runtime config (config.json) of a job and the job's environment: what the payload
 * runs as (uid 1000, no capabilities, no_new_privs, rlimits), what it sees (read-only root, masked /proc
 * and /sys, size-capped tmpfs, the workspace) and what confines it (namespaces, cgroup limits, seccomp). */
#include <stdint.h>
#include <string.h>

#include "basic/json-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "oci/oci.h"
#include "policy/home.h"
#include "policy/seccomp-check.h"
#include "rootfs/image.h"

#define OCI_VERSION "1.0.2"
#define CPU_PERIOD_US 100000ULL
#define OOM_SCORE_ADJ 500 /* the job dies before the supervisor that must clean up and sign */

/* Docker's defaults: kernel data and firmware interfaces that leak host state or allow attacks; then what
 * they leave readable that tells a job about other tenants or the host's kernel: every uid's key usage
 * (key-users), the kernel's build configuration (config.gz), kernel symbols (kallsyms: zeros for uid
 * 1000, but its names still map the kernel), every file lock on the host with its device and inode
 * (locks), the host's pressure stall figures (pressure: a side channel on neighbours' load), and the
 * root-only page and slab tables. Documented in docs/threat-model.md. */
static const char *const masked_paths[] = {
        "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
        "/sys/devices/virtual/powercap",
        "/proc/key-users", "/proc/config.gz", "/proc/kallsyms", "/proc/locks", "/proc/pressure",
        "/proc/kpagecgroup", "/proc/kpagecount", "/proc/kpageflags", "/proc/slabinfo", "/proc/vmallocinfo",
        "/proc/pagetypeinfo", "/proc/kmsg", NULL,
};
static const char *const readonly_paths[] = {
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

/* The devices cgroup: deny everything, then the character devices a shell and a pty need. */
static const struct {
        unsigned major;
        int minor; /* -1: any */
} allowed_devices[] = {
        { 1, 3 }, { 1, 5 }, { 1, 7 }, { 1, 8 }, { 1, 9 }, /* null zero full random urandom */
        { 5, 0 }, { 5, 2 }, { 136, -1 },                  /* tty ptmx pts/N */
};

static int push(json_object *a, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static json_object *strv_to_json(const char *const *l) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && l && l[i]; i++)
                if (push(a, json_object_new_string(l[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

static json_object *u64(uint64_t v) {
        return json_object_new_int64((int64_t) v);
}

static bool env_key_is(const char *entry, const char *key) {
        size_t n = strlen(key);
        return strncmp(entry, key, n) == 0 && entry[n] == '=';
}

/* Replaces the entry with the same key (later wins, first position kept) or appends. */
static int env_set(char **env, size_t *n, const char *entry) {
        size_t klen = strcspn(entry, "=");
        char *copy;

        if (klen == 0 || entry[klen] != '=')
                return -EINVAL;
        copy = strdup(entry);
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (strncmp(env[i], entry, klen + 1) == 0) {
                        free(env[i]);
                        env[i] = copy;
                        return 0;
                }
        env[(*n)++] = copy;
        return 0;
}

/* From scratch: nothing of the supervisor's own environment reaches the job. The spec may override any
 * base entry (PATH for a virtualenv, HOME, LANG) except POND_JOB_ID, which names the job in its results
 * and logs and is pond's to say: a spec value for it is dropped. HOME is the confined job's private home;
 * profile none keeps /tmp. */
int oci_job_environment(const ResolvedPolicy *r, const JobSpec *spec, char *const *posture_env, char ***ret) {
        return oci_job_environment_image(r, spec, NULL, posture_env, ret);
}

/* What an image's Env may not set: pond's own variables (docs/images.md). */
static bool env_is_pond_s(const char *entry) {
        static const char *const keys[] = { "HOME", "USER", "TMPDIR", "POND_JOB_ID" };

        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (env_key_is(entry, keys[i]))
                        return true;
        return false;
}

/* The image's Env comes after the base (its PATH and LANG know where its tools are) and before the
 * spec's and the posture's, which win. */
int oci_job_environment_image(const ResolvedPolicy *r, const JobSpec *spec, char *const *image_env,
                              char *const *posture_env, char ***ret) {
        /* TZ and SOURCE_DATE_EPOCH: the same on every worker, so that re-runs of a job can agree (pondctl
         * quorum); SOURCE_DATE_EPOCH is 1980-01-01, the earliest a zip (a wheel, a jar) can hold. A spec
         * that sets either wins. */
        const char *const base[] = {
                "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                r && r->confined ? "HOME=" HOME_DIR : "HOME=/tmp",
                "LANG=C.UTF-8", "TMPDIR=/tmp", "USER=job", "TZ=UTC", "SOURCE_DATE_EPOCH=315532800",
        };
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *id = NULL;
        size_t n = 0;
        int k;

        if (!r || !spec || !spec->job_id || !ret)
                return -EINVAL;
        env = calloc(ELEMENTSOF(base) + 1 + strv_length(image_env) + strv_length(spec->env) +
                     strv_length(posture_env) + 1, sizeof(char *));
        if (!env || asprintf(&id, "POND_JOB_ID=%s", spec->job_id) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(base); i++) {
                k = env_set(env, &n, base[i]);
                if (k < 0)
                        return k;
        }
        for (size_t i = 0; image_env && image_env[i]; i++) {
                if (env_is_pond_s(image_env[i]))
                        continue;
                k = env_set(env, &n, image_env[i]);
                if (k < 0)
                        return k;
        }
        k = env_set(env, &n, id);
        if (k < 0)
                return k;
        for (size_t i = 0; spec->env && spec->env[i]; i++) {
                if (env_key_is(spec->env[i], "POND_JOB_ID")) {
                        log_debug("Job %s: ignoring POND_JOB_ID from the spec's env.", spec->job_id);
                        continue;
                }
                k = env_set(env, &n, spec->env[i]);
                if (k < 0)
                        return k;
        }
        /* Last: the posture's own settings (the proxy, the CA bundle) say what the network really is. */
        for (size_t i = 0; posture_env && posture_env[i]; i++) {
                k = env_set(env, &n, posture_env[i]);
                if (k < 0)
                        return k;
        }
        *ret = TAKE_PTR(env);
        return 0;
}

static json_object *build_capabilities(void) {
        static const char *const sets[] = { "bounding", "effective", "inheritable", "permitted", "ambient" };
        json_object *o = json_object_new_object();

        for (size_t i = 0; o && i < ELEMENTSOF(sets); i++)
                if (json_add(o, sets[i], json_object_new_array()) < 0) {
                        json_object_put(o);
                        return NULL;
                }
        return o;
}

static int push_rlimit(json_object *a, const char *type, uint64_t v) {
        json_object *o = json_object_new_object();

        if (!o || json_add(o, "type", json_object_new_string(type)) < 0 || json_add(o, "hard", u64(v)) < 0 ||
            json_add(o, "soft", u64(v)) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        return push(a, o);
}

static json_object *build_user(void) {
        json_object *o = json_object_new_object();

        if (!o || json_add(o, "uid", json_object_new_int(JOB_UID)) < 0 ||
            json_add(o, "gid", json_object_new_int(JOB_GID)) < 0 ||
            json_add(o, "additionalGids", json_object_new_array()) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static const struct {
        int resource;
        const char *name;
} job_rlimits[OCI_JOB_RLIMITS] = {
        { RLIMIT_NOFILE, "RLIMIT_NOFILE" }, { RLIMIT_NPROC, "RLIMIT_NPROC" }, { RLIMIT_CORE, "RLIMIT_CORE" },
};

void oci_job_rlimits(const ResolvedPolicy *r, int resources[OCI_JOB_RLIMITS], struct rlimit limits[OCI_JOB_RLIMITS]) {
        const uint64_t values[OCI_JOB_RLIMITS] = { r->nofile, r->nproc, 0 };

        for (size_t i = 0; i < OCI_JOB_RLIMITS; i++) {
                resources[i] = job_rlimits[i].resource;
                limits[i] = (struct rlimit) { .rlim_cur = values[i], .rlim_max = values[i] };
        }
}

/* The payload's command; pond-init goes in front of it once the config is complete (oci_config_set_init()). */
static json_object *build_args(const JobSpec *spec) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && spec->command[i]; i++)
                if (push(a, json_object_new_string(spec->command[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

static int build_process(const ResolvedPolicy *r, const JobSpec *spec, const OciPaths *paths,
                         json_object *p) {
        _cleanup_strv_free_ char **env = NULL;
        json_object *rl;
        int k;

        k = oci_job_environment_image(r, spec, paths->image_env, paths->posture_env, &env);
        if (k < 0)
                return k;
        if (!paths->userns) {   /* else the create step's own: oci_job_rlimits() */
                int resources[OCI_JOB_RLIMITS];
                struct rlimit limits[OCI_JOB_RLIMITS];

                oci_job_rlimits(r, resources, limits);
                rl = json_object_new_array();
                if (json_add(p, "rlimits", rl) < 0)
                        return -ENOMEM;
                for (size_t i = 0; i < OCI_JOB_RLIMITS; i++)
                        if (push_rlimit(rl, job_rlimits[i].name, limits[i].rlim_max) < 0)
                                return -ENOMEM;
        }
        /* a tty job: the runtime allocates the pty inside the container (its own devpts instance, the slave
         * the job user's) and hands the master to the supervisor through --console-socket */
        if (json_add(p, "terminal", json_object_new_boolean(spec->tty)) < 0 || json_add(p, "user", build_user()) < 0 ||
            json_add(p, "args", build_args(spec)) < 0 ||
            json_add(p, "env", strv_to_json((const char *const *) env)) < 0 ||
            json_add(p, "cwd",
                     json_object_new_string(paths->workspace ? "/workspace" : paths->image_workdir ?: "/")) < 0 ||
            json_add(p, "capabilities", build_capabilities()) < 0 ||
            json_add(p, "noNewPrivileges", json_object_new_boolean(true)) < 0 ||
            json_add(p, "oomScoreAdj", json_object_new_int(OOM_SCORE_ADJ)) < 0)
                return -ENOMEM;
        return 0;
}

#define OPTS(...) ((const char *const[]) { __VA_ARGS__, NULL })

static int push_mount(json_object *mounts, const char *dest, const char *type, const char *source,
                      const char *const *options) {
        json_object *m = json_object_new_object();

        if (!m || json_add(m, "destination", json_object_new_string(dest)) < 0 ||
            json_add(m, "type", json_object_new_string(type)) < 0 ||
            json_add(m, "source", json_object_new_string(source)) < 0 ||
            json_add(m, "options", strv_to_json(options)) < 0) {
                json_object_put(m);
                return -ENOMEM;
        }
        return push(mounts, m);
}

/* The kernel file systems, as runc's and Docker's defaults, all nosuid and all but /dev noexec. */
static int push_kernel_mounts(json_object *m) {
        if (push_mount(m, "/proc", "proc", "proc", OPTS("nosuid", "noexec", "nodev")) < 0 ||
            push_mount(m, "/dev", "tmpfs", "tmpfs",
                       OPTS("nosuid", "strictatime", "mode=755", "size=65536k")) < 0 ||
            /* gid=5 is tty in the generated /etc/group; a number either way, harmless in other images */
            push_mount(m, "/dev/pts", "devpts", "devpts",
                       OPTS("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5")) < 0 ||
            push_mount(m, "/dev/shm", "tmpfs", "shm",
                       OPTS("nosuid", "noexec", "nodev", "mode=1777", "size=65536k")) < 0 ||
            push_mount(m, "/dev/mqueue", "mqueue", "mqueue", OPTS("nosuid", "noexec", "nodev")) < 0 ||
            push_mount(m, "/sys", "sysfs", "sysfs", OPTS("nosuid", "noexec", "nodev", "ro")) < 0 ||
            push_mount(m, "/sys/fs/cgroup", "cgroup", "cgroup",
                       OPTS("nosuid", "noexec", "nodev", "relatime", "ro")) < 0)
                return -ENOMEM;
        return 0;
}

static int push_job_mounts(const ResolvedPolicy *r, const OciPaths *paths, json_object *m) {
        char tmp_size[64];
        bool ws_ro = paths->workspace_readonly || r->fs == FS_READONLY;

        snprintf(tmp_size, sizeof tmp_size, "size=%llu", (unsigned long long) r->tmpfs_bytes);
        /* /tmp keeps exec: builds and test suites run what they compile there */
        if (push_mount(m, "/tmp", "tmpfs", "tmpfs", OPTS("nosuid", "nodev", "mode=1777", tmp_size)) < 0)
                return -ENOMEM;
        if (paths->host_usr &&
            push_mount(m, "/usr", "bind", paths->host_usr, OPTS("bind", "ro", "nosuid", "nodev")) < 0)
                return -ENOMEM;
        if (paths->etc &&
            push_mount(m, "/etc", "bind", paths->etc, OPTS("bind", "ro", "nosuid", "nodev", "noexec")) < 0)
                return -ENOMEM;
        if (paths->workspace &&
            push_mount(m, "/workspace", "bind", paths->workspace,
                       OPTS("rbind", ws_ro ? "ro" : "rw", "nosuid", "nodev")) < 0)
                return -ENOMEM;
        /* the confined job's private home: a size-capped tmpfs of its own, written before it starts */
        if (paths->home &&
            push_mount(m, HOME_DIR, "bind", paths->home, OPTS("rbind", "rw", "nosuid", "nodev")) < 0)
                return -ENOMEM;
        /* a file in the runtime's /dev tmpfs: every image has room for it there */
        if (paths->init &&
            push_mount(m, LANDLOCK_INIT_PATH, "bind", paths->init, OPTS("bind", "ro", "nosuid", "nodev")) < 0)
                return -ENOMEM;
        return 0;
}

static json_object *build_namespaces(const ResolvedPolicy *r, const OciPaths *paths) {
        static const char *const types[] = { "user", "pid", "ipc", "uts", "mount", "cgroup", "network" };
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < ELEMENTSOF(types); i++) {
                bool net = streq(types[i], "network"), user = streq(types[i], "user");
                const char *path = net ? paths->netns : user ? paths->userns : NULL;
                json_object *ns;

                /* NET_OPEN (profile none only) shares the host network: no namespace at all; a user namespace
                 * only where the job has one of its own, joined by path (its owner is the job's range) */
                if ((net && r->net == NET_OPEN) || (user && !paths->userns))
                        continue;
                ns = json_object_new_object();
                if (!ns || json_add(ns, "type", json_object_new_string(types[i])) < 0 ||
                    (path && json_add(ns, "path", json_object_new_string(path)) < 0) ||
                    push(a, ns) < 0) {
                        json_object_put(ns);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

static json_object *build_devices_cgroup(void) {
        json_object *a = json_object_new_array(), *d = json_object_new_object();

        if (!a || !d || json_add(d, "allow", json_object_new_boolean(false)) < 0 ||
            json_add(d, "access", json_object_new_string("rwm")) < 0 || push(a, TAKE_PTR(d)) < 0)
                goto fail;
        for (size_t i = 0; i < ELEMENTSOF(allowed_devices); i++) {
                d = json_object_new_object();
                if (!d || json_add(d, "allow", json_object_new_boolean(true)) < 0 ||
                    json_add(d, "type", json_object_new_string("c")) < 0 ||
                    json_add(d, "major", json_object_new_int((int) allowed_devices[i].major)) < 0 ||
                    (allowed_devices[i].minor >= 0 &&
                     json_add(d, "minor", json_object_new_int(allowed_devices[i].minor)) < 0) ||
                    json_add(d, "access", json_object_new_string("rwm")) < 0 || push(a, TAKE_PTR(d)) < 0)
                        goto fail;
        }
        return a;
fail:
        json_object_put(d);
        json_object_put(a);
        return NULL;
}

static json_object *build_resources(const ResolvedPolicy *r) {
        json_object *o = json_object_new_object(), *mem = json_object_new_object(),
                    *cpu = json_object_new_object(), *pids = json_object_new_object();

        /* swap == limit: memory+swap may not exceed memory, i.e. no swap on top */
        if (!o || !mem || !cpu || !pids || json_add(mem, "limit", u64(r->memory_bytes)) < 0 ||
            json_add(mem, "swap", u64(r->memory_bytes)) < 0 || json_add(cpu, "quota", u64(r->cpus_milli * 100)) < 0 ||
            json_add(cpu, "period", u64(CPU_PERIOD_US)) < 0 || json_add(pids, "limit", u64(r->host_pids_limit)) < 0 ||
            json_add(o, "memory", TAKE_PTR(mem)) < 0 || json_add(o, "cpu", TAKE_PTR(cpu)) < 0 ||
            json_add(o, "pids", TAKE_PTR(pids)) < 0 || json_add(o, "devices", build_devices_cgroup()) < 0) {
                json_object_put(mem);
                json_object_put(cpu);
                json_object_put(pids);
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* [{containerID 0, hostID base, size}]: runc checks its own ids against it (the namespace has it already). */
static json_object *build_id_mappings(const OciPaths *paths) {
        json_object *a = json_object_new_array(), *m = json_object_new_object();

        if (!a || !m || json_add(m, "containerID", json_object_new_int(0)) < 0 ||
            json_add(m, "hostID", u64(paths->userns_base)) < 0 || json_add(m, "size", u64(paths->userns_size)) < 0 ||
            push(a, TAKE_PTR(m)) < 0) {
                json_object_put(m);
                json_object_put(a);
                return NULL;
        }
        return a;
}

static int build_linux(const ResolvedPolicy *r, json_object *seccomp, const OciPaths *paths, json_object *l) {
        if (paths->userns && (json_add(l, "uidMappings", build_id_mappings(paths)) < 0 ||
                              json_add(l, "gidMappings", build_id_mappings(paths)) < 0))
                return -ENOMEM;
        if (json_add(l, "namespaces", build_namespaces(r, paths)) < 0 ||
            json_add(l, "resources", build_resources(r)) < 0 ||
            json_add(l, "cgroupsPath", json_object_new_string(paths->cgroups_path)) < 0 ||
            json_add(l, "maskedPaths", strv_to_json(masked_paths)) < 0 ||
            json_add(l, "readonlyPaths", strv_to_json(readonly_paths)) < 0 ||
            /* runc creates null, zero, full, tty, random, urandom (and ptmx) itself */
            json_add(l, "devices", json_object_new_array()) < 0)
                return -ENOMEM;
        if (r->confined) {
                const char *native = seccomp_native_arch_name();
                json_object *copy = NULL, *arches;
                if (!native)
                        return -EOPNOTSUPP;
                if (json_object_deep_copy(seccomp, &copy, NULL) < 0)
                        return -ENOMEM;
                if (json_add(l, "seccomp", copy) < 0)
                        return -ENOMEM;
                /* Only the native ABI: every listed architecture multiplies the filter the runtime compiles
                 * (about 40 ms per job for five), and a job has no business with another ABI: its syscalls
                 * hit the bad-architecture action and kill the caller (fail closed). */
                arches = json_object_new_array();
                if (!arches || json_object_array_add(arches, json_object_new_string(native)) < 0 ||
                    json_add(copy, "architectures", arches) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Every limit must be finite and positive (policy_resolve() guarantees it; a 0 or a wrapped value here
 * would mean "unlimited" to the runtime, so it is a refusal, not a default). */
static int check_inputs(const ResolvedPolicy *r, const JobSpec *spec, json_object *seccomp,
                        const OciPaths *paths) {
        const uint64_t limits[] = {
                r->memory_bytes, r->cpus_milli, r->pids_limit, r->host_pids_limit, r->tmpfs_bytes, r->nofile, r->nproc,
        };

        for (size_t i = 0; i < ELEMENTSOF(limits); i++)
                if (limits[i] == 0 || limits[i] > (uint64_t) INT64_MAX / 100)
                        return -EINVAL;
        if (!spec->command || !spec->command[0] || !spec->job_id)
                return -EINVAL;
        if (r->confined && (!seccomp || r->net == NET_OPEN || !paths->home))
                return -EINVAL;
        /* absolute, below the scope, and without "..": the container's cgroup stays below the job's scope */
        if (!paths->rootfs || !paths->cgroups_path || strstr(paths->cgroups_path, ".."))
                return -EINVAL;
        /* pond-init only in front of a confined job */
        if (paths->init && !r->confined)
                return -EINVAL;
        /* a range of its own: never uid 0 on the host, and JOB_UID inside it */
        if (paths->userns &&
            (paths->userns_base == 0 || paths->userns_size <= JOB_UID || paths->userns_size <= JOB_GID))
                return -EINVAL;
        return 0;
}

int oci_config_build(const ResolvedPolicy *r, const JobSpec *spec, json_object *seccomp,
                     const OciPaths *paths, json_object **ret) {
        _cleanup_json_ json_object *c = NULL;
        json_object *process, *root, *mounts, *linux_;
        int k;

        if (!r || !spec || !paths || !ret)
                return -EINVAL;
        k = check_inputs(r, spec, seccomp, paths);
        if (k < 0)
                return k;
        c = json_object_new_object();
        if (!c)
                return -ENOMEM;
        /* in order: json_add() owns what it is given, so a failure leaks nothing and creates nothing more */
        if (json_add(c, "process", process = json_object_new_object()) < 0 ||
            json_add(c, "root", root = json_object_new_object()) < 0 ||
            json_add(c, "mounts", mounts = json_object_new_array()) < 0 ||
            json_add(c, "linux", linux_ = json_object_new_object()) < 0)
                return -ENOMEM;
        if (json_add(c, "ociVersion", json_object_new_string(OCI_VERSION)) < 0 ||
            json_add(c, "hostname", json_object_new_string(paths->hostname ?: IMAGE_HOSTNAME)) < 0 ||
            json_add(root, "path", json_object_new_string(paths->rootfs)) < 0 ||
            json_add(root, "readonly", json_object_new_boolean(true)) < 0)
                return -ENOMEM;
        k = build_process(r, spec, paths, process);
        if (k >= 0)
                k = push_kernel_mounts(mounts);
        if (k >= 0)
                k = push_job_mounts(r, paths, mounts);
        if (k >= 0)
                k = build_linux(r, seccomp, paths, linux_);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(c);
        return 0;
}

static bool options_have(json_object *options, const char *s) {
        for (size_t i = 0; i < json_object_array_length(options); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(options, i)), s))
                        return true;
        return false;
}

int oci_config_writable(json_object *config, char ***ret) {
        json_object *mounts = json_get(config, "mounts");
        _cleanup_strv_free_ char **l = NULL;

        if (!json_object_is_type(mounts, json_type_array))
                return -EINVAL;
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i), *options = json_get(m, "options");
                const char *dest = json_object_get_string(json_get(m, "destination")),
                           *type = json_object_get_string(json_get(m, "type"));

                if (!dest || !type || !json_object_is_type(options, json_type_array))
                        return -EINVAL;
                if (!(streq(type, "tmpfs") || streq(type, "bind")) || options_have(options, "ro") ||
                    streq(dest, "/dev"))
                        continue;
                if (strv_push(&l, strdup(dest)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static bool config_has_mount(json_object *config, const char *dest) {
        json_object *mounts = json_get(config, "mounts");

        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                const char *d = json_object_get_string(json_get(json_object_array_get_idx(mounts, i), "destination"));

                if (d && streq(d, dest))
                        return true;
        }
        return false;
}

int oci_config_set_init(json_object *config, char *const *init_argv) {
        json_object *args = json_get(json_get(config, "process"), "args"), *a;
        size_t n = strv_length((char **) init_argv), len;

        if (n < 2 || !streq(init_argv[0], LANDLOCK_INIT_PATH) || !streq(init_argv[n - 1], "--") ||
            !json_object_is_type(args, json_type_array) || !config_has_mount(config, LANDLOCK_INIT_PATH))
                return -EINVAL;
        len = json_object_array_length(args);
        if (len > 0 && streq(json_object_get_string(json_object_array_get_idx(args, 0)), LANDLOCK_INIT_PATH))
                return -EEXIST;
        a = strv_to_json((const char *const *) init_argv);
        for (size_t i = 0; a && i < len; i++)
                if (push(a, json_object_get(json_object_array_get_idx(args, i))) < 0) {
                        json_object_put(a);
                        return -ENOMEM;
                }
        return json_add(json_get(config, "process"), "args", a);
}
