/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-policy: every policy file loads; sandbox blocks resolve or are refused (table), fail closed. */
#include <string.h>

#include "basic/json-strict.h"
#include "basic/macro.h"
#include "policy/policy.h"
#include "policy/spec.h"
#include "tests.h"

static Policy *load(void) {
        Policy *p = NULL;
        char *err = NULL;

        if (policy_load(POND_SOURCE_ROOT "/policy", &p, &err) < 0) {
                printf("# policy_load: %s\n", err ?: "?");
                free(err);
                return NULL;
        }
        return p;
}

/* Resolves a sandbox block given as JSON; returns the error (malloc'd) or NULL on success. */
static char *resolve(Policy *p, const char *json, ResolvedPolicy **ret) {
        _cleanup_json_ json_object *o = NULL;
        SandboxBlock b = {};
        char *err = NULL;
        int r;

        r = json_parse_strict(json, strlen(json), JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, &err);
        if (r >= 0)
                r = sandbox_block_from_json(o, "sandbox", &b, &err);
        if (r >= 0)
                r = policy_resolve(p, &b, ret, &err);
        sandbox_block_done(&b);
        if (r < 0 && !err)
                err = strdup("(no message)");
        return r < 0 ? err : NULL;
}

TEST(policy_files_load) {
        Policy *p = load();
        ASSERT_TRUE(p != NULL);
        policy_free(p);
}

static const struct {
        const char *block;
        const char *refusal; /* NULL: accepted; else a substring of the reason */
} table[] = {
        { "{\"profile\":\"none\"}", NULL },
        { "{\"profile\":\"untrusted-code-read\"}", NULL },
        { "{\"profile\":\"untrusted-code-write\"}", NULL },
        { "{\"profile\":\"untrusted-code-write\",\"backend\":\"runc\",\"tier\":\"byo\"}", NULL },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":\"512M\",\"cpus\":1.5,"
          "\"pids_limit\":256,\"tmpfs_size\":\"64M\",\"image\":\"host\"}}", NULL },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":67108864}}", NULL },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":\"64G\"}}", NULL },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"cpus\":64}}", NULL },
        { "{\"profile\":\"untrusted-code-write\",\"backend\":\"kata\"}", NULL }, /* policy allows; host decides */
        { "{}", "sandbox.profile: missing" },
        { "{\"backend\":\"runc\"}", "sandbox.profile: missing" },
        { "{\"profile\":\"yolo\"}", "unknown profile 'yolo'" },
        { "{\"profile\":\"\"}", "profile" },
        { "{\"profile\":\"untrusted-code-write\",\"backend\":\"docker\"}", "unknown backend 'docker'" },
        { "{\"profile\":\"untrusted-code-write\",\"tier\":\"gold\"}", "sandbox.tier: 'gold'" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"network\":\"open\"}}", "not an overridable knob" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"filesystem\":\"host\"}}", "not an overridable" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"capabilities\":[\"CAP_SYS_ADMIN\"]}}",
          "not an overridable" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"seccomp\":false}}", "not an overridable" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":\"1T\"}}", "out of bounds" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":\"1M\"}}", "out of bounds" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":0}}", "memory" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":-1}}", "memory" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":\"-1\"}}", "memory" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":\"lots\"}}", "memory" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"cpus\":0}}", "cpus" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"cpus\":-2}}", "cpus" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"cpus\":1000}}", "out of bounds" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"cpus\":\"2\"}}", "cpus" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"pids_limit\":-1}}", "pids_limit" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"pids_limit\":0}}", "pids_limit" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"pids_limit\":1000000}}", "out of bounds" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"pids_limit\":1.5}}", "pids_limit" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"tmpfs_size\":\"0\"}}", "tmpfs_size" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"tmpfs_size\":\"128T\"}}", "out of bounds" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"image\":\"../etc\"}}", "image" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"image\":\"Host\"}}", "image" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"image\":7}}", "image" },
        { "{\"profile\":\"untrusted-code-write\",\"overrides\":[]}", "overrides" },
        { "{\"profile\":\"untrusted-code-write\",\"posture\":\"open\"}", "unknown key" },
};

