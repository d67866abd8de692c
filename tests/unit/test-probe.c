/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-probe: the parts of the host probe that do not depend on the host: a backend whose binary is missing
 * or fails is never advertised, capabilities are derived from what worked alone, a directory that is no
 * cgroup file system has no usable controller, and the JSON keeps its keys. The real probe of this host is
 * tests/integration/test-probe-host.c. */
#include <fcntl.h>

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

/* One result per provider, named after it, in the table's order. */
TEST(one_result_per_provider) {
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        size_t b = 0;

        ASSERT_OK(host_probe_new(&p));
        ASSERT_EQ(runtime_provider_count(), p->n_backends);
        RUNTIME_PROVIDER_FOREACH(provider) {
                ASSERT_STREQ(provider->name, p->backends[b].name);
                ASSERT_TRUE(host_probe_backend(p, provider->name) == &p->backends[b]);
                b++;
        }
        ASSERT_TRUE(host_probe_backend(p, "kata-fc") == NULL);
}

/* A runtime that is there but cannot run a container is not advertised. */
TEST(failed_backend_not_advertised) {
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        ProbeOptions o = { .binary = "/bin/false" };

        ASSERT_OK(host_probe_new(&p));
        for (size_t b = 0; b < p->n_backends; b++)
                probe_backend(runtime_provider_find(p->backends[b].name), &o, &p->backends[b]);
        ASSERT_OK(host_probe_derive_capabilities(p));
        for (size_t b = 0; b < p->n_backends; b++) {
                char cap[64];
                snprintf(cap, sizeof cap, "sandbox.%s", p->backends[b].name);
                ASSERT_TRUE(p->backends[b].present);
                ASSERT_FALSE(p->backends[b].works);
                ASSERT_FALSE(has_cap(p, cap));
                ASSERT_TRUE(p->backends[b].reason != NULL);
        }
        ASSERT_CONTAINS("failed", host_probe_backend(p, "runc")->reason);
        ASSERT_CONTAINS("systrap: ", host_probe_backend(p, "runsc")->reason);
        ASSERT_CONTAINS("; ptrace: ", host_probe_backend(p, "runsc")->reason);
}

TEST(missing_backend_absent) {
        ProbeBackendResult r;
        ProbeOptions o = { .binary = "/nonexistent/runc" };

        probe_backend(&runtime_runc, &o, &r);
        ASSERT_STREQ("runc", r.name);
        ASSERT_FALSE(r.present);
        ASSERT_FALSE(r.works);
        ASSERT_CONTAINS("not found", r.reason);
        probe_backend_done(&r);
}

/* Derivation alone: only what worked is advertised. */
TEST(derive_only_what_works) {
        _cleanup_(host_probe_freep) HostProbe *p = NULL;

        ASSERT_OK(host_probe_new(&p));
        host_probe_backend(p, "runc")->present = true;
        host_probe_backend(p, "runc")->works = false;
        host_probe_backend(p, "runsc")->present = true;
        host_probe_backend(p, "runsc")->works = true;
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

/* The JSON keeps its keys whatever the results (here: nothing probed), and dispatch-check reads it. */
TEST(json_stable_and_readable_by_dispatch) {
        static const char *const keys[] = {
                "probe_version", "backends", "kvm", "landlock", "seccomp", "cgroup", "nftables", "userns",
                "systemd", "capabilities",
        };
        static const char *const bkeys[] = { "present", "path", "version", "works", "platform", "reason" };
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        _cleanup_json_ json_object *o = NULL;
        char *req[] = { (char *) "sandbox.runc", NULL };
        DispatchDecision d = { .required_capabilities = req };
        _cleanup_free_ char *why = NULL;

        ASSERT_OK(host_probe_new(&p));
        p->cgroup.layout = CGROUP_LAYOUT_NONE;
        ASSERT_OK(host_probe_derive_capabilities(p));
        ASSERT_OK(host_probe_to_json(p, &o));
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                ASSERT_TRUE(json_object_object_get_ex(o, keys[i], NULL));
        RUNTIME_PROVIDER_FOREACH(provider) {
                json_object *b = json_object_object_get(json_object_object_get(o, "backends"),
                                                        provider->name);
                for (size_t i = 0; i < ELEMENTSOF(bkeys); i++)
                        ASSERT_TRUE(json_object_object_get_ex(b, bkeys[i], NULL));
        }
        ASSERT_EQ(0, dispatch_worker_eligible(&d, o, NULL, &why));
        ASSERT_CONTAINS("sandbox.runc", why);
}

TEST_MAIN()
