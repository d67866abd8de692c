/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dispatch: the control plane's routing check on the real policy/ files: a table of sandbox blocks
 * (accepted with their capability and tags, refused with their reason), the normalized block resolving
 * again to itself, and worker eligibility from probe documents and tags. */
#include <string.h>

#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/macro.h"
#include "dispatch.h"
#include "policy/policy.h"
#include "policy/tags.h"
#include "policy/worker-policy.h"
#include "tests.h"

static Policy *load_from(const char *dir) {
        Policy *p = NULL;
        char *err = NULL;

        if (policy_load(dir, &p, &err) < 0) {
                printf("# policy_load: %s\n", err ?: "?");
                free(err);
                return NULL;
        }
        return p;
}

static json_object *parse(const char *json) {
        json_object *o = NULL;

        if (json_parse_strict(json, strlen(json), JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, NULL) < 0)
                printf("# unparsable test input: %s\n", json);
        return o;
}

/* Runs dispatch_check on a block given as JSON; returns the refusal (malloc'd) or NULL. */
static char *check(const Policy *p, const char *block, const char *tenant, DispatchDecision **ret) {
        _cleanup_json_ json_object *o = parse(block);
        char *err = NULL;
        int r;

        r = dispatch_check(p, o, tenant, ret, &err);
        if (r < 0 && !err)
                err = strdup("(no message)");
        return r < 0 ? err : NULL;
}

static char *joined(char **l) {
        char *out = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);

        for (size_t i = 0; f && l && l[i]; i++)
                fprintf(f, "%s%s", i ? "," : "", l[i]);
        if (f)
                fclose(f);
        return out;
}

#define W "{\"profile\":\"untrusted-code-write\""
#define OV(x) W ",\"overrides\":{" x "}}"

