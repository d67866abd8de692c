/* test-probe: the real host probe agrees with what the test sees for itself on this machine (cgroup layout
 * by statfs, /dev/kvm, the Landlock syscall, runtimes in PATH), and the advertised capabilities never
 * include what failed: a backend whose trivial container did not run, an unusable controller. */
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "dispatch.h"
#include "macro.h"
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

TEST(backends_present_iff_in_path) {
        HostProbe *p = real_probe();

        ASSERT_TRUE(p != NULL);
        ASSERT_EQ(in_path("runc"), p->backends[PROBE_BACKEND_RUNC].present);
        ASSERT_EQ(in_path("runsc"), p->backends[PROBE_BACKEND_RUNSC].present);
        if (!getenv("POND_KATA_RUNTIME"))
                ASSERT_EQ(in_path("containerd-shim-kata-v2") || in_path("kata-runtime"),
                          p->backends[PROBE_BACKEND_KATA].present);
        for (ProbeBackend b = 0; b < _PROBE_BACKEND_MAX; b++) {
                char cap[64];
                const ProbeBackendResult *r = &p->backends[b];

                snprintf(cap, sizeof cap, "sandbox.%s", probe_backend_to_string(b));
                ASSERT_EQ(r->present && r->works, has_cap(p, cap));
                ASSERT_EQ(r->works, r->reason == NULL);
                if (r->present)
                        ASSERT_TRUE(r->path != NULL);
        }
        /* runsc names the platform it ran on. */
        if (p->backends[PROBE_BACKEND_RUNSC].works)
                ASSERT_TRUE(p->backends[PROBE_BACKEND_RUNSC].platform != NULL);
}

/* Kata without KVM cannot be a working backend, whatever binaries exist. */
TEST(kata_needs_kvm) {
        HostProbe *p = real_probe();

        ASSERT_TRUE(p != NULL);
        if (!p->kvm.available)
                ASSERT_FALSE(p->backends[PROBE_BACKEND_KATA].works);
        if (!p->backends[PROBE_BACKEND_KATA].present)
                ASSERT_TRUE(p->backends[PROBE_BACKEND_KATA].reason != NULL);
}

/* A runtime that is there but cannot run a container is not advertised. */
TEST(failed_backend_not_advertised) {
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        ProbeOptions o = { .runc = "/bin/false", .runsc = "/bin/false", .kata = "/bin/false" };

        ASSERT_OK(host_probe(&o, &p));
        for (ProbeBackend b = 0; b < _PROBE_BACKEND_MAX; b++) {
                char cap[64];
                snprintf(cap, sizeof cap, "sandbox.%s", probe_backend_to_string(b));
                ASSERT_FALSE(p->backends[b].works);
                ASSERT_FALSE(has_cap(p, cap));
                ASSERT_TRUE(p->backends[b].reason != NULL);
        }
        ASSERT_TRUE(p->backends[PROBE_BACKEND_RUNC].present);
        ASSERT_CONTAINS("failed", p->backends[PROBE_BACKEND_RUNC].reason);
        ASSERT_CONTAINS("ptrace", p->backends[PROBE_BACKEND_RUNSC].reason);
}

TEST(missing_backend_absent) {
        ProbeBackendResult r;
        ProbeOptions o = { .runc = "/nonexistent/runc" };

        probe_backend(PROBE_BACKEND_RUNC, &o, &r);
        ASSERT_FALSE(r.present);
        ASSERT_FALSE(r.works);
        ASSERT_CONTAINS("not found", r.reason);
        free(r.reason);
        free(r.path);
}

/* Derivation alone: only what worked is advertised. */
TEST(derive_only_what_works) {
        _cleanup_(host_probe_freep) HostProbe *p = calloc(1, sizeof *p);

        ASSERT_TRUE(p != NULL);
        p->backends[PROBE_BACKEND_RUNC] = (ProbeBackendResult) { .present = true, .works = false };
        p->backends[PROBE_BACKEND_RUNSC] = (ProbeBackendResult) { .present = true, .works = true };
        p->cgroup.usable[PROBE_CONTROLLER_MEMORY] = 1;
        p->seccomp.available = false;
        p->landlock_abi = 0;
        ASSERT_OK(host_probe_derive_capabilities(p));
        ASSERT_EQ(2, strv_length(p->capabilities));
        ASSERT_STREQ("sandbox.runsc", p->capabilities[0]);
        ASSERT_STREQ("cgroup.memory", p->capabilities[1]);
}

TEST(cgroup_not_a_cgroup_fs) {
        char dir[] = "/tmp/pond-test-probe.XXXXXX";
        ProbeCgroup c;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        probe_cgroup(dir, &c);
        rmdir(dir);
        ASSERT_TRUE(c.layout == CGROUP_LAYOUT_LEGACY || c.layout == CGROUP_LAYOUT_NONE);
        for (ProbeController k = 0; k < _PROBE_CONTROLLER_MAX; k++) {
                ASSERT_EQ(0, c.usable[k]);
                ASSERT_TRUE(c.reason[k] != NULL);
                free(c.reason[k]);
        }
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
        for (ProbeBackend k = 0; k < _PROBE_BACKEND_MAX; k++) {
                b = json_object_object_get(json_object_object_get(o, "backends"), probe_backend_to_string(k));
                for (size_t i = 0; i < ELEMENTSOF(bkeys); i++)
                        ASSERT_TRUE(json_object_object_get_ex(b, bkeys[i], NULL));
        }
        ASSERT_EQ(0, dispatch_worker_eligible(&d, o, NULL, &why));
        ASSERT_CONTAINS("sandbox.none-such", why);
}

TEST(probe_run_captures_and_times_out) {
        _cleanup_free_ char *out = NULL;
        char *echo[] = { (char *) "sh", (char *) "-c", (char *) "echo hello; echo err >&2; exit 3", NULL };
        char *slow[] = { (char *) "sleep", (char *) "10", NULL };
        uint64_t t0;

        ASSERT_EQ(3, probe_run(echo, 5 * 1000 * 1000, &out));
        ASSERT_CONTAINS("hello", out);
        ASSERT_CONTAINS("err", out);
        t0 = clock_usec(CLOCK_MONOTONIC);
        ASSERT_EQ(128 + 9, probe_run(slow, 200 * 1000, NULL));
        ASSERT_TRUE(clock_usec(CLOCK_MONOTONIC) - t0 < 5 * 1000 * 1000);
}

TEST(free_cached) {
        cached = host_probe_free(cached);
}

TEST_MAIN()
