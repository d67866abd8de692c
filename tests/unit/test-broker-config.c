/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-broker-config.c: pond-broker's configuration parser and request checks: a good configuration
 * loads; each malformed field is refused naming it; routing, dummy-key, allowlist and header rules. */
#include "broker-request.h"
#include "sidecar/broker-config.h"
#include "tests.h"

TEST_MAIN();

#define CRED(name, upstream, inject, allow, dummy)                                                   \
        "{\"name\": \"" name "\", \"upstream\": \"" upstream "\", \"inject\": " inject ", \"allow\": " \
        allow ", \"dummy_key\": \"" dummy "\", \"env\": {\"key\": \"K\", \"base_url\": \"U\"}}"
#define ANTHROPIC CRED("anthropic", "https://api.anthropic.com",                                    \
                       "{\"header\": \"x-api-key\", \"format\": \"{key}\"}",                            \
                       "[\"POST /v1/messages\", \"GET /v1/models\", \"GET /v1/models/*\"]", "dummy-0123456789abcdef")
#define OPENAI CRED("openai", "https://api.openai.com/",                                            \
                    "{\"header\": \"Authorization\", \"format\": \"Bearer {key}\"}",                     \
                    "[\"POST /v1/chat/completions\"]", "dummy-openai-0123456789")
#define CONFIG(creds) "{\"job_id\": \"j1\", \"listen\": \"10.0.0.1:8080\", \"max_cost_cents\": 500, " \
                      "\"prices\": \"/p.json\", \"credentials\": [" creds "]}"

static int parse(const char *text, BrokerConfig *c, char **error) {
        return broker_config_parse(text, strlen(text), c, error);
}

TEST(good) {
        BrokerConfig c = {};
        char *error = NULL;

        ASSERT_OK(parse(CONFIG(ANTHROPIC "," OPENAI), &c, &error));
        ASSERT_EQ(2, c.n_credentials);
        ASSERT_STREQ("https://api.openai.com", c.credentials[1].upstream);   /* trailing slash trimmed */
        ASSERT_STREQ("authorization", c.credentials[1].inject_header);
        ASSERT_STREQ("Bearer dummy-openai-0123456789", c.credentials[1].dummy_presented);
        ASSERT_EQ(3, c.credentials[0].n_rules);
        ASSERT_TRUE(c.credentials[0].rules[2].prefix);
        ASSERT_STREQ("/v1/models/", c.credentials[0].rules[2].path);
        ASSERT_EQ(8 << 20, c.max_request_bytes);
        ASSERT_ERROR(ENOKEY, broker_config_check_secrets(&c, &error));
        ASSERT_CONTAINS("anthropic", error);
        ASSERT_ERROR(EINVAL, broker_credential_set_secret(&c.credentials[0], "has space", 9));
        ASSERT_OK(broker_credential_set_secret(&c.credentials[0], "sk-real", 7));
        ASSERT_ERROR(EEXIST, broker_credential_set_secret(&c.credentials[0], "sk-real", 7));
        ASSERT_OK(broker_credential_set_secret(&c.credentials[1], "sk-real2", 8));
        ASSERT_OK(broker_config_check_secrets(&c, NULL));
        broker_config_done(&c);
        free(error);
}

