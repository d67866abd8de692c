/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-conn.c: one tunnel of pond-egress, as a state machine on the proxy's sd-event loop:
 *
 *   HEAD      read the CONNECT head (bounded, idle timeout); port, literal and allowlist checks,
 *             all before any lookup (a lookup of a refused name is itself a leak)
 *   RESOLVE   resolver query; every returned address classified, one refused address refuses all
 *   CONNECT   non-blocking connect() to exactly a checked sockaddr; next address on failure
 *   HELLO     "200 Connection Established" sent; read the ClientHello, its SNI must be the CONNECT host
 *   FORWARD   write the buffered ClientHello upstream
 *   RELAY     splice() both directions through pipes, bytes counted against the job's cap
 *   LINGER    an error reply sent and our side shut: drain the client briefly so it reads the reply
 *             (closing with unread input would reset the connection and lose it)
 *
 * Every decision is a journal record (egress-audit.c). */
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "egress-audit.h"
#include "egress-connect.h"
#include "egress-proxy-internal.h"
#include "egress-tls.h"

#define LINGER_USEC (2 * 1000000ULL)
#define PIPE_CHUNK (64 * 1024)

typedef enum ConnState {
        STATE_HEAD,
        STATE_RESOLVE,
        STATE_CONNECT,
        STATE_HELLO,
        STATE_FORWARD,
        STATE_RELAY,
        STATE_LINGER,
} ConnState;

typedef struct Dir {
        int pipe[2];
        size_t in_pipe;
        bool eof, shut;
        uint64_t bytes;
} Dir;

struct EgressConn {
        EgressProxy *proxy;
        EgressConn *prev, *next;
        uint64_t id;
        ConnState state;
        int client_fd, upstream_fd;
        sd_event_source *client_source, *upstream_source, *timer;
        uint64_t start, last;
        char client[EGRESS_ADDR_STRLEN], address[EGRESS_ADDR_STRLEN];
        EgressConnectRequest req;
        char *name;             /* normalized CONNECT host, when a name */
        EgressQuery *query;
        EgressSockaddr *addrs;
        size_t n_addrs, i_addr;
        uint8_t *buf;           /* HEAD: the request; HELLO/FORWARD: the tunnel's first bytes */
        size_t len, off;
        Dir up, down;           /* up: job -> upstream */
};

static const EgressConfig *cfg(EgressConn *c) {
        return c->proxy->config;
}

static EgressAuditRecord record(EgressConn *c, const char *reason, int status) {
        return (EgressAuditRecord) {
                .job_id = cfg(c)->job_id, .conn = c->id, .client = c->client,
                .host = c->req.port ? c->req.host : NULL, .port = c->req.port,
                .address = c->address[0] ? c->address : NULL, .reason = reason, .status = status,
        };
}

void egress_conn_free(EgressConn *c) {
        if (!c)
                return;
        if (c->prev)
                c->prev->next = c->next;
        else
                c->proxy->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->proxy->n_conns--;
        egress_query_cancel(c->query);
        sd_event_source_disable_unref(c->client_source);
        sd_event_source_disable_unref(c->upstream_source);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->client_fd);
        safe_close(c->upstream_fd);
        for (int i = 0; i < 2; i++) {
                safe_close(c->up.pipe[i]);
                safe_close(c->down.pipe[i]);
        }
        free(c->name);
        free(c->addrs);
        free(c->buf);
        free(c);
}

