/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-request.h: what pond-broker lets through: routing /NAME/... to a credential, the dummy-key check,
 * the method and path allowlist, and which headers may cross in each direction. Pure functions (no I/O),
 * shared by the server and the fuzz target. */
#pragma once

#include "sidecar/broker-config.h"

#define BROKER_URI_MAX 2048

typedef struct BrokerRoute {
        BrokerCredential *cred;
        BrokerMethod method;
        const char *rest;       /* inside the URI: path and query after /NAME, appended to the upstream URL */
        size_t path_len;        /* bytes of rest before "?" */
} BrokerRoute;

/* Returns the request header's value (first of that name, case-insensitive) or NULL. */
typedef const char *(*BrokerHeaderLookup)(void *userdata, const char *name);

/* Checks, in this order: the URI's syntax (400), the credential /NAME (404), the dummy key in the
 * credential's header (401; constant-time), the method (405 if unknown) and method+path against the
 * credential's allowlist (403). Returns 0 and fills ret, or the HTTP status with a static reason. The
 * raw URI is checked before any decoding: no "%", no "//", no "." or ".." segment. */
int broker_check_request(const BrokerConfig *c, const char *method, const char *uri, BrokerHeaderLookup lookup,
                         void *userdata, BrokerRoute *ret, const char **ret_reason);

/* Constant time in the content of presented (its length may show). */
bool broker_key_matches(const BrokerCredential *c, const char *presented);

/* Client -> upstream: drops hop-by-hop headers, Host, Content-Length, Expect, Accept-Encoding (the
 * broker meters plain bodies), every credential-bearing header (Authorization, X-Api-Key, the injection
 * header, cookies, proxy headers) and forwarding headers. name is compared case-insensitively. */
bool broker_request_header_forwardable(const BrokerCredential *c, const char *name);
/* Upstream -> client: an allowlist (content-type, retry-after, request ids, rate-limit and vendor headers). */
bool broker_response_header_forwardable(const char *name);