TEST(refused) {
        static const struct {
                const char *text, *needle;
        } cases[] = {
                { CONFIG(CRED("anthropic", "http://api.anthropic.com", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"GET /\"]", "dummy-0123456789abcdef")), "https" },
                { CONFIG(CRED("a", "https://user@h.example", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"GET /\"]", "dummy-0123456789abcdef")), "upstream" },
                { CONFIG(CRED("a", "https://h.example?q=1", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"GET /\"]", "dummy-0123456789abcdef")), "upstream" },
                { CONFIG(CRED("A", "https://h.example", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"GET /\"]", "dummy-0123456789abcdef")), "name" },
                { CONFIG(CRED("a", "https://h.example", "{\"header\": \"x\", \"format\": \"key\"}",
                              "[\"GET /\"]", "dummy-0123456789abcdef")), "inject.format" },
                { CONFIG(CRED("a", "https://h.example", "{\"header\": \"host\", \"format\": \"{key}\"}",
                              "[\"GET /\"]", "dummy-0123456789abcdef")), "inject.header" },
                { CONFIG(CRED("a", "https://h.example", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"TRACE /\"]", "dummy-0123456789abcdef")), "method" },
                { CONFIG(CRED("a", "https://h.example", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"GET /a/../b\"]", "dummy-0123456789abcdef")), "path" },
                { CONFIG(CRED("a", "https://h.example", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"GET /a*\"]", "dummy-0123456789abcdef")), "path" },
                { CONFIG(CRED("a", "https://h.example", "{\"header\": \"x\", \"format\": \"{key}\"}",
                              "[\"GET /\"]", "short")), "dummy_key" },
                { CONFIG(ANTHROPIC "," ANTHROPIC), "twice" },
                { "{\"job_id\": \"j1\", \"max_cost_cents\": 5, \"prices\": \"/p\", \"credentials\": [" ANTHROPIC
                  "], \"extra\": 1}", "extra" },
                { "{\"job_id\": \"../x\", \"max_cost_cents\": 5, \"prices\": \"/p\", \"credentials\": [" ANTHROPIC
                  "]}", "job_id" },
                { "{\"job_id\": \"j\", \"prices\": \"/p\", \"credentials\": [" ANTHROPIC "]}", "max_cost_cents" },
                { "{\"job_id\": \"j\", \"max_cost_cents\": -1, \"prices\": \"/p\", \"credentials\": [" ANTHROPIC
                  "]}", "max_cost_cents" },
                { "{\"job_id\": \"j\", \"max_cost_cents\": 1, \"prices\": \"/p\", \"credentials\": []}",
                  "credentials" },
                { "{\"job_id\": \"j\", \"job_id\": \"k\"}", "uplicate" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                BrokerConfig c = {};
                char *error = NULL;
                int r = parse(cases[i].text, &c, &error);
                if (r != -EINVAL)
                        printf("# case %zu\n", i);
                ASSERT_ERROR(EINVAL, r);
                ASSERT_CONTAINS(cases[i].needle, error);
                ASSERT_EQ(0, c.n_credentials);
                free(error);
        }
}

static const char *lookup(void *userdata, const char *name) {
        const char *const *h = userdata;
        return strcasecmp(name, h[0]) == 0 ? h[1] : NULL;
}

TEST(check_request) {
        static const struct {
                const char *method, *uri, *header, *value;
                int status;
        } cases[] = {
                { "POST", "/anthropic/v1/messages", "x-api-key", "dummy-0123456789abcdef", 0 },
                { "POST", "/anthropic/v1/messages?beta=true", "X-Api-Key", "dummy-0123456789abcdef", 0 },
                { "GET", "/anthropic/v1/models/claude-x", "x-api-key", "dummy-0123456789abcdef", 0 },
                { "GET", "/anthropic/v1/models", "x-api-key", "dummy-0123456789abcdef", 0 },
                { "GET", "/anthropic/v1/models/", "x-api-key", "dummy-0123456789abcdef", 403 },
                { "POST", "/anthropic/v1/messages/", "x-api-key", "dummy-0123456789abcdef", 403 },
                { "POST", "/anthropic/v1/messages", "x-api-key", "dummy-0123456789abcdeF", 401 },
                { "POST", "/anthropic/v1/messages", "x-api-key", "dummy-0123456789abcde", 401 },
                { "POST", "/anthropic/v1/messages", "authorization", "Bearer dummy-0123456789abcdef", 401 },
                { "GET", "/anthropic/v1/messages", "x-api-key", "dummy-0123456789abcdef", 403 },
                { "PROPFIND", "/anthropic/v1/messages", "x-api-key", "dummy-0123456789abcdef", 405 },
                { "POST", "/anthropic/v1/./messages", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/anthropic/v1/x/../messages", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/anthropic//v1/messages", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/anthropic/v1/%6dessages", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/anthropic", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/anthropic?x", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/anthropic/v1/messages?a=<b>", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/other/v1/messages", "x-api-key", "dummy-0123456789abcdef", 404 },
                { "POST", "http://h/anthropic/v1/messages", "x-api-key", "dummy-0123456789abcdef", 400 },
                { "POST", "/openai/v1/chat/completions", "authorization", "Bearer dummy-openai-0123456789", 0 },
                { "POST", "/openai/v1/chat/completions", "authorization", "dummy-openai-0123456789", 401 },
        };
        BrokerConfig c = {};

        ASSERT_OK(parse(CONFIG(ANTHROPIC "," OPENAI), &c, NULL));
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *h[2] = { cases[i].header, cases[i].value }, *reason = NULL;
                BrokerRoute route = {};
                int s = broker_check_request(&c, cases[i].method, cases[i].uri, lookup, h, &route, &reason);
                if (s != cases[i].status)
                        printf("# case %zu: %s %s\n", i, cases[i].method, cases[i].uri);
                ASSERT_EQ(cases[i].status, s);
                ASSERT_TRUE(s == 0 ? route.cred != NULL : reason != NULL);
        }
        broker_config_done(&c);
}

TEST(headers) {
        BrokerConfig c = {};

        ASSERT_OK(parse(CONFIG(ANTHROPIC "," OPENAI), &c, NULL));
        ASSERT_TRUE(broker_request_header_forwardable(&c.credentials[0], "anthropic-version"));
        ASSERT_TRUE(broker_request_header_forwardable(&c.credentials[0], "Content-Type"));
        ASSERT_FALSE(broker_request_header_forwardable(&c.credentials[0], "X-API-Key"));
        ASSERT_FALSE(broker_request_header_forwardable(&c.credentials[0], "Authorization"));
        ASSERT_FALSE(broker_request_header_forwardable(&c.credentials[0], "Host"));
        ASSERT_FALSE(broker_request_header_forwardable(&c.credentials[0], "Connection"));
        ASSERT_FALSE(broker_request_header_forwardable(&c.credentials[0], "Transfer-Encoding"));
        ASSERT_FALSE(broker_request_header_forwardable(&c.credentials[0], "Accept-Encoding"));
        ASSERT_FALSE(broker_request_header_forwardable(&c.credentials[1], "authorization"));
        ASSERT_TRUE(broker_response_header_forwardable("Content-Type"));
        ASSERT_TRUE(broker_response_header_forwardable("anthropic-ratelimit-requests-limit"));
        ASSERT_TRUE(broker_response_header_forwardable("x-ratelimit-remaining-tokens"));
        ASSERT_FALSE(broker_response_header_forwardable("Set-Cookie"));
        ASSERT_FALSE(broker_response_header_forwardable("Content-Length"));
        ASSERT_FALSE(broker_response_header_forwardable("Location"));
        broker_config_done(&c);
}
