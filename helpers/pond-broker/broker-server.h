/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-server.h: pond-broker's server: the HTTP listener, the shared budget and totals, the signals
 * that stop it, the cost-ceiling protocol and the stats file. */
#pragma once

#include <stdint.h>

#include "broker-price.h"
#include "sidecar/broker-config.h"

typedef struct BrokerOptions {
        const BrokerConfig *config;     /* every credential with its secret */
        const BrokerPrices *prices;
        int listen_fd;                  /* listening TCP socket; the server does not close it */
        const char *ca_file;            /* NULL: the system's CA store */
        const char *stats_file;         /* NULL: none */
        unsigned ceiling_grace_sec;     /* after the ceiling: keep answering 402 this long, then exit */
} BrokerOptions;

typedef struct BrokerStats {
        uint64_t requests, refused, forwarded;
        uint64_t input_tokens, output_tokens;
        uint64_t cost;                  /* nanocents */
        uint64_t bytes_up, bytes_down;
        bool ceiling_hit;
        char ceiling_reason[256];
} BrokerStats;

/* Serves until SIGTERM/SIGINT, or until ceiling_grace_sec after the cost ceiling was reached. Writes the
 * stats file when the ceiling is reached and again at exit. Returns 0, BROKER_EXIT_CEILING if the ceiling
 * was reached, or -errno. */
int broker_server_run(const BrokerOptions *o);

/* The stats as JSON text (malloc'd). */
int broker_stats_format(const char *job_id, uint64_t max_cost_cents, const BrokerStats *s, char **ret);