static const struct {
        const char *block;
        const char *tenant;
        const char *refusal;    /* NULL: accepted; else a substring of the reason */
        const char *capability; /* when accepted */
        const char *tags;       /* when accepted, comma-joined */
} table[] = {
        { "{\"profile\":\"none\"}", NULL, NULL, "sandbox.runc", "pool:any" },
        { "{\"profile\":\"untrusted-code-read\"}", NULL, NULL, "sandbox.runc", "pool:trusted" },
        { W "}", NULL, NULL, "sandbox.runc", "pool:trusted" },
        { W ",\"backend\":\"runsc\"}", NULL, NULL, "sandbox.runsc", "pool:trusted" },
        { W ",\"backend\":\"kata\"}", NULL, NULL, "sandbox.kata", "pool:trusted" },
        { W ",\"tier\":\"any\"}", NULL, NULL, "sandbox.runc", "pool:any" },
        { W ",\"tier\":\"trusted\"}", NULL, NULL, "sandbox.runc", "pool:trusted" },
        { W ",\"tier\":\"byo\"}", "acme", NULL, "sandbox.runc", "pool:byo,tenant:acme" },
        { "{\"profile\":\"untrusted-code-read\",\"tier\":\"byo\",\"backend\":\"runsc\"}", "proj-1.x", NULL,
          "sandbox.runsc", "pool:byo,tenant:proj-1.x" },
        { OV("\"memory\":\"512M\",\"cpus\":1.5,\"pids_limit\":256,\"tmpfs_size\":\"64M\",\"image\":\"host\""),
          NULL, NULL, "sandbox.runc", "pool:trusted" },
        { W "}", "acme", NULL, "sandbox.runc", "pool:trusted" }, /* a tenant alone does not pick a pool */
        { "{\"profile\":\"none\",\"tier\":\"byo\"}", "acme", NULL, "sandbox.runc", "pool:byo,tenant:acme" },
        { W ",\"allow_hosts\":[\"registry.example.org\"]}", NULL, NULL, "sandbox.runc", "pool:trusted" },
        { "{\"profile\":\"none\",\"backend\":\"runsc\"}", NULL, NULL, "sandbox.runsc", "pool:any" },
        { OV("\"cpus\":0.1"), NULL, NULL, "sandbox.runc", "pool:trusted" },

        { "{}", NULL, "sandbox.profile: missing", NULL, NULL },
        { "{\"backend\":\"runc\"}", NULL, "sandbox.profile: missing", NULL, NULL },
        { "{\"tier\":\"trusted\"}", "acme", "sandbox.profile: missing", NULL, NULL },
        { "{\"profile\":\"yolo\"}", NULL, "unknown profile 'yolo'", NULL, NULL },
        { "{\"profile\":\"\"}", NULL, "profile", NULL, NULL },
        { "{\"profile\":7}", NULL, "profile", NULL, NULL },
        { W ",\"backend\":\"docker\"}", NULL, "unknown backend 'docker'", NULL, NULL },
        { W ",\"backend\":\"RUNC\"}", NULL, "unknown backend 'RUNC'", NULL, NULL },
        { W ",\"tier\":\"gold\"}", NULL, "sandbox.tier: 'gold'", NULL, NULL },
        { W ",\"tier\":\"BYO\"}", "acme", "sandbox.tier: 'BYO'", NULL, NULL },
        { W ",\"tier\":\"byo\"}", NULL, "byo needs a tenant", NULL, NULL },
        { "{\"profile\":\"none\",\"tier\":\"byo\"}", NULL, "byo needs a tenant", NULL, NULL },
        { W ",\"tier\":\"byo\"}", "", "--tenant", NULL, NULL },
        { W ",\"tier\":\"byo\"}", "acme,pool:trusted", "--tenant", NULL, NULL },
        { W ",\"tier\":\"byo\"}", "a:b", "--tenant", NULL, NULL },
        { W ",\"tier\":\"byo\"}", "-acme", "--tenant", NULL, NULL },
        { OV("\"network\":\"open\""), NULL, "not an overridable knob", NULL, NULL },
        { OV("\"filesystem\":\"host\""), NULL, "not an overridable knob", NULL, NULL },
        { OV("\"capabilities\":[\"CAP_SYS_ADMIN\"]"), NULL, "not an overridable knob", NULL, NULL },
        { OV("\"seccomp\":false"), NULL, "not an overridable knob", NULL, NULL },
        { OV("\"memory\":\"1T\""), NULL, "out of bounds", NULL, NULL },
        { OV("\"cpus\":1000"), NULL, "out of bounds", NULL, NULL },
        { OV("\"pids_limit\":0"), NULL, "pids_limit", NULL, NULL },
        { OV("\"image\":\"../etc\""), NULL, "image", NULL, NULL },
        { W ",\"overrides\":[]}", NULL, "overrides", NULL, NULL },
        { W ",\"posture\":\"open\"}", NULL, "unknown key", NULL, NULL },
        { W ",\"allow_hosts\":\"registry.example.org\"}", NULL, "allow_hosts", NULL, NULL },
        { "[]", NULL, "must be an object", NULL, NULL },
        { "null", NULL, "must be an object", NULL, NULL },
};

TEST(table_has_thirty_blocks) {
        ASSERT_TRUE(ELEMENTSOF(table) >= 30);
}

TEST(dispatch_table) {
        _cleanup_(policy_freep) Policy *p = load_from(POND_SOURCE_ROOT "/policy");

        ASSERT_TRUE(p != NULL);
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
                _cleanup_free_ char *err = check(p, table[i].block, table[i].tenant, &d), *tags = NULL;

                if (!table[i].refusal) {
                        if (err)
                                TEST_FAIL_("block %zu %s refused: %s", i, table[i].block, err);
                        tags = joined(d->required_tags);
                        ASSERT_STREQ(table[i].capability, d->required_capability);
                        ASSERT_STREQ(table[i].tags, tags);
                        continue;
                }
                if (!err)
                        TEST_FAIL_("block %zu %s (tenant %s) accepted", i, table[i].block,
                                   table[i].tenant ?: "none");
                ASSERT_CONTAINS(table[i].refusal, err);
                ASSERT_TRUE(d == NULL);
        }
}

