/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-usage.h: token usage read from model API responses as they stream through pond-broker:
 * a JSON body (Anthropic "usage": {input_tokens, output_tokens}, OpenAI "usage": {prompt_tokens,
 * completion_tokens}) or server-sent events (Anthropic message_start/message_delta, OpenAI's final chunk
 * with stream_options.include_usage, Responses API response.completed), fed in arbitrary chunks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BROKER_USAGE_JSON_MAX (4 << 20)   /* a JSON body larger than this is not metered (charged worst case) */
#define BROKER_USAGE_EVENT_MAX (1 << 20)  /* one SSE event's data */

typedef struct BrokerUsage {
        /* Each the largest value seen: the APIs report running totals. */
        uint64_t input_tokens;          /* input_tokens | prompt_tokens */
        uint64_t cache_creation_tokens; /* cache_creation_input_tokens (Anthropic) */
        uint64_t cache_read_tokens;     /* cache_read_input_tokens (Anthropic) */
        uint64_t output_tokens;         /* output_tokens | completion_tokens */
        bool seen;                      /* some usage object was found */
        bool seen_output;
} BrokerUsage;

typedef struct BrokerUsageParser {
        bool sse;
        bool overflow;          /* some input could not be examined: the usage is a lower bound */
        char *buf;              /* JSON: the body; SSE: the current line */
        size_t len, cap;
        char *data;             /* SSE: the current event's data lines joined by "\n" */
        size_t data_len, data_cap;
        bool data_present;
        bool after_cr;          /* the last chunk ended in CR: a following LF belongs to it */
        bool line_overflow;     /* the current line is too long: skipped up to its end */
        BrokerUsage usage;
} BrokerUsageParser;

void broker_usage_parser_init(BrokerUsageParser *p, bool sse);
void broker_usage_parser_done(BrokerUsageParser *p);
/* Never fails: what cannot be examined sets overflow. */
void broker_usage_feed(BrokerUsageParser *p, const void *data, size_t len);
/* End of the body: parses the JSON body, or dispatches a last SSE event not followed by a blank line. */
void broker_usage_finish(BrokerUsageParser *p);

uint64_t broker_usage_input_total(const BrokerUsage *u);

/* One JSON document's usage merged into u (exported for tests): looks at .usage, .message.usage and
 * .response.usage. Returns true if one was found. */
bool broker_usage_merge_json(BrokerUsage *u, const char *text, size_t len);
