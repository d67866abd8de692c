/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ctl-slurm: pond's routing in Slurm's terms on the real policy/ files: a worker's Features from probe
 * documents and tags, its CPUs and memory within admission ceilings, and job specs turned into sbatch
 * options or refused with dispatch-check's reason (one worker with runsc, one with an image, as the
 * integration test's cluster). */
#include <string.h>

#include "basic/json-strict.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "policy/policy.h"
#include "slurm.h"
#include "tests.h"

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CAPS_BASE "\"seccomp\",\"cgroup.cpu\",\"cgroup.memory\",\"cgroup.pids\",\"nftables\",\"landlock.abi=5\""
#define W1 "{\"probe_version\":1,\"capabilities\":[\"sandbox.runc\",\"sandbox.runsc\"," CAPS_BASE "],\"images\":[]}"
#define W2 "{\"probe_version\":1,\"capabilities\":[\"sandbox.runc\"," CAPS_BASE "],\"images\":[{\"digest\":\"" \
        DIGEST "\",\"names\":[\"tools:1\"]}]}"

static json_object *parse(const char *json) {
        json_object *o = NULL;

        if (json_parse_strict(json, strlen(json), JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, NULL) < 0)
                printf("# unparsable test input: %s\n", json);
        return o;
}

static char *joined(char **l, const char *sep) {
        char *out = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);

        for (size_t i = 0; f && l && l[i]; i++)
                fprintf(f, "%s%s", i ? sep : "", l[i]);
        if (f)
                fclose(f);
        return out;
}