TEST(resolution_table) {
        _cleanup_(policy_freep) Policy *p = load();

        ASSERT_TRUE(p != NULL);
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;
                _cleanup_free_ char *err = resolve(p, table[i].block, &r);

                if (!table[i].refusal && err)
                        TEST_FAIL_("block %zu %s refused: %s", i, table[i].block, err);
                if (table[i].refusal) {
                        if (!err)
                                TEST_FAIL_("block %zu %s accepted", i, table[i].block);
                        ASSERT_CONTAINS(table[i].refusal, err);
                        ASSERT_TRUE(r == NULL);
                }
        }
}

TEST(postures_are_fixed_by_the_profile) {
        _cleanup_(policy_freep) Policy *p = load();
        _cleanup_(resolved_policy_freep) ResolvedPolicy *w = NULL, *rd = NULL, *n = NULL;

        ASSERT_TRUE(p != NULL);
        ASSERT_TRUE(resolve(p, "{\"profile\":\"untrusted-code-write\"}", &w) == NULL);
        ASSERT_TRUE(resolve(p, "{\"profile\":\"untrusted-code-read\"}", &rd) == NULL);
        ASSERT_TRUE(resolve(p, "{\"profile\":\"none\"}", &n) == NULL);
        ASSERT_TRUE(w->confined);
        ASSERT_EQ(FS_OVERLAY, w->fs);
        ASSERT_EQ(NET_ALLOWLIST, w->net);
        ASSERT_EQ(FS_READONLY, rd->fs);
        ASSERT_EQ(NET_BROKER_ONLY, rd->net);
        ASSERT_FALSE(n->confined);
        ASSERT_EQ(NET_OPEN, n->net);
        ASSERT_STREQ("trusted", w->tier);
        ASSERT_STREQ("runc", w->backend);
        ASSERT_STREQ("host", w->image);
}

/* Every confined profile shipped has Landlock: best-effort where it may run without (gVisor has none), the
 * locked one required; TCP to the sidecars alone where the network is the allowlist's. */
TEST(landlock_in_every_confined_profile) {
        _cleanup_(policy_freep) Policy *p = load();
        static const struct {
                const char *block;
                LandlockMode mode;
                bool connect_any, mqueue, exec_allow;
        } cases[] = {
                { "{\"profile\":\"untrusted-code-read\"}", LANDLOCK_BEST_EFFORT, true, true, false },
                { "{\"profile\":\"untrusted-code-write\"}", LANDLOCK_BEST_EFFORT, true, true, false },
                { "{\"profile\":\"untrusted-code-write\",\"backend\":\"runsc\"}", LANDLOCK_BEST_EFFORT, true, true,
                  false },
                { "{\"profile\":\"untrusted-code-locked\"}", LANDLOCK_REQUIRED, false, false, true },
                { "{\"profile\":\"none\"}", LANDLOCK_OFF, false, false, false },
        };

        ASSERT_TRUE(p != NULL);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;

                printf("# %s\n", cases[i].block);
                ASSERT_TRUE(resolve(p, cases[i].block, &r) == NULL);
                EXPECT_EQ(cases[i].mode, r->landlock.mode);
                EXPECT_EQ(cases[i].connect_any, r->landlock.connect_any);
                EXPECT_EQ(cases[i].mqueue, r->landlock.mqueue);
                EXPECT_EQ(cases[i].exec_allow, r->landlock.exec_allow != NULL);
                EXPECT_EQ(r->confined, r->landlock.mode != LANDLOCK_OFF);
        }
}

TEST(values_reach_the_runtime_units) {
        _cleanup_(policy_freep) Policy *p = load();
        _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;

        ASSERT_TRUE(p != NULL);
        ASSERT_TRUE(resolve(p, "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"memory\":\"512M\","
                               "\"cpus\":1.5,\"pids_limit\":256,\"tmpfs_size\":\"64M\"}}", &r) == NULL);
        ASSERT_EQ(512ULL << 20, r->memory_bytes);
        ASSERT_EQ(1500, r->cpus_milli);
        ASSERT_EQ(256, r->pids_limit);
        ASSERT_EQ(64ULL << 20, r->tmpfs_bytes);
        ASSERT_TRUE(r->nofile > 0 && r->nproc > 0);
}

