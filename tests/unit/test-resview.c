/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-resview: the resource view's decision per backend and mode, the cpuset's effect on what the job
 * counts, the loss of LXCFS during a job, the result's "resources" object, the view's part of config.json
 * (cpus and the LXCFS binds, from a stand-in LXCFS tree), LXCFS's health on a plain directory, and the
 * profiles' resource_view. Unprivileged. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "policy/policy.h"
#include "resview/resview.h"
#include "tests.h"

TEST_MAIN();

#define GIB (1024ULL * 1024 * 1024)

TEST(mode_strings) {
        ASSERT_EQ(RESOURCE_VIEW_REQUIRED, resource_view_mode_from_string("required"));
        ASSERT_EQ(RESOURCE_VIEW_BEST_EFFORT, resource_view_mode_from_string("best-effort"));
        ASSERT_EQ(-EINVAL, resource_view_mode_from_string("maybe"));
        ASSERT_EQ(-EINVAL, resource_view_mode_from_string(NULL));
        ASSERT_STREQ("best-effort", resource_view_mode_to_string(RESOURCE_VIEW_BEST_EFFORT));
        ASSERT_STREQ("gvisor", view_source_to_string(VIEW_SOURCE_GVISOR));
        ASSERT_TRUE(view_source_to_string(_VIEW_SOURCE_MAX) == NULL);
}

TEST(runc_with_lxcfs) {
        _cleanup_(resource_view_done) ResourceView v = {};

        ASSERT_OK(resource_view_decide("runc", RESOURCE_VIEW_REQUIRED, 2, GIB, 0, NULL, 8, 64 * GIB, &v, NULL));
        ASSERT_TRUE(v.lxcfs);
        ASSERT_EQ(VIEW_SOURCE_LXCFS, v.cpus_source);
        ASSERT_EQ(VIEW_SOURCE_LXCFS, v.memory_source);
        ASSERT_EQ(GIB, v.memory_seen);
        ASSERT_EQ(2U, v.cpus_affinity);
        ASSERT_EQ(2U, v.cpus_proc);
        ASSERT_TRUE(v.degraded == NULL);
        ASSERT_OK(resource_view_set_cpuset(&v, "4-5"));
        ASSERT_STREQ("4-5", v.cpuset);
        ASSERT_EQ(2U, v.cpus_proc);
        ASSERT_ERROR(EINVAL, resource_view_set_cpuset(&v, "x"));
}

/* ceil(cpus) beyond the host: the job counts the host's CPUs, and says so. */
TEST(more_cpus_than_host) {
        _cleanup_(resource_view_done) ResourceView v = {};

        ASSERT_OK(resource_view_decide("runc", RESOURCE_VIEW_REQUIRED, 8, GIB, 0, NULL, 2, 64 * GIB, &v, NULL));
        ASSERT_EQ(2U, v.cpus_affinity);
        ASSERT_EQ(8U, v.cpus_given);
}

TEST(runc_without_lxcfs_required) {
        _cleanup_(resource_view_done) ResourceView v = {};
        _cleanup_free_ char *why = NULL;

        ASSERT_ERROR(EHOSTDOWN, resource_view_decide("runc", RESOURCE_VIEW_REQUIRED, 1, GIB, -ENOTCONN,
                                                     "LXCFS's mount is dead", 8, 64 * GIB, &v, &why));
        ASSERT_CONTAINS("resource_view is required", why);
        ASSERT_CONTAINS("LXCFS's mount is dead", why);
}

TEST(runc_without_lxcfs_best_effort) {
        _cleanup_(resource_view_done) ResourceView v = {};

        ASSERT_OK(resource_view_decide("runc", RESOURCE_VIEW_BEST_EFFORT, 1, GIB, -ENOENT, "LXCFS is not running",
                                       8, 64 * GIB, &v, NULL));
        ASSERT_FALSE(v.lxcfs);
        ASSERT_EQ(VIEW_SOURCE_CGROUP, v.cpus_source);
        ASSERT_EQ(VIEW_SOURCE_HOST, v.memory_source);
        ASSERT_EQ(64 * GIB, v.memory_seen);
        ASSERT_OK(resource_view_set_cpuset(&v, "3"));
        ASSERT_EQ(1U, v.cpus_affinity);
        ASSERT_EQ(8U, v.cpus_proc); /* /proc/cpuinfo is the host's */
        ASSERT_CONTAINS("LXCFS is not running", v.degraded);
}

