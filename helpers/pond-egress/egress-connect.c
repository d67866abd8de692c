/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-connect.c: a strict scanner for the one request pond-egress understands,
 *   CONNECT host:port HTTP/1.1 CRLF *(field-name ":" OWS value CRLF) CRLF
 * (RFC 9110 9.3.6, RFC 9112 3). No general HTTP parser in Debian fits in a few lines (llhttp ships only
 * as Node.js sources), and the grammar needed is tiny, so it is scanned here byte by byte, bounded, and
 * fuzzed (tests/fuzz/fuzz-connect.c). Anything the grammar does not allow is refused, never repaired:
 * bare LF, obs-fold, control bytes, a missing or extra space, absolute-form targets. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "egress-connect.h"

static bool is_tchar(unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *find_crlfcrlf(const char *b, size_t len) {
        for (size_t i = 0; i + 3 < len; i++)
                if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n')
                        return b + i;
        return NULL;
}

/* Refuses early what can never become a request line, so a client speaking TLS (or anything else)
 * straight to the proxy is answered at once instead of at the idle timeout. */
static int check_prefix(const char *b, size_t len, const char **reason) {
        for (size_t i = 0; i < len; i++) {
                if (b[i] == ' ' && i > 0)
                        return 0;
                if (!is_tchar((unsigned char) b[i])) {
                        *reason = "not an HTTP request";
                        return -EBADMSG;
                }
        }
        return 0;
}

static int parse_port(const char *p, size_t n, uint16_t *ret) {
        unsigned v = 0;

        if (n == 0 || n > 5 || (p[0] == '0'))
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -EBADMSG;
                v = v * 10 + (unsigned) (p[i] - '0');
        }
        if (v == 0 || v > 65535)
                return -EBADMSG;
        *ret = (uint16_t) v;
        return 0;
}

static void set_literal(EgressConnectRequest *r, int family, const void *addr) {
        r->literal = (struct sockaddr_storage) {};
        if (family == AF_INET) {
                struct sockaddr_in *s = (struct sockaddr_in *) &r->literal;
                s->sin_family = AF_INET;
                s->sin_port = htons(r->port);
                memcpy(&s->sin_addr, addr, sizeof s->sin_addr);
                r->literal_len = sizeof *s;
                r->kind = EGRESS_HOST_IPV4;
        } else {
                struct sockaddr_in6 *s = (struct sockaddr_in6 *) &r->literal;
                s->sin6_family = AF_INET6;
                s->sin6_port = htons(r->port);
                memcpy(&s->sin6_addr, addr, sizeof s->sin6_addr);
                r->literal_len = sizeof *s;
                r->kind = EGRESS_HOST_IPV6;
        }
}

/* authority-form: uri-host ":" port, uri-host a bracketed IPv6 literal or [A-Za-z0-9.-]+ */
static int parse_authority(const char *t, size_t n, EgressConnectRequest *r, const char **reason) {
        const char *colon = memrchr(t, ':', n), *host = t;
        size_t hl;
        unsigned char a6[16], a4[4];
        bool bracket = n > 0 && t[0] == '[';

        *reason = "CONNECT target is not host:port";
        if (!colon || parse_port(colon + 1, n - (size_t) (colon + 1 - t), &r->port) < 0)
                return -EBADMSG;
        hl = (size_t) (colon - t);
        if (bracket) {
                if (hl < 3 || t[hl - 1] != ']')
                        return -EBADMSG;
                host++;
                hl -= 2;
        }
        if (hl == 0 || hl >= sizeof r->host)
                return -EBADMSG;
        for (size_t i = 0; i < hl; i++) {
                char c = host[i];
                bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        c == '.' || c == '-' || (bracket && c == ':');
                if (!ok) {
                        *reason = "CONNECT host has a byte outside [A-Za-z0-9.-]";
                        return -EBADMSG;
                }
        }
        memcpy(r->host, host, hl);
        r->host[hl] = 0;
        if (bracket) {
                if (inet_pton(AF_INET6, r->host, a6) != 1) {
                        *reason = "CONNECT host is not a valid IPv6 literal";
                        return -EBADMSG;
                }
                set_literal(r, AF_INET6, a6);
        } else if (inet_pton(AF_INET, r->host, a4) == 1)
                set_literal(r, AF_INET, a4);
        else
                r->kind = EGRESS_HOST_NAME;
        return 0;
}

