/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-upstream.c: one upstream HTTPS transfer of pond-broker, driven by libcurl's multi interface from
 * the client connection's own thread: the response head is awaited, then the body is pulled as the client
 * can take it, through a bounded buffer (curl is paused when it is full), so server-sent events pass as
 * they arrive and nothing is buffered whole. Certificate verification stays on; no redirects, no proxies
 * from the environment. The real key exists here only in the header list, wiped when it is freed, and
 * is scrubbed from the response body should the upstream echo it. */
#include <sodium.h>

#include "broker-internal.h"

#define BUF_HIGH (256 * 1024)   /* pause the transfer above this many unread bytes */
#define HEADERS_MAX 48

struct BrokerUpstream {
        BrokerServer *server;
        const BrokerCredential *cred;
        CURL *easy;
        CURLM *multi;
        struct curl_slist *headers;
        char errbuf[CURL_ERROR_SIZE];
        char *url;
        int status;
        bool head_done, done, paused, too_large;
        CURLcode result;
        char *resp_headers[HEADERS_MAX][2];
        size_t n_resp_headers;
        char *buf;
        size_t len, cap;
        uint64_t bytes_down, max_bytes;
        BrokerUsageParser usage;
};

/* Overwrites every occurrence of the real key in buf[from..len) (the key is printable, so '*' keeps any
 * JSON valid). Reads hold back a tail that could begin the key (held_tail()), so a key split across
 * two writes is still found whole. */
static void scrub(BrokerUpstream *u, size_t from) {
        size_t k = u->cred->secret_len;
        char *p = u->buf + from, *end = u->buf + u->len;

        while (k > 0 && (size_t) (end - p) >= k && (p = memmem(p, (size_t) (end - p), u->cred->secret, k))) {
                memset(p, '*', k);
                p += k;
        }
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        BrokerUpstream *u = userdata;
        size_t n = size * nmemb, from;

        if (u->bytes_down + n > u->max_bytes) {
                u->too_large = true;
                return 0;       /* aborts the transfer: CURLE_WRITE_ERROR */
        }
        if (u->len >= BUF_HIGH) {
                u->paused = true;
                return CURL_WRITEFUNC_PAUSE;    /* curl keeps the data and offers it again after unpausing */
        }
        if (u->len + n > u->cap) {
                size_t c = u->len + n + BUF_HIGH;
                char *b = realloc(u->buf, c);
                if (!b)
                        return 0;
                u->buf = b;
                u->cap = c;
        }
        memcpy(u->buf + u->len, ptr, n);
        from = u->len > u->cred->secret_len ? u->len - u->cred->secret_len : 0;
        u->len += n;
        scrub(u, from);
        u->bytes_down += n;
        broker_usage_feed(&u->usage, ptr, n);
        return n;
}

static void clear_headers(BrokerUpstream *u) {
        for (size_t i = 0; i < u->n_resp_headers; i++) {
                free(u->resp_headers[i][0]);
                free(u->resp_headers[i][1]);
        }
        u->n_resp_headers = 0;
}

static void keep_header(BrokerUpstream *u, const char *line, size_t n) {
        const char *colon = memchr(line, ':', n), *v;
        size_t nl, vl;

        if (!colon || u->n_resp_headers >= HEADERS_MAX)
                return;
        nl = (size_t) (colon - line);
        for (v = colon + 1; v < line + n && (*v == ' ' || *v == '\t'); v++)
                ;
        vl = (size_t) (line + n - v);
        while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
                vl--;
        char *name = strndup(line, nl), *value = strndup(v, vl);
        if (!name || !value || !broker_response_header_forwardable(name) || strpbrk(value, "\r\n") ||
            memmem(value, vl, u->cred->secret, u->cred->secret_len)) {
                free(name);
                free(value);
                return;
        }
        u->resp_headers[u->n_resp_headers][0] = name;
        u->resp_headers[u->n_resp_headers++][1] = value;
}

static size_t on_header(char *ptr, size_t size, size_t nitems, void *userdata) {
        BrokerUpstream *u = userdata;
        size_t n = size * nitems;
        long code = 0;

        if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
                clear_headers(u);       /* a new response head (after a 1xx) */
                return n;
        }
        if (n <= 2 && (ptr[0] == '\r' || ptr[0] == '\n')) {
                (void) curl_easy_getinfo(u->easy, CURLINFO_RESPONSE_CODE, &code);
                if (code >= 200 && !u->head_done) {
                        const char *ct = NULL;
                        u->status = (int) code;
                        u->head_done = true;
                        (void) curl_easy_getinfo(u->easy, CURLINFO_CONTENT_TYPE, &ct);
                        broker_usage_parser_init(&u->usage, ct && strstr(ct, "text/event-stream"));
                }
                return n;
        }
        keep_header(u, ptr, n);
        return n;
}

