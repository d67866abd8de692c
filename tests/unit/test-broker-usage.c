/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-broker-usage.c: usage metering of model API responses: Anthropic and OpenAI, JSON and SSE, fed
 * whole, byte by byte and in every two-way split; CRLF and CR line ends; oversized input. */
#include "basic/macro.h"
#include "broker-usage.h"
#include "tests.h"

TEST_MAIN();

static const char anthropic_sse[] =
        "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude\",\"usage\":"
        "{\"input_tokens\":25,\"cache_creation_input_tokens\":3,\"cache_read_input_tokens\":2,\"output_tokens\":1}}}\n"
        "\n"
        "event: ping\n"
        "data: {\"type\": \"ping\"}\n"
        "\n"
        "event: content_block_delta\n"
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"usage\"}}\n"
        "\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n"
        "\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n"
        "\n";

static const char openai_sse[] =
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],"
        "\"usage\":null}\r\n\r\n"
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":"
        "{\"prompt_tokens\":9,\"completion_tokens\":12,\"total_tokens\":21}}\r\n\r\n"
        "data: [DONE]\r\n\r\n";

static BrokerUsage run(bool sse, const char *text, size_t split, bool bytewise, bool *ret_overflow) {
        BrokerUsageParser p;
        size_t n = strlen(text);
        BrokerUsage u;

        broker_usage_parser_init(&p, sse);
        if (bytewise)
                for (size_t i = 0; i < n; i++)
                        broker_usage_feed(&p, text + i, 1);
        else {
                broker_usage_feed(&p, text, split);
                broker_usage_feed(&p, text + split, n - split);
        }
        broker_usage_finish(&p);
        u = p.usage;
        if (ret_overflow)
                *ret_overflow = p.overflow;
        broker_usage_parser_done(&p);
        return u;
}

TEST(anthropic_json) {
        BrokerUsage u = run(false, "{\"id\":\"m\",\"type\":\"message\",\"content\":[],\"usage\":"
                            "{\"input_tokens\":10,\"output_tokens\":20}}", 7, false, NULL);
        ASSERT_TRUE(u.seen_output);
        ASSERT_EQ(10, broker_usage_input_total(&u));
        ASSERT_EQ(20, u.output_tokens);
}

TEST(openai_json) {
        BrokerUsage u = run(false, "{\"object\":\"chat.completion\",\"usage\":{\"prompt_tokens\":5,"
                            "\"completion_tokens\":6,\"total_tokens\":11}}", 0, false, NULL);
        ASSERT_EQ(5, u.input_tokens);
        ASSERT_EQ(6, u.output_tokens);
}

TEST(anthropic_sse_every_split) {
        for (size_t split = 0; split <= strlen(anthropic_sse); split++) {
                BrokerUsage u = run(true, anthropic_sse, split, false, NULL);
                ASSERT_EQ(30, broker_usage_input_total(&u));
                ASSERT_EQ(15, u.output_tokens);
        }
        BrokerUsage b = run(true, anthropic_sse, 0, true, NULL);
        ASSERT_EQ(15, b.output_tokens);
}

TEST(openai_sse_crlf_every_split) {
        for (size_t split = 0; split <= strlen(openai_sse); split++) {
                BrokerUsage u = run(true, openai_sse, split, false, NULL);
                ASSERT_EQ(9, u.input_tokens);
                ASSERT_EQ(12, u.output_tokens);
        }
}

TEST(sse_cr_only_and_no_final_blank) {
        BrokerUsage u = run(true, "data: {\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}\r\r"
                            "data: {\"usage\":\r", 0, true, NULL);
        ASSERT_EQ(2, u.output_tokens);
        u = run(true, "data:{\"usage\":{\"output_tokens\":7}}", 0, false, NULL);   /* finish() dispatches */
        ASSERT_EQ(7, u.output_tokens);
}

TEST(sse_multiline_data_and_responses_api) {
        BrokerUsage u = run(true, "event: response.completed\ndata: {\"type\":\"response.completed\",\n"
                            "data: \"response\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":8}}}\n\n",
                            10, false, NULL);
        ASSERT_EQ(4, u.input_tokens);
        ASSERT_EQ(8, u.output_tokens);
}

TEST(no_usage_and_garbage) {
        bool overflow;
        BrokerUsage u = run(true, "data: not json\n\ndata: {\"usage\": \"x\"}\n\ndata: {\"usage\":"
                            "{\"output_tokens\": -5}}\n\n: comment\n\n", 3, false, &overflow);
        ASSERT_FALSE(u.seen);
        ASSERT_FALSE(overflow);
        u = run(false, "[1,2,3]", 1, false, NULL);
        ASSERT_FALSE(u.seen);
}

TEST(overflow) {
        size_t n = BROKER_USAGE_EVENT_MAX + 100;
        char *big = malloc(n + 64);
        bool overflow;

        ASSERT_TRUE(big != NULL);
        memcpy(big, "data: ", 6);
        memset(big + 6, 'a', n);
        strcpy(big + 6 + n, "\n\ndata: {\"usage\":{\"output_tokens\":3}}\n\n");
        BrokerUsage u = run(true, big, 1000, false, &overflow);
        ASSERT_TRUE(overflow);
        ASSERT_EQ(3, u.output_tokens);  /* the stream goes on being read after a line it had to skip */
        free(big);
}
