/* kata.c: the Kata Containers provider: each job in its own lightweight VM, Firecracker preferred over
 * QEMU. It needs /dev/kvm and a Kata runtime with the OCI command line (create/start/delete), named by
 * POND_KATA_RUNTIME or found as kata-runtime. Where either is missing it refuses with the reason: a job
 * that asked for a VM never silently runs on a shared kernel (a hardened provider never falls back). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "runtime.h"

static const char *const kata_configs[] = {
        "configuration-fc.toml",   /* Firecracker: the smallest VMM, preferred */
        "configuration-qemu.toml",
        "configuration.toml",
};

static const char *kata_config_dir(void) {
        return getenv("POND_KATA_CONFIG_DIR") ?: "/etc/kata-containers";
}

int kata_runtime_path(char **ret) {
        const char *explicit_path = getenv("POND_KATA_RUNTIME");
        return find_binary(explicit_path ?: "kata-runtime", ret);
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
        .check = kata_check,
        .create_argv = kata_create_argv,
        .start_argv = kata_start_argv,
        .delete_argv = kata_delete_argv,
        .has_state = runtime_state_dir_exists,
        .adjust_config = kata_adjust_config,
};