/* The stored block is what the worker re-resolves: it must mean exactly what was checked here. */
TEST(normalized_block_resolves_to_itself) {
        _cleanup_(policy_freep) Policy *p = load_from(POND_SOURCE_ROOT "/policy");

        ASSERT_TRUE(p != NULL);
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL, *again = NULL;
                _cleanup_free_ char *err = NULL, *err2 = NULL;
                const char *first, *second;

                if (table[i].refusal)
                        continue;
                err = check(p, table[i].block, table[i].tenant, &d);
                ASSERT_TRUE(err == NULL);
                err2 = check(p, json_object_to_json_string(d->sandbox_block), table[i].tenant, &again);
                if (err2)
                        TEST_FAIL_("block %zu normalized %s refused: %s", i,
                                   json_object_to_json_string(d->sandbox_block), err2);
                first = json_object_to_json_string(d->sandbox_block);
                second = json_object_to_json_string(again->sandbox_block);
                ASSERT_STREQ(first, second);
        }
}

TEST(confined_requirements) {
        _cleanup_(policy_freep) Policy *p = load_from(POND_SOURCE_ROOT "/policy");
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL, *n = NULL;
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *caps = NULL, *ncaps = NULL;

        ASSERT_TRUE(p != NULL);
        e1 = check(p, W ",\"backend\":\"runsc\"}", NULL, &d);
        e2 = check(p, "{\"profile\":\"none\"}", NULL, &n);
        ASSERT_TRUE(e1 == NULL && e2 == NULL);
        caps = joined(d->required_capabilities);
        ncaps = joined(n->required_capabilities);
        ASSERT_STREQ("sandbox.runsc,seccomp,cgroup.memory,cgroup.pids,cgroup.cpu,nftables", caps);
        ASSERT_STREQ("sandbox.runc", ncaps);
        ASSERT_STREQ("trusted", json_object_get_string(json_object_object_get(d->sandbox_block, "tier")));
        ASSERT_EQ(4LL << 30, json_object_get_int64(json_object_object_get(
                json_object_object_get(d->sandbox_block, "overrides"), "memory")));
}

#define PROBE_RUNC_ONLY                                                                               \
        "{\"probe_version\":1,\"capabilities\":[\"sandbox.runc\",\"cgroup.cpu\",\"cgroup.memory\","          \
        "\"cgroup.pids\",\"seccomp\",\"nftables\",\"landlock.abi=7\"]}"

static int eligible(const char *block, const char *tenant, const char *probe, char **tags,
                    char **ret_reason) {
        _cleanup_(policy_freep) Policy *p = load_from(POND_SOURCE_ROOT "/policy");
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
        _cleanup_json_ json_object *o = parse(probe);
        _cleanup_free_ char *err = NULL;

        if (!p)
                return -EIO;
        err = check(p, block, tenant, &d);
        if (err)
                return printf("# refused: %s\n", err), -EINVAL;
        return dispatch_worker_eligible(d, o, tags, ret_reason);
}

TEST(worker_without_backend_is_not_eligible) {
        char *trusted[] = { (char *) "pool:trusted", NULL };
        _cleanup_free_ char *why = NULL;

        ASSERT_EQ(1, eligible(W "}", NULL, PROBE_RUNC_ONLY, trusted, NULL));
        ASSERT_EQ(0, eligible(W ",\"backend\":\"runsc\"}", NULL, PROBE_RUNC_ONLY, trusted, &why));
        ASSERT_CONTAINS("lacks capability 'sandbox.runsc'", why);
        free(why);
        why = NULL;
        ASSERT_EQ(0, eligible(W ",\"backend\":\"kata\"}", NULL, PROBE_RUNC_ONLY, trusted, &why));
        ASSERT_CONTAINS("sandbox.kata", why);
}