TEST(feature_names) {
        static const char *const cases[][2] = {
                { "sandbox.runsc", "sb_runsc" }, { "landlock.abi=4", "landlock4" }, { "pool:trusted", "pool_trusted" },
                { "tenant:acme.io", "tenant_acme_io" }, { "cgroup.memory", "cap_cgroup_memory" },
                { "seccomp", "cap_seccomp" }, { "zone:eu-1", "tag_zone_eu_1" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *f = NULL;

                ASSERT_OK(slurm_feature_for(cases[i][0], &f));
                ASSERT_STREQ(cases[i][1], f);
        }
}

TEST(image_feature) {
        _cleanup_free_ char *f = NULL;

        ASSERT_OK(slurm_image_feature(DIGEST, &f));
        ASSERT_STREQ("img_0123456789ab", f);
        ASSERT_ERROR(EINVAL, slurm_image_feature("tools:1", &f));
        ASSERT_ERROR(EINVAL, slurm_image_feature(NULL, &f));
}

TEST(node_features) {
        _cleanup_json_ json_object *w1 = parse(W1), *w2 = parse(W2), *bad = parse("{\"probe_version\":2}");
        _cleanup_strv_free_ char **tags = NULL, **f1 = NULL, **f2 = NULL, **f3 = NULL;
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *err = NULL;

        ASSERT_OK(strv_build(&tags, "pool:trusted", NULL));
        ASSERT_OK(slurm_node_features(w1, tags, &f1, NULL));
        s1 = joined(f1, ",");
        ASSERT_STREQ("sb_runc,sb_runsc,cap_seccomp,cap_cgroup_cpu,cap_cgroup_memory,cap_cgroup_pids,cap_nftables,"
                     "landlock1,landlock2,landlock3,landlock4,landlock5,pool_trusted", s1);
        ASSERT_OK(slurm_node_features(w2, NULL, &f2, NULL));
        s2 = joined(f2, ",");
        ASSERT_TRUE(strstr(s2, "img_0123456789ab") != NULL);
        ASSERT_TRUE(strstr(s2, "sb_runsc") == NULL);
        ASSERT_TRUE(strstr(s2, "pool_") == NULL); /* no tags: no pool, so no job of any tier goes there */
        ASSERT_ERROR(EINVAL, slurm_node_features(bad, NULL, &f3, &err));
        ASSERT_CONTAINS("probe_version 1", err);
}

TEST(node_resources) {
        SlurmNodeResources r;
        _cleanup_free_ char *err = NULL;

        ASSERT_OK(slurm_node_resources(&(AdmissionPolicy) {}, 8, 16ULL << 30, &r, NULL));
        ASSERT_EQ(8u, r.cpus);
        ASSERT_EQ(16384u, r.memory_mib);
        /* max_cpus 2.5 -> 2 whole CPUs; max_memory below the host's */
        ASSERT_OK(slurm_node_resources(&(AdmissionPolicy) { .max_cpus_milli = 2500, .max_memory_bytes = 1ULL << 30 },
                                       8, 16ULL << 30, &r, NULL));
        ASSERT_EQ(2u, r.cpus);
        ASSERT_EQ(1024u, r.memory_mib);
        /* max_jobs 3: Slurm must not place a fourth job, each takes a CPU at least */
        ASSERT_OK(slurm_node_resources(&(AdmissionPolicy) { .max_jobs = 3 }, 8, 16ULL << 30, &r, NULL));
        ASSERT_EQ(3u, r.cpus);
        ASSERT_ERROR(EINVAL, slurm_node_resources(&(AdmissionPolicy) { .max_cpus_milli = 500 }, 8, 1ULL << 30, &r,
                                                  &err));
        ASSERT_CONTAINS("less than one whole CPU", err);
}

typedef struct Cluster {
        Policy *policy;
        json_object *workers[3];
        char *names[3];
        char *tags[2];
} Cluster;

static Cluster *cluster_new(void) {
        static Cluster c;
        char *err = NULL;

        if (!c.policy && policy_load(POND_SOURCE_ROOT "/policy", &c.policy, &err) < 0) {
                printf("# policy_load: %s\n", err ?: "?");
                free(err);
                return NULL;
        }
        c.workers[0] = c.workers[0] ?: parse(W1);
        c.workers[1] = c.workers[1] ?: parse(W2);
        c.names[0] = (char *) "w1";
        c.names[1] = (char *) "w2";
        c.tags[0] = (char *) "pool:trusted";
        return &c;
}

/* The sbatch options for spec against both workers, or NULL with *ret_error. */
static char *args_for(const char *spec, bool with_workers, char **ret_error) {
        Cluster *c = cluster_new();
        SlurmRequestOptions o = { .margin_s = 60, .workers = with_workers ? c->workers : NULL,
                                  .worker_names = c->names, .worker_tags = c->tags };
        _cleanup_(slurm_request_freep) SlurmRequest *req = NULL;
        _cleanup_strv_free_ char **args = NULL;

        if (!c || slurm_request_for(c->policy, spec, strlen(spec), &o, &req, ret_error) < 0 ||
            slurm_request_to_args(req, &args) < 0)
                return NULL;
        return joined(args, " ");
}

#define SPEC(id, tenant, sandbox) "{\"job_id\":\"" id "\",\"tenant\":\"" tenant "\",\"command\":[\"true\"]," \
        "\"limits\":{\"wall_clock_s\":600},\"sandbox\":" sandbox "}"

TEST(request_runsc) {
        _cleanup_free_ char *err = NULL,
                *a = args_for(SPEC("t1", "acme", "{\"profile\":\"untrusted-code-read\",\"backend\":\"runsc\","
                                   "\"overrides\":{\"cpus\":1.5,\"memory\":\"300M\"}}"), true, &err);

        if (!a)
                TEST_FAIL_("refused: %s", err ?: "?");
        ASSERT_STREQ("--job-name=t1 --partition=trusted --account=acme --constraint=sb_runsc&cap_seccomp&"
                     "cap_cgroup_memory&cap_cgroup_pids&cap_cgroup_cpu&cap_nftables&pool_trusted --nodes=1 "
                     "--cpus-per-task=2 --mem=300M --time=11 --requeue", a);
}

TEST(request_image) {
        _cleanup_free_ char *err = NULL, *err2 = NULL, *err3 = NULL,
                *by_name = args_for(SPEC("t2", "acme", "{\"profile\":\"untrusted-code-read\","
                                         "\"overrides\":{\"image\":\"tools:1\"}}"), true, &err),
                *by_digest = args_for(SPEC("t2", "acme", "{\"profile\":\"untrusted-code-read\","
                                           "\"overrides\":{\"image\":\"" DIGEST "\"}}"), false, &err2),
                *unknown = args_for(SPEC("t2", "acme", "{\"profile\":\"untrusted-code-read\","
                                         "\"overrides\":{\"image\":\"tools:1\"}}"), false, &err3);

        if (!by_name)
                TEST_FAIL_("refused: %s", err ?: "?");
        ASSERT_CONTAINS("&img_0123456789ab ", by_name);
        ASSERT_TRUE(by_digest != NULL);
        ASSERT_CONTAINS("&img_0123456789ab ", by_digest);
        /* a name without the workers' probes cannot be routed: refused, not sent anywhere */
        ASSERT_TRUE(unknown == NULL);
        ASSERT_CONTAINS("pin it by digest", err3);
}

TEST(request_landlock) {
        _cleanup_free_ char *err = NULL,
                *a = args_for(SPEC("t3", "acme", "{\"profile\":\"untrusted-code-locked\"}"), true, &err);

        if (!a)
                TEST_FAIL_("refused: %s", err ?: "?");
        ASSERT_CONTAINS("&landlock4&", a);
}

TEST(request_refused) {
        static const char *const cases[][2] = {
                /* dispatch-check's own reasons */
                { SPEC("r1", "acme", "{}"), "profile" },
                { SPEC("r2", "acme", "{\"profile\":\"untrusted-code-write\",\"overrides\":{\"network\":\"open\"}}"),
                  "not an overridable knob" },
                /* no worker has kata: each worker's reason */
                { SPEC("r3", "acme", "{\"profile\":\"untrusted-code-read\",\"backend\":\"kata\"}"),
                  "no worker can take it: w1: worker lacks capability 'sandbox.kata'" },
                { SPEC("r4", "acme", "{\"profile\":\"untrusted-code-read\",\"tier\":\"byo\"}"),
                  "byo jobs do not go through Slurm" },
                { SPEC("r5", "Acme", "{\"profile\":\"untrusted-code-read\"}"), "lower case" },
                { SPEC("r6", "ac me", "{\"profile\":\"untrusted-code-read\"}"), "not usable as a Slurm account" },
                { SPEC("r7-0123456789-0123456789-0123456789-0123456789-0123456789-abcd", "acme",
                       "{\"profile\":\"untrusted-code-read\"}"), "job_id: at most 59" },
                { "{\"job_id\":\"r8\"}", "tenant" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *err = NULL, *a = args_for(cases[i][0], true, &err);

                if (a)
                        TEST_FAIL_("accepted %s: %s", cases[i][0], a);
                ASSERT_CONTAINS(cases[i][1], err);
        }
}

TEST_MAIN()
