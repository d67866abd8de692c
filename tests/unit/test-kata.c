/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-kata: the Kata provider refuses where it cannot run (never another backend instead), prefers the
 * Firecracker configuration, and sizes the VM from the job's limits; its OCI config is the same confined
 * config as runc's plus those annotations. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "oci/oci.h"
#include "runtime/runtime.h"
#include "tests.h"

TEST(lookup_by_name_never_substitutes) {
        ASSERT_TRUE(runtime_provider_find("kata") == &runtime_kata);
        ASSERT_TRUE(runtime_provider_find("kata-fc") == NULL);
        ASSERT_TRUE(runtime_provider_find("") == NULL);
        ASSERT_TRUE(runtime_provider_find(NULL) == NULL);
}

static bool has_kvm(void) {
        int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        safe_close(kvm);
        return kvm >= 0;
}

TEST(refuses_here_with_a_reason) {
        _cleanup_free_ char *reason = NULL, *runtime = NULL;
        bool kvm = has_kvm();

        if (kvm && kata_runtime_path(&runtime) >= 0)
                TEST_SKIP("this host has KVM and a Kata runtime: Kata can run here");
        ASSERT_ERROR(EOPNOTSUPP, runtime_kata.check(&reason));
        ASSERT_CONTAINS(kvm ? "no Kata runtime" : "/dev/kvm", reason);
        ASSERT_CONTAINS("refusing", reason);
}

/* The provider's check() refuses, not only the lookup: with KVM because the runtime is missing, without
 * KVM because KVM is (the check looks at /dev/kvm first). */
TEST(refuses_without_a_runtime) {
        _cleanup_free_ char *path = NULL, *reason = NULL;
        int r;

        setenv("POND_KATA_RUNTIME", "/nonexistent/kata-runtime", 1);
        r = kata_runtime_path(&path);
        ASSERT_TRUE(r < 0);
        r = runtime_kata.check(&reason);
        unsetenv("POND_KATA_RUNTIME");
        ASSERT_ERROR(EOPNOTSUPP, r);
        ASSERT_CONTAINS(has_kvm() ? "no Kata runtime" : "/dev/kvm", reason);
        ASSERT_CONTAINS("refusing", reason);
}

/* The containerd shim is found (the probe reports it) but never driven: pond needs the OCI command line. */
TEST(refuses_the_containerd_shim) {
        char dir[] = "/tmp/pond-test-kata.XXXXXX", shim[64];
        _cleanup_free_ char *path = NULL, *reason = NULL, *located = NULL, *why = NULL;
        int fd, r_locate, r_path, r_check;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(shim, sizeof shim, "%s/containerd-shim-kata-v2", dir);
        fd = open(shim, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
        safe_close(fd);
        /* Everything under the variable first: a failed assertion must not leave it set for later tests. */
        setenv("POND_KATA_RUNTIME", shim, 1);
        r_locate = runtime_kata.locate(&located, &why);
        r_path = kata_runtime_path(&path);
        r_check = runtime_kata.check(&reason);
        unsetenv("POND_KATA_RUNTIME");
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(r_locate);
        ASSERT_STREQ(shim, located);
        ASSERT_ERROR(EOPNOTSUPP, r_path);
        ASSERT_ERROR(EOPNOTSUPP, r_check);
        ASSERT_CONTAINS("refusing", reason);
}

static void touch(const char *dir, const char *name) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
}

/* A Kata configuration directory of the test's own. The POND_KATA_* variables it sets die with the test's
 * process (tests.h forks per test), also when an assertion fails half-way. */
FIXTURE(kata_dir) {
        char dir[64];
};

FIXTURE_SETUP(kata_dir) {
        snprintf(self->dir, sizeof self->dir, "/tmp/pond-test-kata.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        ASSERT_EQ(0, setenv("POND_KATA_CONFIG_DIR", self->dir, 1));
        ASSERT_EQ(0, setenv("POND_KATA_RUNTIME", "/bin/true", 1));
}

FIXTURE_TEARDOWN(kata_dir) {
        if (self->dir[0])
                ASSERT_OK(rm_rf_at(AT_FDCWD, self->dir));
}

TEST_F(kata_dir, prefers_firecracker) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *config = NULL;
        RuntimeJob j = { .state_root = "/run/pond/runtime", .bundle = "/b", .container_id = "pond-x",
                         .pid_file = "/p", .log_file = "/l" };

        ASSERT_EQ(0, kata_config_path(&config));
        touch(self->dir, "configuration-qemu.toml");
        ASSERT_EQ(1, kata_config_path(&config));
        ASSERT_CONTAINS("configuration-qemu.toml", config);
        free(config);
        config = NULL;
        touch(self->dir, "configuration-fc.toml");
        ASSERT_EQ(1, kata_config_path(&config));
        ASSERT_CONTAINS("configuration-fc.toml", config);

        ASSERT_OK(runtime_kata.create_argv(&j, &argv));
        ASSERT_STREQ("/bin/true", argv[0]);
        ASSERT_STREQ("--kata-config", argv[1]);
        ASSERT_STREQ(config, argv[2]);
        ASSERT_STREQ("create", argv[7]);
        ASSERT_STREQ("pond-x", argv[strv_length(argv) - 1]);
}

TEST(config_sizes_the_vm_and_keeps_confinement) {
        char *cmd[] = { (char *) "true", NULL }, *none[] = { NULL };
        ResolvedPolicy r = { .profile = (char *) "untrusted-code-write", .backend = (char *) "kata",
                             .tier = (char *) "trusted", .confined = true, .fs = FS_OVERLAY, .net = NET_ALLOWLIST,
                             .memory_bytes = 1536ULL << 20, .cpus_milli = 1500, .pids_limit = 256,
                             .host_pids_limit = 256,
                             .tmpfs_bytes = 64ULL << 20, .image = (char *) "host", .nofile = 1024, .nproc = 512 };
        JobSpec s = { .job_id = (char *) "k1", .tenant = (char *) "t", .command = cmd, .env = none, .outputs = none };
        OciPaths p = { .rootfs = "/r", .host_usr = "/usr", .etc = "/e", .workspace = "/w", .home = "/h",
                       .cgroups_path = "/pond.slice/pond-k1.scope/payload", .hostname = "pond" };
        _cleanup_json_ json_object *sc = json_object_from_file(POND_SOURCE_ROOT "/policy/seccomp.json");
        _cleanup_json_ json_object *c = NULL;
        json_object *a;

        ASSERT_TRUE(sc != NULL);
        ASSERT_OK(oci_config_build(&r, &s, sc, &p, &c));
        ASSERT_OK(runtime_kata.adjust_config(&r, c));
        a = json_get(c, "annotations");
        ASSERT_STREQ("1536", json_get_str(a, "io.katacontainers.config.hypervisor.default_memory"));
        ASSERT_STREQ("2", json_get_str(a, "io.katacontainers.config.hypervisor.default_vcpus"));
        ASSERT_STREQ("false", json_get_str(a, "io.katacontainers.config.runtime.disable_guest_seccomp"));
        ASSERT_TRUE(json_get(json_get(c, "linux"), "seccomp") != NULL);
        ASSERT_TRUE(json_get_true(json_get(c, "process"), "noNewPrivileges"));
        ASSERT_EQ(0, json_object_array_length(json_get(json_get(json_get(c, "process"), "capabilities"),
                                                       "bounding")));
}

TEST_MAIN()