/* The real key goes into the header list in sodium_malloc'd memory; curl copies it into its own list,
 * which broker_upstream_free() wipes. */
static int add_key_header(BrokerUpstream *u, struct curl_slist **list) {
        const BrokerCredential *c = u->cred;
        size_t n = strlen(c->inject_header) + 2 + strlen(c->inject_prefix) + c->secret_len +
                   strlen(c->inject_suffix) + 1;
        char *h = sodium_malloc(n);
        struct curl_slist *l;

        if (!h)
                return -ENOMEM;
        snprintf(h, n, "%s: %s%s%s", c->inject_header, c->inject_prefix, c->secret, c->inject_suffix);
        l = curl_slist_append(*list, h);
        sodium_free(h);
        if (!l)
                return -ENOMEM;
        *list = l;
        l = curl_slist_append(*list, "Expect:");        /* no 100-continue round trip */
        if (!l)
                return -ENOMEM;
        *list = l;
        return 0;
}

static int setup_easy(BrokerUpstream *u, BrokerRequest *req) {
        const BrokerOptions *o = u->server->options;
        CURL *e = u->easy;
        unsigned timeout = o->config->timeout_sec;
        int fail = 0;

        fail |= curl_easy_setopt(e, CURLOPT_URL, u->url);
        fail |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
        fail |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        fail |= curl_easy_setopt(e, CURLOPT_PROXY, "");         /* never https_proxy & co. */
        fail |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        fail |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
        if (o->ca_file)
                fail |= curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
        fail |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        fail |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 15L);
        fail |= curl_easy_setopt(e, CURLOPT_TIMEOUT, (long) timeout);
        fail |= curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        fail |= curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long) MIN(timeout, 300u));
        fail |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, u->errbuf);
        fail |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, u->headers);
        fail |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
        fail |= curl_easy_setopt(e, CURLOPT_WRITEDATA, u);
        fail |= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        fail |= curl_easy_setopt(e, CURLOPT_HEADERDATA, u);
        if (req->route.method == BROKER_METHOD_GET)
                fail |= curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        else {
                if (req->route.method != BROKER_METHOD_POST)
                        fail |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
                fail |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ?: "");
                fail |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
        }
        return fail ? -EINVAL : 0;
}

int broker_upstream_start(BrokerServer *s, BrokerRequest *req, struct curl_slist *headers,
                          BrokerUpstream **ret) {
        BrokerUpstream *u = calloc(1, sizeof *u);
        int r;

        if (!u) {
                curl_slist_free_all(headers);
                return -ENOMEM;
        }
        *u = (BrokerUpstream) { .server = s, .cred = req->route.cred, .headers = headers,
                                .max_bytes = s->options->config->max_response_bytes };
        broker_usage_parser_init(&u->usage, false);
        r = add_key_header(u, &u->headers);
        if (r >= 0 && asprintf(&u->url, "%s%s", u->cred->upstream, req->route.rest) < 0) {
                u->url = NULL;
                r = -ENOMEM;
        }
        u->easy = r >= 0 ? curl_easy_init() : NULL;
        u->multi = u->easy ? curl_multi_init() : NULL;
        if (r >= 0 && (!u->easy || !u->multi))
                r = -ENOMEM;
        if (r >= 0)
                r = setup_easy(u, req);
        if (r >= 0 && curl_multi_add_handle(u->multi, u->easy) != CURLM_OK)
                r = -ENOMEM;
        if (r < 0) {
                broker_upstream_free(u);
                return r;
        }
        *ret = u;
        return 0;
}

/* One round: let curl work, wait for its sockets (at most 1 s, so stopping is noticed). */
static int pump(BrokerUpstream *u) {
        size_t len_before = u->len;
        bool head_before = u->head_done;
        int running = 0, left;
        CURLMsg *m;

        if (atomic_load(&u->server->stopping))
                return -ECANCELED;
        if (curl_multi_perform(u->multi, &running) != CURLM_OK)
                return -EIO;
        if (running == 0) {
                while ((m = curl_multi_info_read(u->multi, &left)))
                        if (m->msg == CURLMSG_DONE)
                                u->result = m->data.result;
                u->done = true;
                broker_usage_finish(&u->usage);
                return 0;
        }
        /* Progress (bytes, the head, or a pause because the buffer is full) goes back to the reader at
         * once: waiting here would hold each SSE event until the next, and a paused transfer's socket is
         * not polled at all, so the wait would run to curl's timer (up to 1 s per 256 KiB). */
        if (u->len != len_before || u->head_done != head_before || u->paused)
                return 0;
        return curl_multi_poll(u->multi, NULL, 0, 1000, NULL) == CURLM_OK ? 0 : -EIO;
}