/* gVisor and a VM render their own: LXCFS does not matter to them, whatever the mode. */
TEST(runsc_and_kata) {
        _cleanup_(resource_view_done) ResourceView g = {}, k = {};

        ASSERT_OK(resource_view_decide("runsc", RESOURCE_VIEW_REQUIRED, 1, GIB, -ENOENT, "x", 8, 64 * GIB, &g,
                                       NULL));
        ASSERT_FALSE(g.lxcfs);
        ASSERT_EQ(VIEW_SOURCE_GVISOR, g.cpus_source);
        ASSERT_EQ(VIEW_SOURCE_GVISOR, g.memory_source);
        ASSERT_EQ(GIB, g.memory_seen);
        ASSERT_TRUE(g.degraded == NULL);
        ASSERT_OK(resource_view_decide("kata", RESOURCE_VIEW_REQUIRED, 1, GIB, -ENOENT, "x", 8, 64 * GIB, &k,
                                       NULL));
        ASSERT_EQ(VIEW_SOURCE_VM, k.memory_source);
        ASSERT_ERROR(EINVAL, resource_view_decide(NULL, RESOURCE_VIEW_REQUIRED, 1, GIB, 0, NULL, 8, GIB, &k,
                                                  NULL));
        ASSERT_ERROR(EINVAL, resource_view_decide("runc", _RESOURCE_VIEW_MODE_INVALID, 1, GIB, 0, NULL, 8, GIB,
                                                  &k, NULL));
}

TEST(lost_during_the_job) {
        _cleanup_(resource_view_done) ResourceView v = {};

        ASSERT_OK(resource_view_decide("runc", RESOURCE_VIEW_BEST_EFFORT, 1, GIB, 0, NULL, 8, 64 * GIB, &v, NULL));
        ASSERT_OK(resource_view_set_cpuset(&v, "0"));
        ASSERT_OK(resource_view_lost(&v, 8, 64 * GIB, "LXCFS went away during the job"));
        ASSERT_FALSE(v.lxcfs);
        ASSERT_EQ(VIEW_SOURCE_HOST, v.memory_source);
        ASSERT_EQ(64 * GIB, v.memory_seen);
        ASSERT_EQ(8U, v.cpus_proc);
        ASSERT_EQ(1U, v.cpus_affinity);
        ASSERT_CONTAINS("LXCFS went away during the job", v.degraded);
}

