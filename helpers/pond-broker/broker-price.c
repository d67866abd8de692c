/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-price.c: price table, worst-case estimates, charges and the job budget (see broker-price.h). */
#include <math.h>

#include "basic/errmsg.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "broker-price.h"

#define PRICE_MAX_CENTS 100000.0  /* per million tokens: far above any real model, bounds the arithmetic */

static uint64_t sat_mul(uint64_t a, uint64_t b) {
        uint64_t r;
        return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int parse_price(json_object *o, const char *what, BrokerPrice *ret, char **ret_error) {
        json_object *in, *out;
        double i, x;

        in = json_get(o, "input");
        out = json_get(o, "output");
        if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != 2 ||
            !(json_object_is_type(in, json_type_int) || json_object_is_type(in, json_type_double)) ||
            !(json_object_is_type(out, json_type_int) || json_object_is_type(out, json_type_double)))
                return error_set(ret_error, -EINVAL, "prices: '%s' must be {\"input\": N, \"output\": N} (cents per "
                                 "million tokens).", what);
        i = json_object_get_double(in);
        x = json_object_get_double(out);
        if (!(i >= 0 && i <= PRICE_MAX_CENTS && x >= 0 && x <= PRICE_MAX_CENTS))
                return error_set(ret_error, -EINVAL, "prices: '%s': prices must be 0..%.0f cents per million tokens.",
                                 what, PRICE_MAX_CENTS);
        ret->input = (uint64_t) llround(i * 1000);
        ret->output = (uint64_t) llround(x * 1000);
        return 0;
}

static int parse_models(json_object *models, const char *field, void *userdata, char **ret_error) {
        BrokerPrices *p = userdata;
        int r;

        if (!json_object_is_type(models, json_type_object) || json_object_object_length(models) > BROKER_PRICES_MAX)
                return error_set(ret_error, -EINVAL, "prices: 'models' must be an object of at most %d entries.",
                                 BROKER_PRICES_MAX);
        json_object_object_foreach(models, name, price) {
                BrokerPrice *e = &p->prices[p->n_prices];
                size_t n = strlen(name);
                if (n == 0 || n >= BROKER_MODEL_MAX || (strchr(name, '*') && strchr(name, '*') != name + n - 1))
                        return error_set(ret_error, -EINVAL, "prices: invalid model name (a '*' only at the end).");
                r = parse_price(price, name, e, ret_error);
                if (r < 0)
                        return r;
                e->prefix = name[n - 1] == '*';
                e->model = strndup(name, e->prefix ? n - 1 : n);
                if (!e->model)
                        return -ENOMEM;
                p->n_prices++;
        }
        return 0;
}

static int parse_default(json_object *v, const char *field, void *userdata, char **ret_error) {
        BrokerPrices *p = userdata;

        return parse_price(v, "default", &p->fallback, ret_error);
}

static const JsonField table_fields[] = {
        { .name = "unit", .type = JSON_ANY },          /* for people reading the file */
        { "models",                    JSON_ANY, .callback = parse_models, .flags = JSON_MANDATORY },
        { "default",                   JSON_ANY, .callback = parse_default, .flags = JSON_MANDATORY },
        { "input_bytes_per_token",     JSON_U64, .offset = offsetof(BrokerPrices, input_bytes_per_token),
          .min = 1, .max = 16 },
        { "input_overhead_tokens",     JSON_U64, .offset = offsetof(BrokerPrices, input_overhead_tokens),
          .max = 1000000 },
        { "default_max_output_tokens", JSON_U64, .offset = offsetof(BrokerPrices, default_max_output_tokens),
          .min = 1, .max = BROKER_MAX_OUTPUT_TOKENS },
        {}
};

static const JsonDocument table_document = {
        .max_bytes = JSON_STRICT_MAX_BYTES,
        .max_depth = 4,
        .where = "prices",
        .fields = table_fields,
};