/* exec_concurrency: each profile's default, an override within the bounds, beyond them refused. */
TEST(exec_concurrency_knob) {
        _cleanup_(policy_freep) Policy *p = load();
        _cleanup_(resolved_policy_freep) ResolvedPolicy *w = NULL, *n = NULL, *o = NULL, *big = NULL;
        _cleanup_free_ char *err = NULL;

        ASSERT_TRUE(p != NULL);
        ASSERT_TRUE(resolve(p, "{\"profile\":\"untrusted-code-write\"}", &w) == NULL);
        ASSERT_EQ(8, w->exec_concurrency);
        ASSERT_TRUE(resolve(p, "{\"profile\":\"none\"}", &n) == NULL);
        ASSERT_EQ(4, n->exec_concurrency);
        ASSERT_TRUE(resolve(p, "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"exec_concurrency\":16}}",
                            &o) == NULL);
        ASSERT_EQ(16, o->exec_concurrency);
        err = resolve(p, "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"exec_concurrency\":17}}", &big);
        ASSERT_TRUE(err != NULL);
        ASSERT_CONTAINS("sandbox.overrides.exec_concurrency: 17 is out of bounds", err);
}

/* A policy file that is itself wrong is refused as a whole. */
TEST(bad_policy_files_refused) {
        char dir[] = "/tmp/pond-test-policy.XXXXXX", path[256];
        Policy *p = NULL;
        char *err = NULL;
        FILE *f;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(path, sizeof path, "%s/profiles.json", dir);
        f = fopen(path, "w");
        ASSERT_TRUE(f != NULL);
        fputs("{\"version\":1,\"knobs\":{},\"backends\":{\"runc\":{}},\"tiers\":[\"any\"],\"profiles\":{\"x\":"
              "{\"confined\":true,\"filesystem\":\"host\",\"network\":\"open\",\"backends\":[\"runc\"],"
              "\"default_backend\":\"runc\",\"default_tier\":\"any\",\"defaults\":{},"
              "\"rlimits\":{\"nofile\":1,\"nproc\":1}}}}", f);
        fclose(f);
        snprintf(path, sizeof path, "cp %s/policy/seccomp.json %s/", POND_SOURCE_ROOT, dir);
        ASSERT_EQ(0, system(path));
        ASSERT_ERROR(EINVAL, policy_load(dir, &p, &err));
        ASSERT_CONTAINS("confined profile x cannot have an open posture", err);
        free(err);
        err = NULL;
        /* A sidecar's death fails the job unless the profile says otherwise, in words the policy knows. */
        ASSERT_EQ(SIDECAR_DEATH_FAIL, sidecar_death_from_string(NULL));
        ASSERT_EQ(SIDECAR_DEATH_RECORD, sidecar_death_from_string("record"));
        ASSERT_EQ(-EINVAL, (int) sidecar_death_from_string("ignore"));
        snprintf(path, sizeof path, "%s/profiles.json", dir);
        f = fopen(path, "w");
        ASSERT_TRUE(f != NULL);
        fputs("{\"version\":1,\"knobs\":{},\"backends\":{\"runc\":{}},\"tiers\":[\"any\"],\"profiles\":{\"x\":"
              "{\"confined\":true,\"filesystem\":\"overlay\",\"network\":\"allowlist\",\"backends\":[\"runc\"],"
              "\"default_backend\":\"runc\",\"default_tier\":\"any\",\"defaults\":{},\"on_sidecar_death\":\"ignore\","
              "\"rlimits\":{\"nofile\":1,\"nproc\":1}}}}", f);
        fclose(f);
        ASSERT_ERROR(EINVAL, policy_load(dir, &p, &err));
        ASSERT_CONTAINS("on_sidecar_death must be", err);
        free(err);
        snprintf(path, sizeof path, "rm -rf %s", dir);
        (void) system(path);
}

TEST_MAIN()