static int parse_request_line(const char *b, size_t n, EgressConnectRequest *r, const char **reason) {
        const char *sp1 = memchr(b, ' ', n), *sp2;
        size_t ml;
        int k;

        *reason = "malformed request line";
        if (!sp1)
                return -EBADMSG;
        ml = (size_t) (sp1 - b);
        sp2 = memchr(sp1 + 1, ' ', n - ml - 1);
        if (ml == 0 || !sp2 || memchr(sp2 + 1, ' ', n - (size_t) (sp2 + 1 - b)))
                return -EBADMSG;
        for (size_t i = 0; i < ml; i++)
                if (!is_tchar((unsigned char) b[i]))
                        return -EBADMSG;
        k = (int) (n - (size_t) (sp2 + 1 - b));
        if (k != 8 || (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0)) {
                *reason = "not HTTP/1.0 or HTTP/1.1";
                return -EBADMSG;
        }
        for (const char *p = sp1 + 1; p < sp2; p++)
                if ((unsigned char) *p <= ' ' || (unsigned char) *p >= 0x7f)
                        return -EBADMSG;
        if (ml != 7 || memcmp(b, "CONNECT", 7) != 0) {
                *reason = "only CONNECT is supported";
                return -EOPNOTSUPP;
        }
        return parse_authority(sp1 + 1, (size_t) (sp2 - sp1 - 1), r, reason);
}

static int parse_header_line(const char *b, size_t n, const char **reason) {
        const char *colon = memchr(b, ':', n);

        *reason = "malformed header line";
        if (!colon || colon == b)
                return -EBADMSG;
        for (const char *p = b; p < colon; p++)
                if (!is_tchar((unsigned char) *p))
                        return -EBADMSG;
        for (const char *p = colon + 1; p < b + n; p++) {
                unsigned char c = (unsigned char) *p;
                if ((c < ' ' && c != '\t') || c == 0x7f)
                        return -EBADMSG;
        }
        return 0;
}

int egress_connect_parse(const void *buf, size_t len, EgressConnectRequest *ret, size_t *ret_head_len,
                         const char **ret_reason) {
        const char *b = buf, *end, *line, *reason = NULL, *dummy;
        size_t scan = len < EGRESS_HEAD_MAX ? len : EGRESS_HEAD_MAX, n_headers = 0;
        int r;

        ret_reason = ret_reason ?: &dummy;
        end = find_crlfcrlf(b, scan);
        if (!end) {
                r = check_prefix(b, scan, &reason);
                if (r < 0 || len < EGRESS_HEAD_MAX) {
                        *ret_reason = reason;
                        return r;
                }
                *ret_reason = "request head too large";
                return -EMSGSIZE;
        }
        end += 2; /* the head's lines, each ending in CRLF, end here */
        line = b;
        for (bool first = true; line < end; first = false) {
                const char *cr = memchr(line, '\r', (size_t) (end - line));
                size_t n = (size_t) (cr - line);

                /* memchr finds a CR within [line, end): end itself was preceded by CRLF. */
                if (cr[1] != '\n' || memchr(line, '\n', n)) {
                        *ret_reason = "bare CR or LF in request head";
                        return -EBADMSG;
                }
                if (first)
                        r = parse_request_line(line, n, ret, &reason);
                else if (++n_headers > EGRESS_HEADERS_MAX || line[0] == ' ' || line[0] == '\t')
                        r = -EBADMSG, reason = "too many header lines or obsolete line folding";
                else
                        r = parse_header_line(line, n, &reason);
                if (r < 0) {
                        *ret_reason = reason;
                        return r;
                }
                line = cr + 2;
        }
        *ret_head_len = (size_t) (end - b) + 2;
        return 1;
}
