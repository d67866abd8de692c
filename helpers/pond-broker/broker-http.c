/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-http.c: pond-broker's HTTP side (libmicrohttpd, one thread per connection): each request is
 * checked (route, dummy key, allowlist, size), costed and reserved against the budget, forwarded through
 * broker-upstream.c with the response streamed back, then charged, counted and written to the journal.
 * Refusals answer a JSON error in the shape the model APIs use, so SDKs show the reason. */
#include <inttypes.h>

#include "basic/json-strict.h"
#include "broker-internal.h"

#define FORWARD_HEADERS_MAX 100
#define STREAM_BLOCK (16 * 1024)

void *broker_http_uri_log(void *cls, const char *uri, struct MHD_Connection *connection) {
        BrokerServer *s = cls;
        BrokerRequest *req = calloc(1, sizeof *req);

        if (!req)
                return NULL;
        req->server = s;
        req->uri = strndup(uri ?: "", BROKER_URI_MAX + 1);
        pthread_mutex_lock(&s->lock);
        req->serial = ++s->serial;
        s->stats.requests++;
        pthread_mutex_unlock(&s->lock);
        return req;
}

static enum MHD_Result respond_error(BrokerRequest *req, struct MHD_Connection *conn, int status,
                                     bool refused, const char *reason) {
        _cleanup_json_ json_object *o = json_object_new_object(), *e = json_object_new_object();
        struct MHD_Response *resp;
        enum MHD_Result ret;
        const char *text;

        req->status = status;
        req->refused = refused;
        req->responded = true;
        snprintf(req->reason, sizeof req->reason, "%s", reason);
        if (!o || !e || json_object_object_add(e, "type", json_object_new_string("pond_broker")) < 0 ||
            json_object_object_add(e, "message", json_object_new_string(reason)) < 0 ||
            json_object_object_add(o, "type", json_object_new_string("error")) < 0 ||
            json_object_object_add(o, "error", json_object_get(e)) < 0)
                return MHD_NO;
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        resp = MHD_create_response_from_buffer(strlen(text), (void *) text, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        (void) MHD_add_response_header(resp, "Content-Type", "application/json");
        ret = MHD_queue_response(conn, (unsigned) status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static const char *lookup_header(void *userdata, const char *name) {
        return MHD_lookup_connection_value(userdata, MHD_HEADER_KIND, name);
}

/* First call: the head is complete, the body not read yet. Refusing here never reads the body. */
static enum MHD_Result begin(BrokerRequest *req, struct MHD_Connection *conn, const char *method) {
        const BrokerConfig *c = req->server->options->config;
        const char *reason = NULL, *cl;
        int status;

        snprintf(req->method, sizeof req->method, "%s", method ?: "");
        status = broker_check_request(c, req->method, req->uri, lookup_header, conn, &req->route, &reason);
        if (status != 0)
                return respond_error(req, conn, status, true, reason);
        cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > c->max_request_bytes)
                return respond_error(req, conn, 413, true, "request body too large");
        return MHD_YES;
}

static void take_body(BrokerRequest *req, const char *data, size_t n) {
        uint64_t max = req->server->options->config->max_request_bytes;
        char *b;

        if (req->body_too_large || req->body_len + n > max) {
                req->body_too_large = true;
                return;
        }
        b = realloc(req->body, req->body_len + n + 1);
        if (!b) {
                req->body_too_large = true;
                return;
        }
        memcpy(b + req->body_len, data, n);
        req->body = b;
        req->body_len += n;
        b[req->body_len] = 0;
}

static void format_cents(uint64_t nanocents, char buf[32]) {
        snprintf(buf, 32, "%" PRIu64 ".%04" PRIu64, nanocents / BROKER_NANOCENTS_PER_CENT,
                 nanocents % BROKER_NANOCENTS_PER_CENT / 100000);
}

/* Worst case against the budget; 0 when reserved, else the refusal is answered. */
static int reserve(BrokerRequest *req, struct MHD_Connection *conn) {
        BrokerServer *s = req->server;
        BrokerBudgetVerdict v;
        char reason[320], worst[32], spent[32];
        bool newly;

        pthread_mutex_lock(&s->lock);
        v = broker_budget_reserve(&s->budget, req->estimate.cost, &newly);
        format_cents(req->estimate.cost, worst);
        format_cents(s->budget.spent, spent);
        if (v == BROKER_BUDGET_REFUSED && newly) {
                snprintf(reason, sizeof reason, "cost ceiling: this request may cost up to %s cents, the job has "
                         "spent %s of its %" PRIu64 " cents", worst, spent, s->options->config->max_cost_cents);
                broker_server_ceiling_locked(s, reason);
        } else if (v == BROKER_BUDGET_REFUSED)
                snprintf(reason, sizeof reason, "cost ceiling reached: the job's budget of %" PRIu64 " cents is "
                         "exhausted (%.200s)", s->options->config->max_cost_cents, s->stats.ceiling_reason);
        else if (v == BROKER_BUDGET_BUSY)
                snprintf(reason, sizeof reason, "budget held by requests in flight: this one may cost up to %s "
                         "cents; retry when they finish", worst);
        pthread_mutex_unlock(&s->lock);
        req->reserved = v == BROKER_BUDGET_OK;
        if (v == BROKER_BUDGET_OK)
                return 0;
        (void) respond_error(req, conn, v == BROKER_BUDGET_BUSY ? 429 : 402, true, reason);
        return -EDQUOT;
}

typedef struct HeaderList {
        const BrokerCredential *cred;
        struct curl_slist *list;
        size_t n;
        bool oom;
} HeaderList;

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        HeaderList *h = cls;
        struct curl_slist *l;
        char *line;

        if (!key || !value || !value[0] || h->n >= FORWARD_HEADERS_MAX ||
            !broker_request_header_forwardable(h->cred, key))
                return MHD_YES;
        if (asprintf(&line, "%s: %s", key, value) < 0)
                return h->oom = true, MHD_NO;
        l = curl_slist_append(h->list, line);
        free(line);
        if (!l)
                return h->oom = true, MHD_NO;
        h->list = l;
        h->n++;
        return MHD_YES;
}

static enum MHD_Result stream_response(BrokerRequest *req, struct MHD_Connection *conn, int status);

/* Last call: the body is complete. */
static enum MHD_Result forward(BrokerRequest *req, struct MHD_Connection *conn) {
        HeaderList h = { .cred = req->route.cred };
        const char *reason = NULL;
        char err[CURL_ERROR_SIZE + 64];
        int r;

        if (req->body_too_large)
                return respond_error(req, conn, 413, true, "request body too large");
        if (broker_estimate(req->server->options->prices, req->body, req->body_len, &req->estimate, &reason) < 0)
                return respond_error(req, conn, 400, true, reason);
        if (reserve(req, conn) < 0)
                return MHD_YES;
        (void) MHD_get_connection_values(conn, MHD_HEADER_KIND, add_header, &h);
        if (h.oom) {
                curl_slist_free_all(h.list);
                return MHD_NO;
        }
        r = broker_upstream_start(req->server, req, h.list, &req->upstream);
        if (r < 0)
                return respond_error(req, conn, 500, false, "failed to start the upstream request");
        r = broker_upstream_wait_head(req->upstream, err, sizeof err);
        if (r < 0) {
                char msg[CURL_ERROR_SIZE + 64];
                snprintf(msg, sizeof msg, "upstream %s: %.200s", r == -ETIMEDOUT ? "timed out" : "failed", err);
                return respond_error(req, conn, r == -ETIMEDOUT ? 504 : 502, false, msg);
        }
        return stream_response(req, conn, r);
}

static ssize_t read_body(void *cls, uint64_t pos, char *buf, size_t max) {
        BrokerRequest *req = cls;
        ssize_t n = broker_upstream_read(req->upstream, buf, max);

        if (n > 0)
                return n;
        return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static enum MHD_Result stream_response(BrokerRequest *req, struct MHD_Connection *conn, int status) {
        struct MHD_Response *resp;
        const char *name, *value;
        enum MHD_Result ret;

        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, read_body, req, NULL);
        if (!resp)
                return MHD_NO;
        for (size_t i = 0; broker_upstream_header(req->upstream, i, &name, &value); i++)
                (void) MHD_add_response_header(resp, name, value);
        req->status = status;
        req->responded = true;
        ret = MHD_queue_response(conn, (unsigned) status, resp);
        MHD_destroy_response(resp);
        return ret;
}

enum MHD_Result broker_http_handle(void *cls, struct MHD_Connection *connection, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls) {
        BrokerRequest *req = *con_cls;

        if (!req)
                return MHD_NO;
        if (!req->started) {
                req->started = true;
                return begin(req, connection, method);
        }
        if (*upload_data_size > 0) {
                if (!req->responded)
                        take_body(req, upload_data, *upload_data_size);
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (req->responded)
                return MHD_YES;
        return forward(req, connection);
}

static const char *termination_reason(enum MHD_RequestTerminationCode toe) {
        switch (toe) {
        case MHD_REQUEST_TERMINATED_COMPLETED_OK:
                return NULL;
        case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
                return "client connection timed out";
        case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
                return "client went away";
        case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
                return "broker shutting down";
        default:
                return "request aborted";
        }
}

/* Releases the reservation, adds the charge and the usage to the job's totals; returns the charge. */
static uint64_t settle(BrokerRequest *req, BrokerAuditRecord *rec) {
        BrokerServer *s = req->server;
        const BrokerUsageParser *u = NULL;
        uint64_t charge = 0;
        char reason[320], spent[32];

        if (req->upstream) {
                u = broker_upstream_usage(req->upstream);
                charge = broker_charge(s->options->prices, &req->estimate, broker_upstream_status(req->upstream),
                                       broker_upstream_completed(req->upstream),
                                       broker_upstream_may_be_billed(req->upstream), u);
                rec->input_tokens = broker_usage_input_total(&u->usage);
                rec->output_tokens = u->usage.output_tokens;
                rec->bytes_down = broker_upstream_bytes_down(req->upstream);
        }
        pthread_mutex_lock(&s->lock);
        if (req->reserved && broker_budget_settle(&s->budget, req->estimate.cost, charge)) {
                format_cents(s->budget.spent, spent);
                snprintf(reason, sizeof reason, "cost ceiling: the job has spent %s of its %" PRIu64 " cents",
                         spent, s->options->config->max_cost_cents);
                broker_server_ceiling_locked(s, reason);
        }
        s->stats.refused += req->refused;
        s->stats.forwarded += !!req->upstream;
        s->stats.input_tokens += rec->input_tokens;
        s->stats.output_tokens += rec->output_tokens;
        s->stats.cost = s->budget.spent;
        s->stats.bytes_up += req->upstream ? req->body_len : 0;
        s->stats.bytes_down += rec->bytes_down;
        pthread_mutex_unlock(&s->lock);
        return charge;
}

void broker_http_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
        BrokerRequest *req = *con_cls;
        _cleanup_free_ char *printable = NULL, *path = NULL;
        BrokerAuditRecord rec;

        if (!req)
                return;
        *con_cls = NULL;
        if (req->route.cred)
                path = strndup(req->route.rest, req->route.path_len);
        else
                printable = json_printable(req->uri ?: "");
        rec = (BrokerAuditRecord) {
                .job_id = req->server->options->config->job_id,
                .request = req->serial,
                .credential = req->route.cred ? req->route.cred->name : NULL,
                .method = req->method[0] ? req->method : NULL,
                .path = path ?: printable,
                .status = req->status,
                .bytes_up = req->body_len,
                .reason = req->reason[0] ? req->reason : termination_reason(toe),
        };
        if (!req->started)
                rec.reason = "malformed or oversized request head (answered by the HTTP parser)";
        rec.cost = settle(req, &rec);
        (void) broker_audit(req->refused || !req->started ? BROKER_EVENT_REFUSED : BROKER_EVENT_REQUEST, &rec);
        broker_upstream_free(req->upstream);
        free(req->body);
        free(req->uri);
        free(req);
}