TEST(json) {
        _cleanup_(resource_view_done) ResourceView v = {};
        _cleanup_json_ json_object *o = NULL;

        ASSERT_OK(resource_view_decide("runc", RESOURCE_VIEW_REQUIRED, 2, GIB, 0, NULL, 8, 64 * GIB, &v, NULL));
        ASSERT_OK(resource_view_set_cpuset(&v, "0-1"));
        o = resource_view_to_json(&v, 1500, GIB, 512);
        ASSERT_TRUE(o != NULL);
        ASSERT_STREQ("{\"given\":{\"cpus\":1.5,\"cpus_ceil\":2,\"memory_bytes\":1073741824,\"pids_limit\":512,"
                     "\"cpuset\":\"0-1\"},\"seen\":{\"cpus_affinity\":2,\"cpus_proc\":2,\"memory_bytes\":1073741824,"
                     "\"cpus_source\":\"lxcfs\",\"memory_source\":\"lxcfs\"},\"view\":\"required\","
                     "\"degraded\":null}",
                     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

FIXTURE(tree) {
        char dir[64];
};

FIXTURE_SETUP(tree) {
        snprintf(self->dir, sizeof self->dir, "/tmp/test-resview.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
}

FIXTURE_TEARDOWN(tree) {
        if (self->dir[0])
                ASSERT_OK(rm_rf_at(AT_FDCWD, self->dir));
}

static void touch(const char *dir, const char *rel) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        *strrchr(p, '/') = 0;
        (void) mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
}

/* cpus into linux.resources.cpu, and one read-only bind per file the stand-in LXCFS has, after /proc. */
TEST_F(tree, apply) {
        _cleanup_(resource_view_done) ResourceView v = {};
        _cleanup_json_ json_object *config = NULL;
        json_object *mounts, *last;

        touch(self->dir, "proc/meminfo");
        touch(self->dir, "proc/cpuinfo");
        config = json_tokener_parse("{\"mounts\":[{\"destination\":\"/proc\"}],"
                                    "\"linux\":{\"resources\":{\"cpu\":{\"quota\":100000}}}}");
        ASSERT_TRUE(config != NULL);
        ASSERT_OK(resource_view_decide("runc", RESOURCE_VIEW_REQUIRED, 1, GIB, 0, NULL, 8, 64 * GIB, &v, NULL));
        ASSERT_OK(resource_view_set_cpuset(&v, "3"));
        ASSERT_OK(resource_view_apply(&v, self->dir, config));
        ASSERT_STREQ("3", json_object_get_string(json_get(json_get(json_get(json_get(config, "linux"),
                                                                              "resources"), "cpu"), "cpus")));
        mounts = json_get(config, "mounts");
        ASSERT_EQ(3, (int) json_object_array_length(mounts));
        last = json_object_array_get_idx(mounts, 2);
        ASSERT_STREQ("/proc/meminfo", json_object_get_string(json_get(last, "destination")));
        ASSERT_CONTAINS("/proc/meminfo", json_object_get_string(json_get(last, "source")));
        ASSERT_STREQ("[\"bind\",\"ro\",\"nosuid\",\"nodev\",\"noexec\"]",
                     json_object_to_json_string_ext(json_get(last, "options"), JSON_C_TO_STRING_PLAIN));
        /* runsc: the cpuset only */
        _cleanup_(resource_view_done) ResourceView g = {};
        _cleanup_json_ json_object *c2 = json_tokener_parse("{\"mounts\":[],\"linux\":{\"resources\":{\"cpu\":{}}}}");
        ASSERT_OK(resource_view_decide("runsc", RESOURCE_VIEW_REQUIRED, 1, GIB, 0, NULL, 8, 64 * GIB, &g, NULL));
        ASSERT_OK(resource_view_set_cpuset(&g, "1"));
        ASSERT_OK(resource_view_apply(&g, self->dir, c2));
        ASSERT_EQ(0, (int) json_object_array_length(json_get(c2, "mounts")));
        ASSERT_ERROR(EINVAL, resource_view_apply(&g, self->dir, json_get(c2, "mounts")));
}

/* A plain directory where LXCFS would be mounted: not running. */
TEST_F(tree, lxcfs_check_plain_directory) {
        _cleanup_free_ char *why = NULL, *why2 = NULL;
        char missing[128];

        touch(self->dir, "proc/meminfo");
        ASSERT_ERROR(ENOENT, lxcfs_check(self->dir, &why));
        ASSERT_CONTAINS("LXCFS is not running", why);
        snprintf(missing, sizeof missing, "%s/nothing", self->dir);
        ASSERT_ERROR(ENOENT, lxcfs_check(missing, &why2));
        ASSERT_CONTAINS("LXCFS is not running", why2);
}

/* Confined profiles require the view, profile none takes it where it can. */
TEST(profiles) {
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_free_ char *err = NULL;
        const char *names[] = { "none", "untrusted-code-read", "untrusted-code-write" };
        const ResourceViewMode want[] = { RESOURCE_VIEW_BEST_EFFORT, RESOURCE_VIEW_REQUIRED, RESOURCE_VIEW_REQUIRED };

        ASSERT_OK(policy_load(POND_SOURCE_ROOT "/policy", &p, &err));
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;
                SandboxBlock b = { .profile = (char *) names[i] };

                ASSERT_OK(policy_resolve(p, &b, &r, &err));
                ASSERT_EQ(want[i], r->resource_view);
        }
}

/* A profile whose resource_view is neither value: the whole policy file is refused. */
TEST_F(tree, bad_resource_view_refused) {
        _cleanup_json_ json_object *profiles = json_object_from_file(POND_SOURCE_ROOT "/policy/profiles.json");
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_free_ char *err = NULL;
        char path[256];

        ASSERT_TRUE(profiles != NULL);
        json_object_object_add(json_get(json_get(profiles, "profiles"), "none"), "resource_view",
                               json_object_new_string("sometimes"));
        snprintf(path, sizeof path, "%s/profiles.json", self->dir);
        ASSERT_EQ(0, json_object_to_file(path, profiles));
        snprintf(path, sizeof path, "cp %s/policy/seccomp.json %s/", POND_SOURCE_ROOT, self->dir);
        ASSERT_EQ(0, system(path));
        ASSERT_ERROR(EINVAL, policy_load(self->dir, &p, &err));
        ASSERT_CONTAINS("resource_view must be \"required\" or \"best-effort\"", err);
}