TEST(worker_without_cgroup_controller_is_not_eligible) {
        char *trusted[] = { (char *) "pool:trusted", NULL };
        _cleanup_free_ char *why = NULL;
        const char *probe = "{\"probe_version\":1,\"capabilities\":[\"sandbox.runc\",\"cgroup.cpu\","
                            "\"cgroup.memory\",\"seccomp\"]}";

        ASSERT_EQ(0, eligible(W "}", NULL, probe, trusted, &why));
        ASSERT_CONTAINS("cgroup.pids", why);
        /* profile none has no minimum beyond its backend */
        ASSERT_EQ(1, eligible("{\"profile\":\"none\"}", NULL, "{\"probe_version\":1,\"capabilities\":"
                              "[\"sandbox.runc\"]}", (char *[]) { (char *) "pool:any", NULL }, NULL));
}

TEST(tags_must_match) {
        char *trusted[] = { (char *) "pool:trusted", NULL };
        char *byo_other[] = { (char *) "pool:byo", (char *) "tenant:other", NULL };
        char *byo_acme[] = { (char *) "zone:eu", (char *) "tenant:acme", (char *) "pool:byo", NULL };
        _cleanup_free_ char *why = NULL, *why2 = NULL, *why3 = NULL;
        const char *byo = W ",\"tier\":\"byo\"}";

        ASSERT_EQ(0, eligible(byo, "acme", PROBE_RUNC_ONLY, trusted, &why));
        ASSERT_CONTAINS("lacks tag 'pool:byo'", why);
        ASSERT_EQ(0, eligible(byo, "acme", PROBE_RUNC_ONLY, byo_other, &why2));
        ASSERT_CONTAINS("lacks tag 'tenant:acme'", why2);
        ASSERT_EQ(1, eligible(byo, "acme", PROBE_RUNC_ONLY, byo_acme, NULL));
        /* a trusted job never lands on a byo worker, nor on an untagged one */
        ASSERT_EQ(0, eligible(W "}", NULL, PROBE_RUNC_ONLY, byo_acme, NULL));
        ASSERT_EQ(0, eligible(W "}", NULL, PROBE_RUNC_ONLY, NULL, &why3));
        ASSERT_CONTAINS("(it has: (none))", why3);
}

TEST(byo_without_tenant_refused) {
        _cleanup_(policy_freep) Policy *p = load_from(POND_SOURCE_ROOT "/policy");
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
        _cleanup_free_ char *err = NULL;

        ASSERT_TRUE(p != NULL);
        err = check(p, W ",\"tier\":\"byo\",\"backend\":\"runsc\"}", NULL, &d);
        ASSERT_CONTAINS("byo needs a tenant", err);
        ASSERT_TRUE(d == NULL);
}

TEST(leveled_capabilities) {
        char *req_old[] = { (char *) "landlock.abi=3", NULL };
        char *req_new[] = { (char *) "landlock.abi=9", NULL };
        char *req_prefix[] = { (char *) "landlock.ab=3", NULL };
        DispatchDecision d = { .required_capabilities = req_old };
        _cleanup_json_ json_object *probe = parse(PROBE_RUNC_ONLY);
        _cleanup_free_ char *why = NULL;

        ASSERT_EQ(1, dispatch_worker_eligible(&d, probe, NULL, NULL));
        d.required_capabilities = req_new;
        ASSERT_EQ(0, dispatch_worker_eligible(&d, probe, NULL, &why));
        ASSERT_CONTAINS("landlock.abi=9", why);
        d.required_capabilities = req_prefix;
        ASSERT_EQ(0, dispatch_worker_eligible(&d, probe, NULL, NULL));
}

