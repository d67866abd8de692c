/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-broker-price.c: the price table, a request's worst case, charges, and the budget's ceiling
 * decisions (refused before crossing, busy next to requests in flight, refused for good after). */
#include "basic/macro.h"
#include "broker-price.h"
#include "tests.h"

TEST_MAIN();

#define TABLE "{\"unit\": \"x\", \"input_bytes_per_token\": 2, \"input_overhead_tokens\": 10, " \
              "\"default_max_output_tokens\": 1000, \"default\": {\"input\": 1000, \"output\": 5000}, " \
              "\"models\": {\"m-exact\": {\"input\": 300, \"output\": 1500}, "                        \
              "\"m-*\": {\"input\": 7.5, \"output\": 30}, "                                             \
              "\"m-long*\": {\"input\": 1, \"output\": 2}}}"

static int load(BrokerPrices *p, const char *text, char **error) {
        return broker_prices_parse(text, strlen(text), p, error);
}

TEST(table) {
        BrokerPrices p;

        ASSERT_OK(load(&p, TABLE, NULL));
        ASSERT_EQ(300000, broker_prices_find(&p, "m-exact")->input);
        ASSERT_EQ(7500, broker_prices_find(&p, "m-other")->input);
        ASSERT_EQ(1000, broker_prices_find(&p, "m-longer")->input);    /* the longest prefix wins */
        ASSERT_EQ(1000000, broker_prices_find(&p, "unknown")->input);
        ASSERT_EQ(1000000, broker_prices_find(&p, "")->input);
        /* 1000 tokens at 3 $/M = 0.3 cents; 2000 at 15 $/M = 3 cents */
        ASSERT_EQ(UINT64_C(3300000000), broker_cost(broker_prices_find(&p, "m-exact"), 1000, 2000));
        broker_prices_done(&p);
}

TEST(table_refused) {
        static const char *const bad[] = {
                "{\"models\": {}}",
                "{\"default\": {\"input\": 1, \"output\": 1}, \"models\": {\"a\": {\"input\": -1, \"output\": 1}}}",
                "{\"default\": {\"input\": 1, \"output\": 1}, \"models\": {\"a\": {\"input\": 1}}}",
                "{\"default\": {\"input\": 1, \"output\": 1}, \"models\": {\"a*b\": {\"input\": 1, \"output\": 1}}}",
                "{\"default\": {\"input\": 1, \"output\": 1e9}, \"models\": {}}",
                "{\"default\": {\"input\": 1, \"output\": 1}, \"models\": {}, \"input_bytes_per_token\": 0}",
                "{\"default\": {\"input\": 1, \"output\": 1}, \"models\": {}, \"surprise\": 1}",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                BrokerPrices p;
                char *error = NULL;
                ASSERT_ERROR(EINVAL, load(&p, bad[i], &error));
                ASSERT_CONTAINS("prices", error);
                free(error);
        }
}

TEST(policy_table_loads) {
        BrokerPrices p;
        char *error = NULL;

        ASSERT_OK(broker_prices_load(POND_SOURCE_ROOT "/policy/prices.json", &p, &error));
        ASSERT_TRUE(p.n_prices > 0);
        ASSERT_EQ(300000, broker_prices_find(&p, "claude-sonnet-4-5-20250929")->input);
        ASSERT_EQ(15000, broker_prices_find(&p, "gpt-4o-mini-2024-07-18")->input);
        broker_prices_done(&p);
}

TEST(estimate) {
        const char *body = "{\"model\": \"m-exact\", \"max_tokens\": 100, \"messages\": []}";
        const char *reason = NULL;
        BrokerEstimate e;
        BrokerPrices p;

        ASSERT_OK(load(&p, TABLE, NULL));
        ASSERT_OK(broker_estimate(&p, NULL, 0, &e, &reason));
        ASSERT_EQ(0, e.cost);
        ASSERT_OK(broker_estimate(&p, body, strlen(body), &e, &reason));
        ASSERT_STREQ("m-exact", e.model);
        ASSERT_EQ(100, e.output_tokens);
        ASSERT_EQ((strlen(body) + 1) / 2 + 10, e.input_tokens);
        ASSERT_EQ(broker_cost(broker_prices_find(&p, "m-exact"), e.input_tokens, 100), e.cost);
        body = "{\"model\": \"x\", \"max_completion_tokens\": 50, \"max_tokens\": 70, \"n\": 3}";
        ASSERT_OK(broker_estimate(&p, body, strlen(body), &e, &reason));
        ASSERT_EQ(210, e.output_tokens);
        body = "{\"model\": \"x\"}";
        ASSERT_OK(broker_estimate(&p, body, strlen(body), &e, &reason));
        ASSERT_EQ(1000, e.output_tokens);      /* the table's default */
        body = "{\"model\": \"x\", \"max_tokens\": 1, \"max_tokens\": 100000}";
        ASSERT_ERROR(EINVAL, broker_estimate(&p, body, strlen(body), &e, &reason));
        ASSERT_CONTAINS("duplicate", reason);
        body = "{\"max_tokens\": \"5\"}";
        ASSERT_ERROR(EINVAL, broker_estimate(&p, body, strlen(body), &e, &reason));
        body = "{\"max_tokens\": 0}";
        ASSERT_ERROR(EINVAL, broker_estimate(&p, body, strlen(body), &e, &reason));
        body = "{\"model\": 5}";
        ASSERT_ERROR(EINVAL, broker_estimate(&p, body, strlen(body), &e, &reason));
        body = "[]";
        ASSERT_ERROR(EINVAL, broker_estimate(&p, body, strlen(body), &e, &reason));
        broker_prices_done(&p);
}

