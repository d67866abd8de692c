/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* kata.c: the Kata Containers provider: each job in its own lightweight VM, Firecracker preferred over
 * QEMU. It needs /dev/kvm and a Kata runtime with the OCI command line (create/start/delete), named by
 * POND_KATA_RUNTIME or found as kata-runtime (containerd-shim-kata-v2, which only containerd can drive, is
 * found but refused). Where either is missing it refuses with the reason: a job that asked for a VM never
 * silently runs on a shared kernel (a hardened provider never falls back). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "basic/log.h"
#include "runtime/runtime.h"

static const char *const kata_configs[] = {
        "configuration-fc.toml",   /* Firecracker: the smallest VMM, preferred */
        "configuration-qemu.toml",
        "configuration.toml",
};

#define KATA_SHIM "containerd-shim-kata-v2"

static const char *kata_config_dir(void) {
        return getenv("POND_KATA_CONFIG_DIR") ?: "/etc/kata-containers";
}

/* In order of preference: kata-runtime has the OCI command line pond drives; the containerd shim runs only
 * under containerd and is looked for so that the probe can say it is there but cannot be used. */
static const char *const kata_candidates[] = { "kata-runtime", KATA_SHIM };

static bool kata_is_shim(const char *path) {
        const char *slash = strrchr(path, '/');
        return streq(slash ? slash + 1 : path, KATA_SHIM);
}

/* POND_KATA_RUNTIME if set, else the first candidate in PATH. */
static int kata_locate(char **ret_path, char **ret_reason) {
        const char *explicit_path = getenv("POND_KATA_RUNTIME");
        int r;

        if (explicit_path && *explicit_path) {
                r = find_binary(explicit_path, ret_path);
                if (r < 0 && ret_reason &&
                    asprintf(ret_reason, "%s not found or not executable", explicit_path) < 0)
                        *ret_reason = NULL;
                return r;
        }
        r = find_binary_candidates(kata_candidates, ELEMENTSOF(kata_candidates), ret_path);
        if (r < 0 && ret_reason)
                *ret_reason = strdup("no Kata runtime: neither " KATA_SHIM " nor kata-runtime is in PATH and "
                                     "POND_KATA_RUNTIME is not set");
        return r;
}

int kata_runtime_path(char **ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = kata_locate(&path, NULL);
        if (r < 0)
                return r;
        if (kata_is_shim(path))
                return -EOPNOTSUPP;
        *ret = TAKE_PTR(path);
        return 0;
}

/* Kata is a VM: without KVM it cannot run at all, and the containerd shim cannot be driven without
 * containerd, so only kata-runtime's OCI command line gets a trivial run. */
static void kata_probe(const char *binary, const char *tmpdir, uint64_t timeout_usec, RuntimeProbe *ret) {
        _cleanup_close_ int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

        *ret = (RuntimeProbe) {};
        if (kvm < 0) {
                if (asprintf(&ret->reason, "Kata requires KVM: /dev/kvm: %s", strerror(errno)) < 0)
                        ret->reason = NULL;
                return;
        }
        if (kata_is_shim(binary)) {
                ret->platform = strdup("containerd-shim-v2");
                ret->reason = strdup(KATA_SHIM " runs only under containerd; pond drives kata-runtime");
                return;
        }
        ret->platform = strdup("kata-runtime");
        runtime_probe_oci_cli(binary, tmpdir, timeout_usec, ret);
}

/* The first configuration that exists, in order of preference; NULL: the runtime's built-in default. */
int kata_config_path(char **ret) {
        for (size_t i = 0; i < ELEMENTSOF(kata_configs); i++) {
                char *p = NULL;
                if (asprintf(&p, "%s/%s", kata_config_dir(), kata_configs[i]) < 0)
                        return -ENOMEM;
                if (access(p, R_OK) == 0) {
                        *ret = p;
                        return 1;
                }
                free(p);
        }
        *ret = NULL;
        return 0;
}