/* A job that pins an imported image goes only to a worker whose probe lists it. */
TEST(image_must_be_present) {
        _cleanup_json_ json_object *block = parse("{\"overrides\":{\"image\":\"sha256:0123456789abcdef0123456789"
                                                  "abcdef0123456789abcdef0123456789abcdef\"}}");
        _cleanup_json_ json_object *by_name = parse("{\"overrides\":{\"image\":\"tools/agent:1\"}}");
        _cleanup_json_ json_object *host = parse("{\"overrides\":{\"image\":\"host\"}}");
        _cleanup_json_ json_object *with = parse("{\"probe_version\":1,\"capabilities\":[],\"images\":[{\"digest\":"
                                                 "\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef01234567"
                                                 "89abcdef\",\"names\":[\"tools/agent:1\"]}]}");
        _cleanup_json_ json_object *without = parse("{\"probe_version\":1,\"capabilities\":[]}");
        _cleanup_free_ char *why = NULL;
        DispatchDecision d = { .sandbox_block = block };

        ASSERT_EQ(1, dispatch_worker_eligible(&d, with, NULL, NULL));
        ASSERT_EQ(0, dispatch_worker_eligible(&d, without, NULL, &why));
        ASSERT_CONTAINS("does not have image", why);
        d.sandbox_block = by_name;
        ASSERT_EQ(1, dispatch_worker_eligible(&d, with, NULL, NULL));
        ASSERT_EQ(0, dispatch_worker_eligible(&d, without, NULL, NULL));
        d.sandbox_block = host;
        ASSERT_EQ(1, dispatch_worker_eligible(&d, without, NULL, NULL));
}

TEST(malformed_probe_refused) {
        static const char *const bad[] = {
                "{}", "[]", "{\"probe_version\":1}", "{\"probe_version\":2,\"capabilities\":[]}",
                "{\"probe_version\":1,\"capabilities\":{}}", "{\"probe_version\":1,\"capabilities\":[7]}",
                "{\"probe_version\":\"1\",\"capabilities\":[]}",
        };
        char *req[] = { (char *) "sandbox.runc", NULL };
        DispatchDecision d = { .required_capabilities = req };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_json_ json_object *o = parse(bad[i]);
                _cleanup_free_ char *why = NULL;
                ASSERT_ERROR(EINVAL, dispatch_worker_eligible(&d, o, NULL, &why));
                ASSERT_CONTAINS("worker probe", why);
        }
}

TEST(tags_split) {
        _cleanup_strv_free_ char **t = NULL, **e = NULL;
        char **bad = NULL;

        ASSERT_OK(tags_split("pool:byo,tenant:acme,pool:byo", &t));
        ASSERT_EQ(2, strv_length(t));
        ASSERT_STREQ("tenant:acme", t[1]);
        ASSERT_OK(tags_split(NULL, &e));
        ASSERT_EQ(0, strv_length(e));
        ASSERT_ERROR(EINVAL, tags_split("pool:a,,pool:b", &bad));
        ASSERT_ERROR(EINVAL, tags_split("pool:a,", &bad));
        ASSERT_ERROR(EINVAL, tags_split(",pool:a", &bad));
        /* a tag is KEY:VALUE */
        ASSERT_ERROR(EINVAL, tags_split("trusted", &bad));
        ASSERT_ERROR(EINVAL, tags_split("pool:", &bad));
        ASSERT_ERROR(EINVAL, tags_split(":trusted", &bad));
        ASSERT_ERROR(EINVAL, tags_split("Pool:trusted", &bad));
        ASSERT_ERROR(EINVAL, tags_split("tenant:-acme", &bad));
        ASSERT_ERROR(EINVAL, tags_split("tenant:a b", &bad));
        ASSERT_TRUE(bad == NULL);
        ASSERT_TRUE(tag_is_valid("zone:eu-west_1"));
        ASSERT_TRUE(!tag_is_valid("pool:trusted:x"));
}