TEST(charge) {
        BrokerEstimate e = { .model = "m-exact", .input_tokens = 1000, .output_tokens = 1000, .cost = 1000000 };
        BrokerUsageParser u;
        BrokerPrices p;

        ASSERT_OK(load(&p, TABLE, NULL));
        broker_usage_parser_init(&u, false);
        /* Completed with usage: the usage. */
        u.usage = (BrokerUsage) { .input_tokens = 10, .output_tokens = 20, .seen = true, .seen_output = true };
        ASSERT_EQ(broker_cost(broker_prices_find(&p, "m-exact"), 10, 20), broker_charge(&p, &e, 200, true, true, &u));
        /* Cut short, or no usage in a 2xx: the worst case. */
        ASSERT_EQ(1000000, broker_charge(&p, &e, 200, false, true, &u));
        u.usage = (BrokerUsage) {};
        ASSERT_EQ(1000000, broker_charge(&p, &e, 200, true, true, &u));
        /* An error status without usage: nothing; no status and maybe billed: the worst case. */
        ASSERT_EQ(0, broker_charge(&p, &e, 400, true, true, &u));
        ASSERT_EQ(1000000, broker_charge(&p, &e, 0, false, true, &u));
        ASSERT_EQ(0, broker_charge(&p, &e, 0, false, false, &u));
        broker_usage_parser_done(&u);
        broker_prices_done(&p);
}

TEST(budget) {
        const uint64_t cent = BROKER_NANOCENTS_PER_CENT;
        BrokerBudget b;
        bool newly;

        broker_budget_init(&b, 10);
        ASSERT_EQ(BROKER_BUDGET_OK, broker_budget_reserve(&b, 4 * cent, &newly));
        ASSERT_FALSE(newly);
        ASSERT_EQ(BROKER_BUDGET_OK, broker_budget_reserve(&b, 4 * cent, &newly));
        /* Fits the budget, not next to the 8 cents in flight: busy, not the ceiling. */
        ASSERT_EQ(BROKER_BUDGET_BUSY, broker_budget_reserve(&b, 3 * cent, &newly));
        ASSERT_FALSE(newly);
        ASSERT_FALSE(broker_budget_settle(&b, 4 * cent, 1 * cent));
        ASSERT_FALSE(broker_budget_settle(&b, 4 * cent, 2 * cent));
        ASSERT_EQ(3 * cent, b.spent);
        ASSERT_EQ(0, b.reserved);
        /* Exactly to the ceiling is allowed; one nanocent more is not. */
        ASSERT_EQ(BROKER_BUDGET_REFUSED, broker_budget_reserve(&b, 7 * cent + 1, &newly));
        ASSERT_TRUE(newly);
        ASSERT_TRUE(b.ceiling_hit);
        ASSERT_EQ(BROKER_BUDGET_REFUSED, broker_budget_reserve(&b, 0, &newly));
        ASSERT_FALSE(newly);
        ASSERT_EQ(3 * cent, b.spent);   /* never crossed */

        broker_budget_init(&b, 10);
        ASSERT_EQ(BROKER_BUDGET_OK, broker_budget_reserve(&b, 10 * cent, &newly));
        ASSERT_TRUE(broker_budget_settle(&b, 10 * cent, 10 * cent));   /* spent it all: ceiling */
        ASSERT_EQ(BROKER_BUDGET_REFUSED, broker_budget_reserve(&b, 0, &newly));

        broker_budget_init(&b, 0);
        ASSERT_EQ(BROKER_BUDGET_OK, broker_budget_reserve(&b, 0, &newly));   /* free calls, e.g. GET /v1/models */
        ASSERT_EQ(BROKER_BUDGET_REFUSED, broker_budget_reserve(&b, 1, &newly));
}