static int kata_check(char **ret_reason) {
        _cleanup_free_ char *runtime = NULL;
        _cleanup_close_ int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        int r;

        if (kvm < 0) {
                if (ret_reason)
                        *ret_reason = strdup("kata needs hardware virtualization and /dev/kvm is not available "
                                             "on this worker; refusing rather than running on a shared kernel");
                return -EOPNOTSUPP;
        }
        r = kata_runtime_path(&runtime);
        if (r < 0 && ret_reason)
                *ret_reason = strdup("kata: no Kata runtime on this worker (set POND_KATA_RUNTIME or install "
                                     "kata-runtime); refusing rather than running on a shared kernel");
        return r < 0 ? -EOPNOTSUPP : 0;
}

static int kata_argv(const RuntimeJob *j, const char *verb, char ***ret) {
        _cleanup_free_ char *runtime = NULL, *config = NULL;
        int r;

        r = kata_runtime_path(&runtime);
        if (r < 0)
                return r;
        r = kata_config_path(&config);
        if (r < 0)
                return r;
        if (streq(verb, "create"))
                return config ? strv_build(ret, runtime, "--kata-config", config, "--root", j->state_root, "--log",
                                           j->log_file, "create", "--bundle", j->bundle, "--pid-file", j->pid_file,
                                           j->container_id, NULL)
                              : strv_build(ret, runtime, "--root", j->state_root, "--log", j->log_file, "create",
                                           "--bundle", j->bundle, "--pid-file", j->pid_file, j->container_id, NULL);
        if (streq(verb, "delete"))
                return strv_build(ret, runtime, "--root", j->state_root, "delete", "--force", j->container_id, NULL);
        return strv_build(ret, runtime, "--root", j->state_root, verb, j->container_id, NULL);
}

static int kata_create_argv(const RuntimeJob *j, char ***ret) {
        return kata_argv(j, "create", ret);
}
static int kata_start_argv(const RuntimeJob *j, char ***ret) {
        return kata_argv(j, "start", ret);
}
static int kata_delete_argv(const RuntimeJob *j, char ***ret) {
        return kata_argv(j, "delete", ret);
}

static int annotate(json_object *annotations, const char *key, const char *value) {
        json_object *v = json_object_new_string(value);
        if (!v || json_object_object_add(annotations, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* The VM is sized from the job's limits (its memory is the job's, plus the guest kernel's share that Kata
 * adds itself), and seccomp is applied inside the guest too: Kata skips the OCI profile unless told. */
static int kata_adjust_config(const ResolvedPolicy *r, json_object *config) {
        json_object *annotations = NULL;
        char mem[32], cpus[32];

        if (!json_object_object_get_ex(config, "annotations", &annotations)) {
                annotations = json_object_new_object();
                if (!annotations || json_object_object_add(config, "annotations", annotations) < 0)
                        return -ENOMEM;
        }
        snprintf(mem, sizeof mem, "%llu", (unsigned long long) ((r->memory_bytes + (1 << 20) - 1) >> 20));
        snprintf(cpus, sizeof cpus, "%llu", (unsigned long long) ((r->cpus_milli + 999) / 1000));
        if (annotate(annotations, "io.katacontainers.config.hypervisor.default_memory", mem) < 0 ||
            annotate(annotations, "io.katacontainers.config.hypervisor.default_vcpus", cpus) < 0 ||
            annotate(annotations, "io.katacontainers.config.runtime.disable_guest_seccomp",
                     r->confined ? "false" : "true") < 0)
                return -ENOMEM;
        return 0;
}

const RuntimeProvider runtime_kata = {
        .name = "kata",
        .locate = kata_locate,
        .probe = kata_probe,
        .check = kata_check,
        .create_argv = kata_create_argv,
        .start_argv = kata_start_argv,
        .delete_argv = kata_delete_argv,
        .has_state = runtime_state_dir_exists,
        .adjust_config = kata_adjust_config,
        .proc_view = VIEW_SOURCE_VM,
        .landlock_absent = "the backend's guest kernel is not probed for Landlock",
};