int broker_upstream_wait_head(BrokerUpstream *u, char *errbuf, size_t size) {
        int r;

        while (!u->head_done && !u->done) {
                r = pump(u);
                if (r < 0)
                        return snprintf(errbuf, size, "stopping"), r;
        }
        if (u->head_done)
                return u->status;
        snprintf(errbuf, size, "%s", u->errbuf[0] ? u->errbuf : curl_easy_strerror(u->result));
        if (u->result == CURLE_OPERATION_TIMEDOUT)
                return -ETIMEDOUT;
        if (!broker_upstream_may_be_billed(u))
                return -ECONNREFUSED;
        return -EIO;
}

bool broker_upstream_header(BrokerUpstream *u, size_t i, const char **ret_name, const char **ret_value) {
        if (i >= u->n_resp_headers)
                return false;
        *ret_name = u->resp_headers[i][0];
        *ret_value = u->resp_headers[i][1];
        return true;
}

/* The longest end of the unread bytes that could begin the key: held back until more arrive. Usually 0
 * (an SSE event ends in a blank line, which no key contains), so events are never delayed. */
static size_t held_tail(const BrokerUpstream *u) {
        size_t k = u->cred->secret_len;

        for (size_t h = MIN(u->len, k > 0 ? k - 1 : 0); h > 0; h--)
                if (memcmp(u->buf + u->len - h, u->cred->secret, h) == 0)
                        return h;
        return 0;
}

ssize_t broker_upstream_read(BrokerUpstream *u, char *buf, size_t max) {
        int r;

        for (;;) {
                size_t avail = u->done ? u->len : u->len - held_tail(u);
                if (avail > 0) {
                        size_t n = MIN(avail, max);
                        memcpy(buf, u->buf, n);
                        memmove(u->buf, u->buf + n, u->len - n);
                        u->len -= n;
                        return (ssize_t) n;
                }
                if (u->done)
                        return u->result == CURLE_OK ? 0 : -EIO;
                if (u->paused && u->len < BUF_HIGH) {
                        u->paused = false;
                        (void) curl_easy_pause(u->easy, CURLPAUSE_CONT);
                        continue;
                }
                r = pump(u);
                if (r < 0)
                        return r;
        }
}

bool broker_upstream_completed(const BrokerUpstream *u) {
        return u->done && u->result == CURLE_OK;
}

bool broker_upstream_may_be_billed(const BrokerUpstream *u) {
        curl_off_t sent = 0;

        /* Nothing reached the upstream if it could not be resolved, connected or verified. */
        (void) curl_easy_getinfo(u->easy, CURLINFO_SIZE_UPLOAD_T, &sent);
        switch (u->result) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_UNSUPPORTED_PROTOCOL:
                return false;
        default:
                return u->status > 0 || sent > 0 || u->result == CURLE_OPERATION_TIMEDOUT;
        }
}

const BrokerUsageParser *broker_upstream_usage(BrokerUpstream *u) {
        if (!u->done)
                broker_usage_finish(&u->usage);         /* cut short: what was seen so far */
        return &u->usage;
}

uint64_t broker_upstream_bytes_down(const BrokerUpstream *u) {
        return u->bytes_down;
}

int broker_upstream_status(const BrokerUpstream *u) {
        return u->status;
}

void broker_upstream_free(BrokerUpstream *u) {
        if (!u)
                return;
        if (u->multi && u->easy)
                (void) curl_multi_remove_handle(u->multi, u->easy);
        curl_easy_cleanup(u->easy);
        curl_multi_cleanup(u->multi);
        for (struct curl_slist *l = u->headers; l; l = l->next)
                sodium_memzero(l->data, strlen(l->data));
        curl_slist_free_all(u->headers);
        clear_headers(u);
        if (u->buf)
                sodium_memzero(u->buf, u->cap);
        free(u->buf);
        free(u->url);
        broker_usage_parser_done(&u->usage);
        free(u);
}