static void touch(EgressConn *c) {
        uint64_t deadline;

        sd_event_now(c->proxy->event, CLOCK_MONOTONIC, &c->last);
        deadline = c->last + (c->state == STATE_LINGER ? LINGER_USEC : cfg(c)->idle_timeout_usec);
        if (c->state != STATE_LINGER && deadline > c->start + cfg(c)->total_timeout_usec)
                deadline = c->start + cfg(c)->total_timeout_usec;
        sd_event_source_set_time(c->timer, deadline);
        sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

static void set_events(sd_event_source *s, uint32_t events) {
        if (!s)
                return;
        if (events) {
                sd_event_source_set_io_events(s, events);
                sd_event_source_set_enabled(s, SD_EVENT_ON);
        } else
                sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

static const char *status_text(int status) {
        switch (status) {
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 405: return "Method Not Allowed";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return "Error";
        }
}

/* Refuses before the tunnel exists: an HTTP error with the reason as its body, then LINGER. */
static void deny(EgressConn *c, int status, const char *reason) {
        char reply[1024], body[512];
        int n;

        EgressAuditRecord rec = record(c, reason, status);

        c->proxy->stats.denied++;
        egress_audit(EGRESS_DECISION_DENIED, &rec);
        snprintf(body, sizeof body, "pond-egress: %s\n", reason);
        n = snprintf(reply, sizeof reply, "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\n%s", status, status_text(status),
                     status == 405 ? "Allow: CONNECT\r\n" : "", strlen(body), body);
        /* The reply is small and the socket's send buffer empty: one write, or the client is gone. */
        (void) !send(c->client_fd, reply, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        shutdown(c->client_fd, SHUT_WR);
        egress_query_cancel(TAKE_PTR(c->query));
        c->upstream_source = sd_event_source_disable_unref(c->upstream_source);
        c->upstream_fd = safe_close(c->upstream_fd);
        c->state = STATE_LINGER;
        set_events(c->client_source, EPOLLIN);
        touch(c);
}

/* Ends a tunnel after the 200 (no HTTP status can be sent any more). */
static void finish(EgressConn *c, EgressDecision d, const char *reason) {
        EgressAuditRecord r = record(c, reason, 0);

        if (d == EGRESS_DECISION_DENIED)
                c->proxy->stats.denied++;
        if (c->state == STATE_RELAY || c->state == STATE_FORWARD) {
                r.has_bytes = true;
                r.bytes_up = c->up.bytes;
                r.bytes_down = c->down.bytes;
        }
        egress_audit(d, &r);
        egress_conn_free(c);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        EgressConn *c = userdata;
        bool total = usec >= c->start + cfg(c)->total_timeout_usec;

        switch (c->state) {
        case STATE_LINGER:
                egress_conn_free(c);
                break;
        case STATE_HEAD:
                deny(c, 400, "timed out reading the CONNECT request");
                break;
        case STATE_RESOLVE:
        case STATE_CONNECT:
                deny(c, 504, c->state == STATE_RESOLVE ? "name lookup timed out" : "connect timed out");
                break;
        case STATE_HELLO:
                finish(c, EGRESS_DECISION_DENIED, "timed out waiting for the TLS ClientHello");
                break;
        default:
                finish(c, EGRESS_DECISION_CLOSED, total ? "total timeout" : "idle timeout");
        }
        return 0;
}

static bool port_allowed(const EgressConfig *config, uint16_t port) {
        for (size_t i = 0; i < config->n_ports; i++)
                if (config->ports[i] == port)
                        return true;
        return false;
}

static void start_connect(EgressConn *c);
static void check_hello(EgressConn *c);

/* Every address must pass: one refused address means the name is pointed somewhere it must not go
 * (a rebinding attempt or a misconfigured record), and trying "the good one" would still leak. */
static const char *check_addrs(EgressConn *c) {
        static char reason[128];

        for (size_t i = 0; i < c->n_addrs; i++) {
                EgressAddrClass k = egress_addr_classify((const struct sockaddr *) &c->addrs[i].sa,
                                                         c->addrs[i].len, &cfg(c)->local);
                if (k != EGRESS_ADDR_PUBLIC) {
                        egress_addr_to_string((const struct sockaddr *) &c->addrs[i].sa, c->address,
                                              sizeof c->address);
                        snprintf(reason, sizeof reason, "address %s is %s", c->address,
                                 egress_addr_class_to_string(k));
                        return reason;
                }
        }
        return NULL;
}

static void on_resolved(int r, const EgressSockaddr *addrs, size_t n, void *userdata) {
        EgressConn *c = userdata;
        const char *reason;

        c->query = NULL;
        if (r == -ETIMEDOUT)
                return deny(c, 504, "name lookup timed out");
        if (r == -ENOENT)
                return deny(c, 502, "name has no address");
        if (r < 0)
                return deny(c, 502, r == -E2BIG ? "name has too many addresses" : "name lookup failed");
        c->addrs = malloc(n * sizeof *addrs);
        if (!c->addrs)
                return deny(c, 503, "out of memory");
        memcpy(c->addrs, addrs, n * sizeof *addrs);
        c->n_addrs = n;
        reason = check_addrs(c);
        if (reason)
                return deny(c, 403, reason);
        start_connect(c);
}

/* The checks that need no lookup, in the order a refusal is cheapest. */
static void on_head(EgressConn *c) {
        const EgressConfig *config = cfg(c);
        const char *reason;
        int r;

        if (!port_allowed(config, c->req.port))
                return deny(c, 403, "port not allowed");
        if (c->req.kind != EGRESS_HOST_NAME) {
                if (!config->allow_ip_literals)
                        return deny(c, 403, "IP literals are not allowed, use a host name");
                c->addrs = malloc(sizeof *c->addrs);
                if (!c->addrs)
                        return deny(c, 503, "out of memory");
                c->addrs[0] = (EgressSockaddr) { c->req.literal, c->req.literal_len };
                c->n_addrs = 1;
                reason = check_addrs(c);
                if (reason)
                        return deny(c, 403, reason);
                return start_connect(c);
        }
        if (egress_name_normalize(c->req.host, strlen(c->req.host), &c->name) < 0)
                return deny(c, 400, "not a valid host name");
        if (!egress_allow_match(&config->allow, c->name))
                return deny(c, 403, "host not on the allowlist");
        c->state = STATE_RESOLVE;
        set_events(c->client_source, 0);
        touch(c);
        r = egress_resolver_resolve(c->proxy->resolver, c->name, c->req.port, on_resolved, c, &c->query);
        if (r < 0)
                return deny(c, 503, "name lookup failed to start");
}

static void read_head(EgressConn *c) {
        const char *reason = NULL;
        size_t head_len;
        ssize_t n;
        int r;

        n = recv(c->client_fd, c->buf + c->len, EGRESS_HEAD_MAX - c->len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0)
                return finish(c, EGRESS_DECISION_DENIED, "client closed before a complete CONNECT request");
        c->len += (size_t) n;
        touch(c);
        r = egress_connect_parse(c->buf, c->len, &c->req, &head_len, &reason);
        if (r == 0)
                return;
        if (r < 0) {
                c->req.port = 0; /* nothing of a refused head is reported as the host */
                return deny(c, r == -EOPNOTSUPP ? 405 : 400, reason ?: "malformed request");
        }
        /* Bytes after the head are the tunnel's first bytes (a client may send its ClientHello at once). */
        memmove(c->buf, c->buf + head_len, c->len - head_len);
        c->len -= head_len;
        on_head(c);
}

static int on_upstream(sd_event_source *s, int fd, uint32_t revents, void *userdata);

static void start_connect(EgressConn *c) {
        const EgressSockaddr *a;
        int r;

        c->state = STATE_CONNECT;
        set_events(c->client_source, 0);
        for (; c->i_addr < c->n_addrs; c->i_addr++) {
                a = &c->addrs[c->i_addr];
                egress_addr_to_string((const struct sockaddr *) &a->sa, c->address, sizeof c->address);
                c->upstream_source = sd_event_source_disable_unref(c->upstream_source);
                c->upstream_fd = safe_close(c->upstream_fd);
                c->upstream_fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (c->upstream_fd < 0)
                        continue;
                /* Exactly the sockaddr that was classified: no string, no second lookup. */
                r = connect(c->upstream_fd, (const struct sockaddr *) &a->sa, a->len);
                if (r < 0 && errno != EINPROGRESS)
                        continue;
                if (sd_event_add_io(c->proxy->event, &c->upstream_source, c->upstream_fd, EPOLLOUT,
                                    on_upstream, c) < 0)
                        return deny(c, 503, "out of resources");
                touch(c);
                return;
        }
        deny(c, 502, "connect to upstream failed");
}

static void connected(EgressConn *c) {
        static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
        int err = 0;
        socklen_t len = sizeof err;

        if (getsockopt(c->upstream_fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
                c->i_addr++;
                return start_connect(c);
        }
        if (send(c->client_fd, ok, sizeof ok - 1, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t) sizeof ok - 1)
                return finish(c, EGRESS_DECISION_DENIED, "client gone before the tunnel opened");
        c->state = STATE_HELLO;
        set_events(c->upstream_source, 0);
        set_events(c->client_source, EPOLLIN);
        touch(c);
        if (c->len > 0)
                check_hello(c); /* the client sent its ClientHello right after the head */
}

static void start_relay(EgressConn *c);

static void check_hello(EgressConn *c) {
        _cleanup_free_ char *sni = NULL, *norm = NULL;
        const char *reason = NULL;
        EgressAuditRecord rec;
        int r;

        r = egress_tls_parse_sni(c->buf, c->len, &sni, &reason);
        if (r == 0 && c->len < EGRESS_TLS_RECORD_MAX)
                return;
        if (r == -ENOENT && c->req.kind != EGRESS_HOST_NAME)
                r = 1; /* an IP literal tunnel (when policy allows them) carries no name to compare */
        else if (r == 1 && c->req.kind != EGRESS_HOST_NAME)
                r = -EPROTO, reason = "SNI present on a tunnel to an IP literal";
        else if (r == 1 && (egress_name_normalize(sni, strlen(sni), &norm) < 0 || !streq(norm, c->name)))
                r = -EPROTO, reason = "TLS SNI differs from the CONNECT host";
        if (r <= 0)
                return finish(c, EGRESS_DECISION_DENIED, reason ?: "ClientHello too large");
        rec = record(c, NULL, 200);
        rec.sni = norm;
        c->proxy->stats.allowed++;
        egress_audit(EGRESS_DECISION_ALLOWED, &rec);
        c->state = STATE_FORWARD;
        c->off = 0;
        set_events(c->client_source, 0);
        set_events(c->upstream_source, EPOLLOUT);
}

static void read_hello(EgressConn *c) {
        ssize_t n;

        n = recv(c->client_fd, c->buf + c->len, EGRESS_TLS_RECORD_MAX - c->len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0)
                return finish(c, EGRESS_DECISION_DENIED, "client closed before a TLS ClientHello");
        c->len += (size_t) n;
        touch(c);
        check_hello(c);
}

static void forward_hello(EgressConn *c) {
        ssize_t n;

        n = send(c->upstream_fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n < 0)
                return finish(c, EGRESS_DECISION_CLOSED, "upstream write failed");
        c->off += (size_t) n;
        c->up.bytes += (size_t) n;
        c->proxy->stats.bytes_up += (size_t) n;
        touch(c);
        if (c->off == c->len)
                start_relay(c);
}

/* Moves what can move from src through d's pipe to dst without blocking. Returns < 0 on a hard error,
 * -EDQUOT when the job's byte cap is reached. */
static int pump(EgressConn *c, Dir *d, int src, int dst, uint64_t *job_bytes) {
        EgressStats *st = &c->proxy->stats;
        uint64_t max = cfg(c)->max_bytes;
        ssize_t n;

        for (;;) {
                bool progress = false;

                if (!d->eof && d->in_pipe < PIPE_CHUNK) {
                        size_t want = PIPE_CHUNK - d->in_pipe, used = st->bytes_up + st->bytes_down;

                        if (used >= max)
                                return -EDQUOT;
                        if (want > max - used)
                                want = (size_t) (max - used);
                        n = splice(src, NULL, d->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                        if (n == 0)
                                d->eof = true;
                        else if (n > 0) {
                                d->in_pipe += (size_t) n;
                                d->bytes += (size_t) n;
                                *job_bytes += (size_t) n;
                                progress = true;
                        } else if (errno != EAGAIN && errno != EINTR)
                                return -errno;
                }
                if (d->in_pipe > 0) {
                        n = splice(d->pipe[0], NULL, dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                        if (n > 0) {
                                d->in_pipe -= (size_t) n;
                                progress = true;
                        } else if (n < 0 && errno != EAGAIN && errno != EINTR)
                                return -errno;
                }
                if (!progress)
                        break;
        }
        if (d->eof && d->in_pipe == 0 && !d->shut) {
                shutdown(dst, SHUT_WR);
                d->shut = true;
        }
        return 0;
}

static void relay(EgressConn *c) {
        EgressStats *st = &c->proxy->stats;
        uint64_t before = c->up.bytes + c->down.bytes;
        int r;

        r = pump(c, &c->up, c->client_fd, c->upstream_fd, &st->bytes_up);
        if (r >= 0)
                r = pump(c, &c->down, c->upstream_fd, c->client_fd, &st->bytes_down);
        if (r == -EDQUOT)
                return finish(c, EGRESS_DECISION_CLOSED, "job byte cap reached");
        if (r < 0)
                return finish(c, EGRESS_DECISION_CLOSED, r == -EPIPE || r == -ECONNRESET ? "reset" : "I/O error");
        if (c->up.shut && c->down.shut)
                return finish(c, EGRESS_DECISION_CLOSED, "done");
        if (c->up.bytes + c->down.bytes != before)
                touch(c);
        set_events(c->client_source, (!c->up.eof && c->up.in_pipe < PIPE_CHUNK ? EPOLLIN : 0) |
                                     (c->down.in_pipe > 0 ? EPOLLOUT : 0));
        set_events(c->upstream_source, (!c->down.eof && c->down.in_pipe < PIPE_CHUNK ? EPOLLIN : 0) |
                                       (c->up.in_pipe > 0 ? EPOLLOUT : 0));
}

static void start_relay(EgressConn *c) {
        if (pipe2(c->up.pipe, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(c->down.pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return finish(c, EGRESS_DECISION_CLOSED, "out of pipes");
        c->state = STATE_RELAY;
        free(c->buf);
        c->buf = NULL;
        relay(c);
}

static void linger_drain(EgressConn *c) {
        char sink[4096];
        ssize_t n = recv(c->client_fd, sink, sizeof sink, MSG_DONTWAIT);

        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                egress_conn_free(c);
}

static int on_client(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        EgressConn *c = userdata;

        switch (c->state) {
        case STATE_HEAD:
                read_head(c);
                break;
        case STATE_HELLO:
                read_hello(c);
                break;
        case STATE_RELAY:
                relay(c);
                break;
        case STATE_LINGER:
                linger_drain(c);
                break;
        default:
                set_events(s, 0);
        }
        return 0;
}

static int on_upstream(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        EgressConn *c = userdata;

        switch (c->state) {
        case STATE_CONNECT:
                connected(c);
                break;
        case STATE_FORWARD:
                forward_hello(c);
                break;
        case STATE_RELAY:
                relay(c);
                break;
        default:
                set_events(s, 0);
        }
        return 0;
}

int egress_conn_new(EgressProxy *p, int fd) {
        _cleanup_close_ int cfd = fd;
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        EgressConn *c;
        int r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        *c = (EgressConn) { .proxy = p, .id = ++p->next_id, .client_fd = TAKE_FD(cfd), .upstream_fd = -EBADF,
                            .up.pipe = { -EBADF, -EBADF }, .down.pipe = { -EBADF, -EBADF },
                            .next = p->conns };
        if (p->conns)
                p->conns->prev = c;
        p->conns = c;
        p->n_conns++;
        p->stats.connections++;
        if (getpeername(c->client_fd, (struct sockaddr *) &peer, &plen) >= 0)
                egress_addr_to_string((struct sockaddr *) &peer, c->client, sizeof c->client);
        sd_event_now(p->event, CLOCK_MONOTONIC, &c->start);
        c->buf = malloc(EGRESS_TLS_RECORD_MAX);
        r = c->buf ? 0 : -ENOMEM;
        if (r >= 0)
                r = sd_event_add_io(p->event, &c->client_source, c->client_fd, EPOLLIN, on_client, c);
        if (r >= 0)
                r = sd_event_add_time(p->event, &c->timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_timer, c);
        if (r < 0) {
                egress_conn_free(c);
                return r;
        }
        touch(c);
        return 0;
}

/* The live tunnels' totals are in the proxy's stats already; this ends them at shutdown, recorded. */
void egress_conn_close_all(EgressProxy *p) {
        while (p->conns)
                finish(p->conns, EGRESS_DECISION_CLOSED, "proxy stopping");
}