/* The decision pond-run makes at acceptance: the tags dispatch-check requires, against the worker's own. */
static const char *missing_on(const char *block, const char *tenant, char *const *have, char **ret_error) {
        _cleanup_(policy_freep) Policy *p = load_from(POND_SOURCE_ROOT "/policy");
        _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL;
        _cleanup_(sandbox_block_done) SandboxBlock b = {};
        _cleanup_json_ json_object *o = parse(block);
        static char *keep[4];
        _cleanup_strv_free_ char **required = NULL;
        const char *m;

        if (!p || sandbox_block_from_json(o, "sandbox", &b, ret_error) < 0 ||
            policy_resolve(p, &b, &r, ret_error) < 0 || tags_required(r, &b, tenant, &required, ret_error) < 0)
                return "(refused)";
        m = tags_first_missing(required, have);
        free(keep[0]);
        keep[0] = m ? strdup(m) : NULL;
        return keep[0];
}

TEST(worker_default_tags) {
        static char *const defaults[] = { WORKER_TAGS_DEFAULT, NULL };
        AdmissionPolicy none = {};
        _cleanup_free_ char *err = NULL;

        /* a worker without "tags" takes what one worker took before any routing: trusted and any jobs */
        ASSERT_TRUE(missing_on(W "}", "local", admission_policy_tags(&none), NULL) == NULL);
        ASSERT_TRUE(missing_on("{\"profile\":\"none\"}", "local", defaults, NULL) == NULL);
        ASSERT_TRUE(missing_on(W ",\"tier\":\"any\"}", "local", defaults, NULL) == NULL);
        /* never a byo job */
        ASSERT_STREQ("pool:byo", missing_on(W ",\"tier\":\"byo\"}", "acme", defaults, NULL));
        /* a trusted-only worker refuses tier any, naming the tag */
        ASSERT_STREQ("pool:any", missing_on(W ",\"tier\":\"any\"}", "local",
                                            (char *const[]) { (char *) "pool:trusted", NULL }, NULL));
        /* a byo worker takes its own tenant's jobs only */
        ASSERT_STREQ("tenant:acme", missing_on(W ",\"tier\":\"byo\"}", "acme",
                                               (char *const[]) { (char *) "pool:byo", (char *) "tenant:beta", NULL },
                                               NULL));
        ASSERT_TRUE(missing_on(W ",\"tier\":\"byo\"}", "acme",
                               (char *const[]) { (char *) "pool:byo", (char *) "tenant:acme", NULL }, NULL) == NULL);
        /* a spec's tenant that cannot be a tag is refused for byo only */
        ASSERT_STREQ("(refused)", missing_on(W ",\"tier\":\"byo\"}", "a b", defaults, &err));
        ASSERT_CONTAINS("tenant: 'a b' must match", err);
        ASSERT_TRUE(missing_on(W "}", "a b", defaults, NULL) == NULL);
}

TEST(probe_tags_are_the_worker_default) {
        _cleanup_free_ char *why = NULL, *why2 = NULL;
        const char *probe = "{\"probe_version\":1,\"capabilities\":[\"sandbox.runc\",\"cgroup.cpu\","
                            "\"cgroup.memory\",\"cgroup.pids\",\"seccomp\",\"nftables\"],"
                            "\"tags\":[\"pool:trusted\"]}";

        /* without --worker-tags a probe's own tags decide */
        ASSERT_EQ(1, eligible(W "}", NULL, probe, NULL, NULL));
        ASSERT_EQ(0, eligible(W ",\"tier\":\"any\"}", NULL, probe, NULL, &why));
        ASSERT_CONTAINS("lacks tag 'pool:any' (it has: pool:trusted)", why);
        ASSERT_ERROR(EINVAL, eligible(W "}", NULL, "{\"probe_version\":1,\"capabilities\":[],\"tags\":[\"x\"]}",
                                      NULL, &why2));
        ASSERT_CONTAINS("tags[0] is not a tag", why2);
}

