/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-probe-host: the real host probe agrees with what the test sees for itself on this machine (cgroup
 * layout by statfs, /dev/kvm, the Landlock syscall, runtimes in PATH), and the advertised capabilities never
 * include what failed: a backend whose trivial container did not run, an unusable controller. It runs
 * trivial containers under every runtime found, so it is an integration test (run on the host, as root to
 * see what the host can do; unprivileged, what it shows must still agree). tests/unit/test-probe.c has the
 * parts that do not depend on the host. */
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "basic/macro.h"
#include "dispatch.h"
#include "probe.h"
#include "tests.h"

static bool has_cap(const HostProbe *p, const char *cap) {
        for (char **c = p->capabilities; c && *c; c++)
                if (streq(*c, cap))
                        return true;
        return false;
}

/* An independent PATH walk: the test does not reuse the code it checks. */
static bool in_path(const char *name) {
        const char *path = getenv("PATH") ?: "/usr/bin:/bin";
        _cleanup_free_ char *copy = strdup(path);

        for (char *save = NULL, *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                char buf[4096];
                snprintf(buf, sizeof buf, "%s/%s", d, name);
                if (access(buf, X_OK) == 0)
                        return true;
        }
        return false;
}

static HostProbe *cached;

/* The real probe runs trivial containers: once for all tests. */
static HostProbe *real_probe(void) {
        if (!cached && host_probe(NULL, &cached) < 0)
                return NULL;
        return cached;
}

TEST(cgroup_layout_matches_statfs) {
        HostProbe *p = real_probe();
        struct statfs root, unified;
        CgroupLayout expected;

        ASSERT_TRUE(p != NULL);
        if (statfs("/sys/fs/cgroup", &root) < 0)
                expected = CGROUP_LAYOUT_NONE;
        else if (root.f_type == CGROUP2_SUPER_MAGIC)
                expected = CGROUP_LAYOUT_UNIFIED;
        else if (root.f_type != TMPFS_MAGIC)
                expected = CGROUP_LAYOUT_NONE;
        else if (statfs("/sys/fs/cgroup/unified", &unified) >= 0 && unified.f_type == CGROUP2_SUPER_MAGIC)
                expected = CGROUP_LAYOUT_HYBRID;
        else
                expected = CGROUP_LAYOUT_LEGACY;
        ASSERT_EQ(expected, p->cgroup.layout);
        ASSERT_TRUE(p->cgroup.layout >= 0 && p->cgroup.layout < _CGROUP_LAYOUT_MAX);
        /* A usable controller is in the hierarchy version the layout has. */
        for (ProbeController c = 0; c < _PROBE_CONTROLLER_MAX; c++) {
                if (p->cgroup.layout == CGROUP_LAYOUT_UNIFIED)
                        ASSERT_TRUE(p->cgroup.usable[c] == 0 || p->cgroup.usable[c] == 2);
                if (p->cgroup.layout == CGROUP_LAYOUT_LEGACY)
                        ASSERT_TRUE(p->cgroup.usable[c] <= 1);
                ASSERT_EQ(p->cgroup.usable[c] == 0, p->cgroup.reason[c] != NULL);
        }
}

TEST(kvm_matches_dev_kvm) {
        HostProbe *p = real_probe();
        int fd;

        ASSERT_TRUE(p != NULL);
        if (access("/dev/kvm", F_OK) < 0) {
                ASSERT_FALSE(p->kvm.available);
                ASSERT_CONTAINS("/dev/kvm", p->kvm.reason);
                ASSERT_FALSE(has_cap(p, "kvm"));
                return;
        }
        fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        ASSERT_EQ(fd >= 0, p->kvm.available);
        ASSERT_EQ(fd >= 0, has_cap(p, "kvm"));
        safe_close(fd);
}

TEST(landlock_abi) {
        HostProbe *p = real_probe();
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        char cap[64];

        ASSERT_TRUE(p != NULL);
        if (abi < 0 && errno == ENOSYS)
                TEST_SKIP("the kernel has no Landlock (ENOSYS)");
        ASSERT_TRUE(p->landlock_abi > 0);
        ASSERT_EQ(abi, p->landlock_abi);
        snprintf(cap, sizeof cap, "landlock.abi=%u", p->landlock_abi);
        ASSERT_TRUE(has_cap(p, cap));
}

static const ProbeBackendResult *backend(const HostProbe *p, const char *name) {
        return host_probe_backend(p, name);
}

TEST(backends_present_iff_in_path) {
        HostProbe *p = real_probe();

        ASSERT_TRUE(p != NULL);
        ASSERT_EQ(runtime_provider_count(), p->n_backends);
        ASSERT_EQ(in_path("runc"), backend(p, "runc")->present);
        ASSERT_EQ(in_path("runsc"), backend(p, "runsc")->present);
        if (!getenv("POND_KATA_RUNTIME"))
                ASSERT_EQ(in_path("containerd-shim-kata-v2") || in_path("kata-runtime"),
                          backend(p, "kata")->present);
        for (size_t b = 0; b < p->n_backends; b++) {
                char cap[64];
                const ProbeBackendResult *r = &p->backends[b];

                snprintf(cap, sizeof cap, "sandbox.%s", r->name);
                ASSERT_EQ(r->present && r->works, has_cap(p, cap));
                ASSERT_EQ(r->works, r->reason == NULL);
                if (r->present)
                        ASSERT_TRUE(r->path != NULL);
        }
        /* runsc names the platform it ran on. */
        if (backend(p, "runsc")->works)
                ASSERT_TRUE(backend(p, "runsc")->platform != NULL);
}

/* Kata without KVM cannot be a working backend, whatever binaries exist. */
TEST(kata_needs_kvm) {
        HostProbe *p = real_probe();

        ASSERT_TRUE(p != NULL);
        if (!p->kvm.available)
                ASSERT_FALSE(backend(p, "kata")->works);
        if (!backend(p, "kata")->present)
                ASSERT_TRUE(backend(p, "kata")->reason != NULL);
}

/* The JSON keeps its keys whatever the results, and dispatch-check reads it back. */
TEST(json_stable_and_readable_by_dispatch) {
        static const char *const keys[] = {
                "probe_version", "backends", "kvm", "landlock", "seccomp", "cgroup", "nftables", "userns",
                "systemd", "capabilities",
        };
        static const char *const bkeys[] = { "present", "path", "version", "works", "platform", "reason" };
        HostProbe *p = real_probe();
        _cleanup_json_ json_object *o = NULL;
        json_object *b;
        char *req[] = { (char *) "sandbox.none-such", NULL };
        DispatchDecision d = { .required_capabilities = req };
        _cleanup_free_ char *why = NULL;

        ASSERT_TRUE(p != NULL);
        ASSERT_OK(host_probe_to_json(p, &o));
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                ASSERT_TRUE(json_object_object_get_ex(o, keys[i], NULL));
        RUNTIME_PROVIDER_FOREACH(provider) {
                b = json_object_object_get(json_object_object_get(o, "backends"), provider->name);
                for (size_t i = 0; i < ELEMENTSOF(bkeys); i++)
                        ASSERT_TRUE(json_object_object_get_ex(b, bkeys[i], NULL));
        }
        ASSERT_EQ(0, dispatch_worker_eligible(&d, o, NULL, &why));
        ASSERT_CONTAINS("sandbox.none-such", why);
}

TEST(free_cached) {
        cached = host_probe_free(cached);
}

TEST_MAIN()
