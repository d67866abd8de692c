/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-internal.h: what the broker's server, HTTP handlers and upstream transfers share. */
#pragma once

#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "broker-audit.h"
#include "broker-request.h"
#include "broker-server.h"
#include "broker-usage.h"

typedef struct BrokerUpstream BrokerUpstream;

typedef struct BrokerServer {
        const BrokerOptions *options;
        pthread_mutex_t lock;           /* budget, stats, serial */
        BrokerBudget budget;
        BrokerStats stats;
        uint64_t serial;
        int ceiling_fd;                 /* eventfd: the handlers tell the main loop the ceiling was reached */
        atomic_bool stopping;
} BrokerServer;

typedef struct BrokerRequest {
        BrokerServer *server;
        uint64_t serial;
        char *uri;                      /* raw request target, before any decoding */
        bool started;
        bool responded;
        BrokerRoute route;
        char method[16];
        char *body;
        size_t body_len;
        bool body_too_large;
        BrokerEstimate estimate;
        bool reserved;
        BrokerUpstream *upstream;
        int status;
        bool refused;
        char reason[320];
} BrokerRequest;

/* MHD callbacks (broker-http.c). */
void *broker_http_uri_log(void *cls, const char *uri, struct MHD_Connection *connection);
enum MHD_Result broker_http_handle(void *cls, struct MHD_Connection *connection, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls);
void broker_http_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                           enum MHD_RequestTerminationCode toe);

/* Called with the lock held when the budget reached the ceiling (broker-server.c). */
void broker_server_ceiling_locked(BrokerServer *s, const char *reason);

/* Upstream transfers (broker-upstream.c). headers: "Name: value" lines to forward (taken over). */
int broker_upstream_start(BrokerServer *s, BrokerRequest *req, struct curl_slist *headers,
                          BrokerUpstream **ret);
/* Runs the transfer until the response head arrived: its status, or -errno (-ETIMEDOUT, -ECONNREFUSED
 * for a failure before anything was sent, -EIO otherwise) with a message in errbuf. */
int broker_upstream_wait_head(BrokerUpstream *u, char *errbuf, size_t size);
/* The forwardable response headers, one at a time: false at the end. */
bool broker_upstream_header(BrokerUpstream *u, size_t i, const char **ret_name, const char **ret_value);
/* Body bytes as they arrive (blocks): > 0 bytes, 0 at the end, -errno on failure or when stopping. */
ssize_t broker_upstream_read(BrokerUpstream *u, char *buf, size_t max);
/* Completed without a transport error; whether the upstream may have billed it; usage seen so far. */
bool broker_upstream_completed(const BrokerUpstream *u);
bool broker_upstream_may_be_billed(const BrokerUpstream *u);
const BrokerUsageParser *broker_upstream_usage(BrokerUpstream *u);
uint64_t broker_upstream_bytes_down(const BrokerUpstream *u);
/* The upstream's final status, 0 before its head arrived. */
int broker_upstream_status(const BrokerUpstream *u);
void broker_upstream_free(BrokerUpstream *u);
