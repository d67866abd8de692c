/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-broker-request.c: libFuzzer target for pond-broker's request handling: the request checks
 * (broker_check_request() with the input as method, raw URI and key header), the header filters, the
 * worst-case estimate of a request body, and the usage parser over JSON and SSE fed in input-chosen chunks.
 * No input may crash or read out of bounds; an accepted request must name a credential and a clean path. */
#include <stdint.h>

#include "broker-price.h"
#include "broker-request.h"
#include "broker-usage.h"
#include "sidecar/broker-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char config_text[] =
        "{\"job_id\": \"fuzz\", \"max_cost_cents\": 100, \"prices\": \"/dev/null\", \"credentials\": ["
        "{\"name\": \"anthropic\", \"upstream\": \"https://api.anthropic.com\", "
        "\"inject\": {\"header\": \"x-api-key\", \"format\": \"{key}\"}, "
        "\"allow\": [\"POST /v1/messages\", \"GET /v1/models\", \"GET /v1/models/*\"], "
        "\"dummy_key\": \"dummy-0123456789abcdef\", \"env\": {\"key\": \"A\", \"base_url\": \"B\"}},"
        "{\"name\": \"openai\", \"upstream\": \"https://api.openai.com\", "
        "\"inject\": {\"header\": \"authorization\", \"format\": \"Bearer {key}\"}, "
        "\"allow\": [\"POST /v1/chat/completions\"], "
        "\"dummy_key\": \"dummy-openai-012345678\", \"env\": {\"key\": \"C\", \"base_url\": \"D\"}}]}";
static const char prices_text[] =
        "{\"default\": {\"input\": 1500, \"output\": 7500}, \"models\": {\"claude-*\": {\"input\": 300, "
        "\"output\": 1500}}}";

static BrokerConfig config;
static BrokerPrices prices;

static const char *lookup(void *userdata, const char *name) {
        return userdata;
}

/* "METHOD\nURI\nKEY-HEADER-VALUE" */
static void check_request(const char *s) {
        char *copy = strdup(s), *uri, *key;
        const char *reason = NULL;
        BrokerRoute route = {};
        int status;

        if (!copy)
                return;
        uri = strchr(copy, '\n');
        key = uri ? strchr(uri + 1, '\n') : NULL;
        if (uri)
                *uri++ = 0;
        if (key)
                *key++ = 0;
        status = broker_check_request(&config, copy, uri, lookup, key, &route, &reason);
        if (status == 0 && (!route.cred || route.rest[0] != '/' || route.method < 0 ||
                            memmem(route.rest, route.path_len, "//", 2) || memmem(route.rest, route.path_len, "%", 1) ||
                            !broker_key_matches(route.cred, key)))
                abort();
        if (status != 0 && (!reason || status < 400 || status > 499))
                abort();
        (void) broker_request_header_forwardable(route.cred, copy);
        (void) broker_response_header_forwardable(copy);
        free(copy);
}

static void usage(const uint8_t *data, size_t size, bool sse) {
        BrokerUsageParser p;
        size_t step = size > 0 ? (size_t) data[0] % 64 + 1 : 1;

        broker_usage_parser_init(&p, sse);
        for (size_t i = 0; i < size; i += step)
                broker_usage_feed(&p, data + i, size - i < step ? size - i : step);
        broker_usage_finish(&p);
        if (p.usage.seen_output && !p.usage.seen)
                abort();
        broker_usage_parser_done(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static bool init;
        BrokerEstimate e;
        const char *reason;
        char *s;

        if (!init) {
                if (broker_config_parse(config_text, strlen(config_text), &config, NULL) < 0 ||
                    broker_prices_parse(prices_text, strlen(prices_text), &prices, NULL) < 0)
                        abort();
                init = true;
        }
        if (size < 1)
                return 0;
        switch (data[0] & 3) {
        case 0:
                s = strndup((const char *) data + 1, size - 1);
                if (s)
                        check_request(s);
                free(s);
                break;
        case 1:
                usage(data + 1, size - 1, true);
                break;
        case 2:
                usage(data + 1, size - 1, false);
                break;
        case 3:
                if (broker_estimate(&prices, (const char *) data + 1, size - 1, &e, &reason) == 0 &&
                    size > 1 && e.input_tokens == 0)
                        abort();
                break;
        }
        return 0;
}
