/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-price.h: the price table (policy/prices.json), a request's worst-case cost, what a finished
 * request is charged, and the job's budget against max_cost_cents. Costs are integers in nanocents
 * (1e-9 US cent), so sums are exact and a table can price 7.5 cents per million tokens. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker-usage.h"

#define BROKER_PRICES_MAX 256
#define BROKER_MODEL_MAX 128
#define BROKER_NANOCENTS_PER_CENT UINT64_C(1000000000)
#define BROKER_MAX_OUTPUT_TOKENS 10000000ULL

typedef struct BrokerPrice {
        char *model;            /* exact name, or a prefix when prefix is set ("claude-sonnet-4*") */
        bool prefix;
        uint64_t input;         /* millicents per million tokens (= nanocents per thousand tokens) */
        uint64_t output;
} BrokerPrice;

typedef struct BrokerPrices {
        BrokerPrice prices[BROKER_PRICES_MAX];
        size_t n_prices;
        BrokerPrice fallback;           /* "default": for models not in the table */
        uint64_t input_bytes_per_token; /* worst-case estimate of input tokens: body bytes / this */
        uint64_t input_overhead_tokens; /* added to that estimate (system prompts the API adds) */
        uint64_t default_max_output_tokens; /* when the request names no max_tokens */
} BrokerPrices;

int broker_prices_parse(const char *text, size_t len, BrokerPrices *ret, char **ret_error);
int broker_prices_load(const char *path, BrokerPrices *ret, char **ret_error);
void broker_prices_done(BrokerPrices *p);

/* Exact match first, else the longest matching prefix, else the default. */
const BrokerPrice *broker_prices_find(const BrokerPrices *p, const char *model);
/* Saturating. */
uint64_t broker_cost(const BrokerPrice *price, uint64_t input_tokens, uint64_t output_tokens);

typedef struct BrokerEstimate {
        char model[BROKER_MODEL_MAX];   /* "" when the body names none */
        uint64_t input_tokens, output_tokens;   /* worst case */
        uint64_t cost;                          /* nanocents, worst case */
} BrokerEstimate;

/* The worst case of a request body: an empty body costs nothing; otherwise it must be one strict JSON
 * object (duplicate keys refused, so the broker and the API read the same max_tokens). Output: the
 * largest of max_tokens / max_completion_tokens / max_output_tokens (or the table's default) times "n";
 * input: body bytes / input_bytes_per_token + input_overhead_tokens. -EINVAL with a static reason. */
int broker_estimate(const BrokerPrices *p, const char *body, size_t len, BrokerEstimate *ret,
                    const char **ret_reason);

/* What a finished request costs. Its usage when the response completed and reported output tokens;
 * otherwise, a 2xx response or one that may have been billed (no status) costs its worst case; an
 * error status without usage costs nothing. */
uint64_t broker_charge(const BrokerPrices *p, const BrokerEstimate *est, int status, bool completed,
                       bool may_be_billed, const BrokerUsageParser *usage);

typedef enum BrokerBudgetVerdict {
        BROKER_BUDGET_OK,       /* reserved */
        BROKER_BUDGET_BUSY,     /* fits the budget, but not next to what is in flight: 429, retry */
        BROKER_BUDGET_REFUSED,  /* would cross the ceiling, or the ceiling was already reached: 402 */
} BrokerBudgetVerdict;

typedef struct BrokerBudget {
        uint64_t max, spent, reserved;  /* nanocents */
        bool ceiling_hit;
} BrokerBudget;

void broker_budget_init(BrokerBudget *b, uint64_t max_cost_cents);
/* *ret_newly_hit is set when this call reached the ceiling (once per job). */
BrokerBudgetVerdict broker_budget_reserve(BrokerBudget *b, uint64_t worst, bool *ret_newly_hit);
/* Releases a reservation and adds the actual charge; returns true when this reached the ceiling. */
bool broker_budget_settle(BrokerBudget *b, uint64_t reserved, uint64_t charge);