int broker_prices_parse(const char *text, size_t len, BrokerPrices *ret, char **ret_error) {
        BrokerPrices p = { .input_bytes_per_token = 1, .input_overhead_tokens = 2048,
                           .default_max_output_tokens = 32768 };
        int r;

        r = json_document_parse(&table_document, text, len, &p, ret_error);
        if (r < 0) {
                broker_prices_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

static int parse_text(const char *text, size_t len, void *ret, char **ret_error) {
        return broker_prices_parse(text, len, ret, ret_error);
}

int broker_prices_load(const char *path, BrokerPrices *ret, char **ret_error) {
        return json_load_file(path, JSON_STRICT_MAX_BYTES, "price table", parse_text, ret, ret_error);
}

void broker_prices_done(BrokerPrices *p) {
        for (size_t i = 0; i < p->n_prices; i++)
                free(p->prices[i].model);
        *p = (BrokerPrices) {};
}

const BrokerPrice *broker_prices_find(const BrokerPrices *p, const char *model) {
        const BrokerPrice *best = NULL;

        for (size_t i = 0; model && i < p->n_prices; i++) {
                const BrokerPrice *e = &p->prices[i];
                size_t n = strlen(e->model);
                if (!e->prefix && streq(e->model, model))
                        return e;
                if (e->prefix && strncmp(e->model, model, n) == 0 && (!best || n > strlen(best->model)))
                        best = e;
        }
        return best ?: &p->fallback;
}

uint64_t broker_cost(const BrokerPrice *price, uint64_t input_tokens, uint64_t output_tokens) {
        /* millicents per million tokens times tokens is exactly nanocents. */
        return sat_add(sat_mul(price->input, input_tokens), sat_mul(price->output, output_tokens));
}

/* The largest of the output caps the APIs know, and "n" (choices); 0 if none is given. */
static int output_cap(json_object *o, uint64_t *ret_max, uint64_t *ret_n, const char **ret_reason) {
        static const char *const keys[] = { "max_tokens", "max_completion_tokens", "max_output_tokens" };
        json_object *v;
        int64_t i;

        *ret_max = 0;
        *ret_n = 1;
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                v = json_get(o, keys[k]);
                if (!v)
                        continue;
                i = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || i < 1 || (uint64_t) i > BROKER_MAX_OUTPUT_TOKENS)
                        return *ret_reason = "max_tokens must be an integer 1..10000000", -EINVAL;
                *ret_max = MAX(*ret_max, (uint64_t) i);
        }
        v = json_get(o, "n");
        if (v) {
                i = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || i < 1 || i > 128)
                        return *ret_reason = "n must be an integer 1..128", -EINVAL;
                *ret_n = (uint64_t) i;
        }
        return 0;
}

int broker_estimate(const BrokerPrices *p, const char *body, size_t len, BrokerEstimate *ret,
                    const char **ret_reason) {
        _cleanup_json_ json_object *o = NULL;
        BrokerEstimate e = {};
        json_object *model;
        uint64_t max, n;
        int r;

        if (len == 0) {
                *ret = e;
                return 0;
        }
        if (json_parse_strict(body, len, SIZE_MAX, 64, &o, NULL) < 0 || !json_object_is_type(o, json_type_object))
                return *ret_reason = "the request body must be one JSON object (strict: no duplicate keys)", -EINVAL;
        model = json_get(o, "model");
        if (model) {
                if (!json_object_is_type(model, json_type_string) ||
                    (size_t) json_object_get_string_len(model) >= sizeof e.model)
                        return *ret_reason = "model must be a string of at most 127 bytes", -EINVAL;
                strcpy(e.model, json_object_get_string(model));
        }
        r = output_cap(o, &max, &n, ret_reason);
        if (r < 0)
                return r;
        e.output_tokens = (max ?: p->default_max_output_tokens) * n;
        e.input_tokens = (len + p->input_bytes_per_token - 1) / p->input_bytes_per_token + p->input_overhead_tokens;
        e.cost = broker_cost(broker_prices_find(p, e.model), e.input_tokens, e.output_tokens);
        *ret = e;
        return 0;
}

uint64_t broker_charge(const BrokerPrices *p, const BrokerEstimate *est, int status, bool completed,
                       bool may_be_billed, const BrokerUsageParser *usage) {
        const BrokerUsage *u = &usage->usage;

        if (completed && u->seen_output && !usage->overflow)
                return broker_cost(broker_prices_find(p, est->model), broker_usage_input_total(u), u->output_tokens);
        if ((status >= 200 && status < 300) || (status == 0 && may_be_billed))
                return est->cost;
        /* An error status: the APIs do not bill refused requests, but a partial report is still a floor. */
        return MIN(est->cost, broker_cost(broker_prices_find(p, est->model), broker_usage_input_total(u),
                                          u->output_tokens));
}

void broker_budget_init(BrokerBudget *b, uint64_t max_cost_cents) {
        *b = (BrokerBudget) { .max = sat_mul(max_cost_cents, BROKER_NANOCENTS_PER_CENT) };
}

static bool hit(BrokerBudget *b) {
        bool newly = !b->ceiling_hit;

        b->ceiling_hit = true;
        return newly;
}

BrokerBudgetVerdict broker_budget_reserve(BrokerBudget *b, uint64_t worst, bool *ret_newly_hit) {
        *ret_newly_hit = false;
        if (b->ceiling_hit)
                return BROKER_BUDGET_REFUSED;
        if (sat_add(b->spent, worst) > b->max) {
                *ret_newly_hit = hit(b);
                return BROKER_BUDGET_REFUSED;
        }
        if (sat_add(sat_add(b->spent, b->reserved), worst) > b->max)
                return BROKER_BUDGET_BUSY;
        b->reserved += worst;
        return BROKER_BUDGET_OK;
}

bool broker_budget_settle(BrokerBudget *b, uint64_t reserved, uint64_t charge) {
        b->reserved -= MIN(reserved, b->reserved);
        b->spent = sat_add(b->spent, charge);
        if (b->spent >= b->max && b->max > 0)
                return hit(b);
        return false;
}
