/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-request.c: the request checks of pond-broker (see broker-request.h). Everything here works on
 * the raw request line, before any percent-decoding, so what is checked is what goes upstream. */
#include <sodium.h>
#include <strings.h>

#include "broker-request.h"

#define PATH_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.~:-"
#define QUERY_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.~:-=&%+,"

static bool path_is_clean(const char *p, size_t n) {
        if (n == 0 || p[0] != '/' || strspn(p, PATH_CHARS) < n)
                return false;
        /* Segments "." and ".." and empty ones: upstream servers may normalize them away, which would
         * turn an allowed-looking path into another one. */
        for (size_t i = 0; i < n; i++) {
                size_t seg;
                if (p[i] != '/')
                        continue;
                seg = strcspn(p + i + 1, "/?");
                if (i + 1 + seg > n)
                        seg = n - i - 1;
                if ((seg == 0 && i + 1 < n) || (seg == 1 && p[i + 1] == '.') ||
                    (seg == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
                        return false;
        }
        return true;
}

static bool rule_matches(const BrokerRule *r, BrokerMethod m, const char *path, size_t n) {
        size_t l = strlen(r->path);

        if (r->method != m)
                return false;
        if (!r->prefix)
                return l == n && memcmp(r->path, path, n) == 0;
        return n > l && memcmp(r->path, path, l) == 0;
}

bool broker_key_matches(const BrokerCredential *c, const char *presented) {
        size_t n;

        if (!presented || !c->dummy_presented)
                return false;
        n = strlen(c->dummy_presented);
        if (strlen(presented) != n)
                return false;
        return sodium_memcmp(presented, c->dummy_presented, n) == 0;
}

static int split_uri(const BrokerConfig *c, const char *uri, BrokerRoute *ret, const char **ret_reason) {
        size_t n, name_len;
        const char *q;

        if (!uri || uri[0] != '/' || (n = strnlen(uri, BROKER_URI_MAX + 1)) > BROKER_URI_MAX)
                return *ret_reason = "malformed or too long request target", 400;
        name_len = strcspn(uri + 1, "/?");
        ret->cred = broker_config_find(c, uri + 1, name_len);
        if (!ret->cred)
                return *ret_reason = "no such credential: the path must start with /NAME/", 404;
        ret->rest = uri + 1 + name_len;
        q = strchr(ret->rest, '?');
        ret->path_len = q ? (size_t) (q - ret->rest) : strlen(ret->rest);
        if (!path_is_clean(ret->rest, ret->path_len) || (q && strspn(q + 1, QUERY_CHARS) != strlen(q + 1)))
                return *ret_reason = "path or query has characters or segments the broker does not pass", 400;
        return 0;
}

int broker_check_request(const BrokerConfig *c, const char *method, const char *uri, BrokerHeaderLookup lookup,
                         void *userdata, BrokerRoute *ret, const char **ret_reason) {
        BrokerRoute route = {};
        int status;

        status = split_uri(c, uri, &route, ret_reason);
        if (status != 0)
                return status;
        if (!broker_key_matches(route.cred, lookup(userdata, route.cred->inject_header)))
                return *ret_reason = "missing or wrong key for this credential", 401;
        route.method = broker_method_from_string(method);
        if (route.method < 0)
                return *ret_reason = "method not allowed", 405;
        for (size_t i = 0; i < route.cred->n_rules; i++)
                if (rule_matches(&route.cred->rules[i], route.method, route.rest, route.path_len)) {
                        *ret = route;
                        return 0;
                }
        return *ret_reason = "method and path not in this credential's allowlist", 403;
}

bool broker_request_header_forwardable(const BrokerCredential *c, const char *name) {
        static const char *const drop[] = {
                "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length", "expect",
                "accept-encoding", "authorization", "x-api-key", "api-key", "cookie", "forwarded", "via",
                "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip",
        };

        if (!name || !name[0] || (c && c->inject_header && strcasecmp(name, c->inject_header) == 0))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(drop); i++)
                if (strcasecmp(name, drop[i]) == 0)
                        return false;
        return true;
}

bool broker_response_header_forwardable(const char *name) {
        static const char *const exact[] = {
                "content-type", "retry-after", "request-id", "x-request-id", "cache-control",
        };
        static const char *const prefixes[] = { "anthropic-", "openai-", "x-ratelimit-" };

        if (!name)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(exact); i++)
                if (strcasecmp(name, exact[i]) == 0)
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncasecmp(name, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}