/* Loads a copy of policy/ with one edit to profiles.json: the policy, or NULL and *ret_error. */
static Policy *load_edited(const char *from, const char *to, char **ret_error) {
        char dir[] = "/tmp/pond-test-dispatch.XXXXXX", cmd[512];
        _cleanup_free_ char *buf = NULL, *edited = NULL;
        Policy *p = NULL;
        size_t len;
        char *at;
        FILE *f;

        *ret_error = NULL;
        if (!mkdtemp(dir))
                return NULL;
        if (read_full_file(POND_SOURCE_ROOT "/policy/profiles.json", 1 << 20, &buf, &len) >= 0 &&
            (at = strstr(buf, from)) &&
            asprintf(&edited, "%.*s%s%s", (int) (at - buf), buf, to, at + strlen(from)) >= 0) {
                snprintf(cmd, sizeof cmd, "%s/profiles.json", dir);
                if ((f = fopen(cmd, "we"))) {
                        fputs(edited, f);
                        fclose(f);
                }
                snprintf(cmd, sizeof cmd, "cp %s/policy/seccomp.json %s/", POND_SOURCE_ROOT, dir);
                if (system(cmd) == 0 && policy_load(dir, &p, ret_error) < 0)
                        p = NULL;
        }
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        (void) system(cmd);
        if (!p && !*ret_error)
                *ret_error = strdup("test setup failed");
        return p;
}

TEST(requires_is_validated) {
        static const struct {
                const char *to, *error;
        } cases[] = {
                { "", "profile none: requires" },
                { "\"requires\": [ \"sandbox.kata\" ],", "other than sandbox.*" },
                { "\"requires\": \"seccomp\",", "requires must be an array" },
                { "\"requires\": [ \"Seccomp!\" ],", "requires must be an array" },
                { "\"requires\": [ 7 ],", "requires must be an array" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *err = NULL;
                Policy *p = load_edited("\"requires\": [],", cases[i].to, &err);

                ASSERT_TRUE(p == NULL);
                ASSERT_CONTAINS(cases[i].error, err);
        }
}

/* byo is explicit only: a policy that made it a default still does not route there silently. */
TEST(byo_never_a_default) {
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
        _cleanup_free_ char *load_err = NULL, *err = NULL;
        _cleanup_(policy_freep) Policy *p =
                load_edited("\"default_tier\": \"any\"", "\"default_tier\": \"byo\"", &load_err);

        if (!p)
                TEST_FAIL_("edited policy refused: %s", load_err);
        err = check(p, "{\"profile\":\"none\"}", "acme", &d);
        ASSERT_CONTAINS("byo is never a default", err);
}

TEST(decision_json) {
        _cleanup_(policy_freep) Policy *p = load_from(POND_SOURCE_ROOT "/policy");
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        json_object *tags;

        ASSERT_TRUE(p != NULL);
        err = check(p, W ",\"tier\":\"byo\"}", "acme", &d);
        ASSERT_TRUE(err == NULL);
        ASSERT_OK(dispatch_decision_to_json(d, &o));
        ASSERT_STREQ("sandbox.runc",
                     json_object_get_string(json_object_object_get(o, "required_capability")));
        tags = json_object_object_get(o, "required_tags");
        ASSERT_EQ(2, json_object_array_length(tags));
        ASSERT_STREQ("pool:byo", json_object_get_string(json_object_array_get_idx(tags, 0)));
        ASSERT_STREQ("tenant:acme", json_object_get_string(json_object_array_get_idx(tags, 1)));
        ASSERT_TRUE(json_object_is_type(json_object_object_get(o, "sandbox_block"), json_type_object));
        ASSERT_TRUE(json_object_is_type(json_object_object_get(o, "required_capabilities"), json_type_array));
}

TEST_MAIN()
