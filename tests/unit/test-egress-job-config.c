/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-egress-job-config.c: pond-egress's per-job configuration, the one parser the supervisor (at
 * acceptance, before writing it) and the proxy share: a good configuration loads; each malformed field
 * is refused naming it; the policy file's shape (allow_hosts, allowed_ports) fits it. */
#include "sidecar/egress-job-config.h"
#include "tests.h"

TEST_MAIN();

static int parse(const char *text, EgressJobConfig *c, char **error) {
        return egress_job_config_parse(text, strlen(text), c, error);
}

TEST(good) {
        EgressJobConfig c = {};

        ASSERT_OK(parse("{\"job_id\": \"j1\", \"listen\": \"10.203.0.1:3128\", \"allow_hosts\": "
                        "[\"Git.Example.net.\", \"*.example.org\"], \"allowed_ports\": [443, 8443], "
                        "\"allow_ip_literals\": false, \"stats_file\": \"/run/pond-egress/j1/stats.json\"}", &c, NULL));
        ASSERT_STREQ("j1", c.job_id);
        ASSERT_STREQ("10.203.0.1:3128", c.listen);
        ASSERT_EQ(2, egress_allow_size(&c.allow));
        ASSERT_TRUE(egress_allow_match(&c.allow, "git.example.net"));
        ASSERT_TRUE(egress_allow_match(&c.allow, "a.example.org"));
        ASSERT_FALSE(egress_allow_match(&c.allow, "example.org"));
        ASSERT_EQ(2, c.n_ports);
        ASSERT_EQ(8443, c.ports[1]);
        ASSERT_FALSE(c.allow_ip_literals);
        ASSERT_STREQ("/run/pond-egress/j1/stats.json", c.stats_file);
        egress_job_config_done(&c);
}

TEST(defaults) {
        EgressJobConfig c = {};

        /* As the supervisor checks it at acceptance: no listen address yet. */
        ASSERT_OK(parse("{\"job_id\": \"j1\"}", &c, NULL));
        ASSERT_TRUE(c.listen == NULL);
        ASSERT_EQ(1, c.n_ports);
        ASSERT_EQ(443, c.ports[0]);
        ASSERT_EQ(0, egress_allow_size(&c.allow));
        ASSERT_TRUE(c.stats_file == NULL);
        egress_job_config_done(&c);
}

TEST(refused) {
        static const struct {
                const char *text, *needle;
        } cases[] = {
                { "[]", "object" },
                { "{}", "job_id" },
                { "{\"job_id\": \"../x\"}", "job_id" },
                { "{\"job_id\": \"j\", \"job_id\": \"k\"}", "uplicate" },
                { "{\"job_id\": \"j\", \"comment\": \"x\"}", "comment" },
                { "{\"job_id\": \"j\", \"allow_hosts\": \"git.example.net\"}", "allow_hosts" },
                { "{\"job_id\": \"j\", \"allow_hosts\": [\"*.com\"]}", "*.com" },
                { "{\"job_id\": \"j\", \"allow_hosts\": [\"10.0.0.1\"]}", "10.0.0.1" },
                { "{\"job_id\": \"j\", \"allow_hosts\": [\"a b.example\"]}", "allow_hosts" },
                { "{\"job_id\": \"j\", \"allow_hosts\": [1]}", "allow_hosts" },
                { "{\"job_id\": \"j\", \"allowed_ports\": []}", "allowed_ports" },
                { "{\"job_id\": \"j\", \"allowed_ports\": [0]}", "allowed_ports" },
                { "{\"job_id\": \"j\", \"allowed_ports\": [65536]}", "allowed_ports" },
                { "{\"job_id\": \"j\", \"allowed_ports\": [\"443\"]}", "allowed_ports" },
                { "{\"job_id\": \"j\", \"allow_ip_literals\": 1}", "allow_ip_literals" },
                { "{\"job_id\": \"j\", \"listen\": \"\"}", "listen" },
                { "{\"job_id\": \"j\", \"stats_file\": \"stats.json\"}", "stats_file" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                EgressJobConfig c = { .n_ports = 7 };
                char *error = NULL;

                ASSERT_TRUE(parse(cases[i].text, &c, &error) < 0);
                ASSERT_CONTAINS(cases[i].needle, error);
                ASSERT_EQ(7, c.n_ports);        /* untouched on failure */
                free(error);
        }
}

TEST(too_many_ports) {
        char text[512] = "{\"job_id\": \"j\", \"allowed_ports\": [";
        char *error = NULL;
        EgressJobConfig c = {};

        for (int i = 0; i <= EGRESS_JOB_PORTS_MAX; i++)
                snprintf(text + strlen(text), sizeof text - strlen(text), "%s%d", i ? "," : "", 1000 + i);
        strcat(text, "]}");
        ASSERT_ERROR(EINVAL, parse(text, &c, &error));
        ASSERT_CONTAINS("allowed_ports", error);
        free(error);
}

/* What the supervisor builds from policy/egress.json (its allow_hosts and allowed_ports) must pass. */
TEST(policy_defaults_fit) {
        json_object *policy = json_object_from_file(POND_SOURCE_ROOT "/policy/egress.json"), *v;
        json_object *c = json_object_new_object();
        EgressJobConfig parsed = {};
        const char *text;

        ASSERT_TRUE(policy && c);
        json_object_object_add(c, "job_id", json_object_new_string("j1"));
        ASSERT_TRUE(json_object_object_get_ex(policy, "allow_hosts", &v));
        json_object_object_add(c, "allow_hosts", json_object_get(v));
        ASSERT_TRUE(json_object_object_get_ex(policy, "allowed_ports", &v));
        json_object_object_add(c, "allowed_ports", json_object_get(v));
        text = json_object_to_json_string(c);
        ASSERT_OK(parse(text, &parsed, NULL));
        ASSERT_TRUE(egress_allow_size(&parsed.allow) > 0);
        egress_job_config_done(&parsed);
        json_object_put(c);
        json_object_put(policy);
}
