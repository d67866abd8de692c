/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-config.h: pond-broker's per-job configuration (one JSON file written by the supervisor, see
 * docs/broker.md) and where each credential's real secret lives once unsealed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

#define BROKER_CREDENTIALS_MAX 8
#define BROKER_RULES_MAX 32
#define BROKER_NAME_MAX 32
#define BROKER_KEY_MAX 1024
#define BROKER_PATH_MAX 256
#define BROKER_CONFIG_MAX_BYTES (256 * 1024)

/* How the broker tells its supervisor that the job's budget is spent: at once its unit's status text
 * (sd_notify STATUS=) starts with BROKER_STATUS_CEILING, and after the grace period it exits with
 * BROKER_EXIT_CEILING. */
#define BROKER_STATUS_CEILING "cost ceiling reached"
#define BROKER_EXIT_CEILING 3
/* A credential does not open for this job and worker (sealed for another, or altered): the broker does
 * not start, and the supervisor refuses the job before its payload runs. */
#define BROKER_EXIT_CREDENTIAL 4

typedef enum BrokerMethod {
        BROKER_METHOD_GET,
        BROKER_METHOD_POST,
        BROKER_METHOD_PUT,
        BROKER_METHOD_PATCH,
        BROKER_METHOD_DELETE,
        _BROKER_METHOD_MAX,
        _BROKER_METHOD_INVALID = -EINVAL,
} BrokerMethod;

BrokerMethod broker_method_from_string(const char *s);

/* "POST /v1/messages" matches that path exactly; "GET /v1/models/<star>" matches "/v1/models/" plus one or
 * more further bytes (never "/v1/models" itself: list both when both are needed). */
typedef struct BrokerRule {
        BrokerMethod method;
        char *path;             /* without the trailing "*" */
        bool prefix;
} BrokerRule;

typedef struct BrokerCredential {
        char *name;             /* [a-z0-9-]{1,32}: the first path segment, /NAME/... */
        char *upstream;         /* https://HOST[:PORT][/BASE], no trailing slash, no user, query or fragment */
        char *inject_header;    /* lowercase header name */
        char *inject_prefix;    /* the header value is prefix + key + suffix ("Bearer " + key + "") */
        char *inject_suffix;
        BrokerRule rules[BROKER_RULES_MAX];
        size_t n_rules;
        char *dummy_presented;  /* prefix + dummy key + suffix: what the job must send in inject_header */
        char *env_key;          /* for the supervisor: the job's API-key and base-URL variables */
        char *env_base_url;
        char *sealed;           /* optional sealed blob, for the caller's unsealing step; never the secret */
        char *secret;           /* sodium_malloc'd, NUL-terminated, read-only; NULL until set */
        size_t secret_len;
} BrokerCredential;

typedef struct BrokerConfig {
        char *job_id;
        char *listen;           /* ADDR:PORT; NULL: a socket from systemd */
        uint64_t max_cost_cents;
        char *prices;           /* path of the price table */
        char *stats_file;       /* absolute path of the totals written at the ceiling and at exit, or NULL */
        uint64_t max_request_bytes;
        uint64_t max_response_bytes;
        unsigned timeout_sec;   /* per upstream request, total */
        unsigned max_connections;
        BrokerCredential credentials[BROKER_CREDENTIALS_MAX];
        size_t n_credentials;
} BrokerConfig;

/* Strict: unknown keys, duplicate keys, wrong types and values out of bounds are refused, with a message
 * naming the field. On failure *ret is untouched. */
int broker_config_parse(const char *text, size_t len, BrokerConfig *ret, char **ret_error);
int broker_config_load(const char *path, BrokerConfig *ret, char **ret_error);
/* Frees everything, wiping and sodium_free()ing the secrets. */
void broker_config_done(BrokerConfig *c);

BrokerCredential *broker_config_find(const BrokerConfig *c, const char *name, size_t name_len);

/* Copies an already unsealed secret into sodium_malloc'd read-only memory (the caller wipes its own copy).
 * The secret must be 1..BROKER_KEY_MAX printable ASCII bytes without spaces: it becomes a header value.
 * -EEXIST if the credential already has one. */
int broker_credential_set_secret(BrokerCredential *cred, const void *secret, size_t len);
/* Fail closed: every credential must have its secret before the broker listens. */
int broker_config_check_secrets(const BrokerConfig *c, char **ret_error);

/* A key or dummy: 1..BROKER_KEY_MAX bytes of printable ASCII other than space. */
bool broker_key_is_valid(const char *s, size_t len);
