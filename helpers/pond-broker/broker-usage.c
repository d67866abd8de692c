/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-usage.c: incremental usage metering of model API responses (see broker-usage.h). Upstream
 * bodies are parsed with json-c's tokener under a depth cap; each SSE event is parsed on its own as it
 * completes, so a stream is metered while it passes, in bounded memory. */
#include <json-c/json.h>

#include "basic/macro.h"
#include "broker-usage.h"

#define JSON_DEPTH 32

void broker_usage_parser_init(BrokerUsageParser *p, bool sse) {
        *p = (BrokerUsageParser) { .sse = sse };
}

void broker_usage_parser_done(BrokerUsageParser *p) {
        free(p->buf);
        free(p->data);
        *p = (BrokerUsageParser) {};
}

uint64_t broker_usage_input_total(const BrokerUsage *u) {
        return u->input_tokens + u->cache_creation_tokens + u->cache_read_tokens;
}

/* Appends to a growing buffer capped at max; false (nothing appended) past it. */
static bool append(char **buf, size_t *len, size_t *cap, size_t max, const char *d, size_t n) {
        if (n > max || *len > max - n)
                return false;
        if (*len + n + 1 > *cap) {
                size_t c = MAX(*cap * 2, *len + n + 1);
                char *b = realloc(*buf, MIN(c, max + 1));
                if (!b)
                        return false;
                *buf = b;
                *cap = MIN(c, max + 1);
        }
        memcpy(*buf + *len, d, n);
        *len += n;
        (*buf)[*len] = 0;
        return true;
}

static void take_max(json_object *usage, const char *key, uint64_t *field, bool *found) {
        json_object *v;
        int64_t i;

        if (!json_object_object_get_ex(usage, key, &v) || !json_object_is_type(v, json_type_int))
                return;
        i = json_object_get_int64(v);
        if (i < 0 || i > (int64_t) 1 << 40)
                return;
        *found = true;
        if ((uint64_t) i > *field)
                *field = (uint64_t) i;
}

static bool merge_usage_object(BrokerUsage *u, json_object *usage) {
        bool found = false, out = false;

        if (!json_object_is_type(usage, json_type_object))
                return false;
        take_max(usage, "input_tokens", &u->input_tokens, &found);
        take_max(usage, "prompt_tokens", &u->input_tokens, &found);
        take_max(usage, "cache_creation_input_tokens", &u->cache_creation_tokens, &found);
        take_max(usage, "cache_read_input_tokens", &u->cache_read_tokens, &found);
        take_max(usage, "output_tokens", &u->output_tokens, &out);
        take_max(usage, "completion_tokens", &u->output_tokens, &out);
        u->seen = u->seen || found || out;
        u->seen_output = u->seen_output || out;
        return found || out;
}

bool broker_usage_merge_json(BrokerUsage *u, const char *text, size_t len) {
        static const char *const holders[] = { "message", "response" };
        json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
        json_object *o, *v, *usage;
        bool found = false;

        if (!tok)
                return false;
        o = json_tokener_parse_ex(tok, text, (int) MIN(len, (size_t) INT32_MAX));
        if (o && json_object_is_type(o, json_type_object)) {
                if (json_object_object_get_ex(o, "usage", &usage))
                        found = merge_usage_object(u, usage) || found;
                for (size_t i = 0; i < ELEMENTSOF(holders); i++)
                        if (json_object_object_get_ex(o, holders[i], &v) &&
                            json_object_is_type(v, json_type_object) &&
                            json_object_object_get_ex(v, "usage", &usage))
                                found = merge_usage_object(u, usage) || found;
        }
        json_object_put(o);
        json_tokener_free(tok);
        return found;
}

static void dispatch_event(BrokerUsageParser *p) {
        if (p->data_present && p->data_len > 0 && !(p->data_len == 6 && memcmp(p->data, "[DONE]", 6) == 0))
                (void) broker_usage_merge_json(&p->usage, p->data, p->data_len);
        p->data_len = 0;
        p->data_present = false;
}

/* One complete line of the event stream (without its terminator). */
static void sse_line(BrokerUsageParser *p, const char *line, size_t n) {
        if (n == 0)
                return dispatch_event(p);
        if (n < 5 || memcmp(line, "data", 4) != 0 || (n > 4 && line[4] != ':'))
                return;   /* event:, id:, retry:, comments and other fields carry no usage */
        line += 5, n -= 5;
        if (n > 0 && line[0] == ' ')
                line++, n--;
        if ((p->data_present && !append(&p->data, &p->data_len, &p->data_cap, BROKER_USAGE_EVENT_MAX, "\n", 1)) ||
            !append(&p->data, &p->data_len, &p->data_cap, BROKER_USAGE_EVENT_MAX, line, n))
                p->overflow = true;
        p->data_present = true;
}

static void line_end(BrokerUsageParser *p) {
        if (p->line_overflow)
                p->overflow = true;
        else
                sse_line(p, p->buf ?: "", p->len);
        p->len = 0;
        p->line_overflow = false;
}

/* Lines end in LF, CRLF or CR (the SSE grammar); a CRLF may be split across two chunks. */
static void sse_feed(BrokerUsageParser *p, const char *d, size_t n) {
        size_t i = 0;

        while (i < n) {
                size_t l = 0;

                if (p->after_cr) {
                        p->after_cr = false;
                        if (d[i] == '\n') {
                                i++;
                                continue;
                        }
                }
                while (i + l < n && d[i + l] != '\n' && d[i + l] != '\r')
                        l++;
                if (!p->line_overflow && !append(&p->buf, &p->len, &p->cap, BROKER_USAGE_EVENT_MAX, d + i, l))
                        p->line_overflow = true;
                i += l;
                if (i == n)
                        return;
                p->after_cr = d[i] == '\r';
                i++;
                line_end(p);
        }
}

void broker_usage_feed(BrokerUsageParser *p, const void *data, size_t len) {
        if (p->sse)
                sse_feed(p, data, len);
        else if (!p->overflow && !append(&p->buf, &p->len, &p->cap, BROKER_USAGE_JSON_MAX, data, len))
                p->overflow = true;
}

void broker_usage_finish(BrokerUsageParser *p) {
        if (!p->sse) {
                if (!p->overflow && p->len > 0)
                        (void) broker_usage_merge_json(&p->usage, p->buf, p->len);
                return;
        }
        if (p->len > 0 || p->line_overflow)
                line_end(p);
        dispatch_event(p);
}
