/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-config.c: reads and validates pond-broker's configuration file, and holds the credentials' real
 * secrets in sodium_malloc'd memory. The file comes from the supervisor, but is checked as strictly as a
 * job spec: a typo must refuse the broker, never widen what it lets through. */
#include <curl/curl.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>

#include "basic/errmsg.h"
#include "basic/jobid.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "sidecar/broker-config.h"

static const char *const method_table[_BROKER_METHOD_MAX] = {
        [BROKER_METHOD_GET] = "GET",
        [BROKER_METHOD_POST] = "POST",
        [BROKER_METHOD_PUT] = "PUT",
        [BROKER_METHOD_PATCH] = "PATCH",
        [BROKER_METHOD_DELETE] = "DELETE",
};

BrokerMethod broker_method_from_string(const char *s) {
        for (BrokerMethod m = 0; s && m < _BROKER_METHOD_MAX; m++)
                if (streq(s, method_table[m]))
                        return m;
        return _BROKER_METHOD_INVALID;
}

bool broker_key_is_valid(const char *s, size_t len) {
        if (!s || len == 0 || len > BROKER_KEY_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] <= ' ' || s[i] > '~')
                        return false;
        return true;
}

static const char *check_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > BROKER_NAME_MAX || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
                return "must be [a-z0-9-]{1," STRINGIFY(BROKER_NAME_MAX) "}";
        return NULL;
}

static const char *check_job_id(const char *s) {
        return job_id_is_valid(s) ? NULL : "is not a valid job id";
}

static const char *check_absolute_path(const char *s) {
        return s[0] == '/' ? NULL : "must be an absolute path";
}

static const char *check_dummy_key(const char *s) {
        if (strlen(s) < 16 || !broker_key_is_valid(s, strlen(s)))
                return "must be 16.." STRINGIFY(BROKER_KEY_MAX) " printable ASCII bytes, no spaces";
        return NULL;
}

static const char *check_env_name(const char *s) {
        if (!s[0] || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(s))
                return "must be [A-Z0-9_]+";
        return NULL;
}

/* Lowercase RFC 9110 token; the header the key goes into. */
static bool header_name_is_valid(const char *s) {
        size_t n = strlen(s);

        return n > 0 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* libcurl's URL parser, loaded on first use. The supervisor checks a job's broker configuration with this
 * same parser before anything runs; linked, libcurl and the libraries behind it (LDAP, Kerberos, GnuTLS, ...)
 * would sit in every job's supervisor for the job's whole life, 0.7 MiB of private memory each
 * (docs/benchmarks.md, "Density"). pond-broker links libcurl for its requests: there dlopen() finds it. */
static struct {
        __typeof__(curl_url) *url;
        __typeof__(curl_url_set) *url_set;
        __typeof__(curl_url_get) *url_get;
        __typeof__(curl_url_cleanup) *url_cleanup;
        __typeof__(curl_free) *free;
} curl_dl;
static bool curl_dl_ok;

static void curl_dl_load(void) {
        void *dl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

        if (!dl) {
                log_error("Cannot load libcurl to check the broker's upstream URLs: %s", dlerror());
                return;
        }
        curl_dl.url = (__typeof__(curl_dl.url)) dlsym(dl, "curl_url");
        curl_dl.url_set = (__typeof__(curl_dl.url_set)) dlsym(dl, "curl_url_set");
        curl_dl.url_get = (__typeof__(curl_dl.url_get)) dlsym(dl, "curl_url_get");
        curl_dl.url_cleanup = (__typeof__(curl_dl.url_cleanup)) dlsym(dl, "curl_url_cleanup");
        curl_dl.free = (__typeof__(curl_dl.free)) dlsym(dl, "curl_free");
        curl_dl_ok = curl_dl.url && curl_dl.url_set && curl_dl.url_get && curl_dl.url_cleanup && curl_dl.free;
        if (!curl_dl_ok)
                log_error("libcurl lacks the URL API (curl_url*): cannot check the broker's upstream URLs.");
}

/* https only, a host, no credentials, query or fragment: the key must go nowhere else. Without libcurl's
 * parser nothing is valid. */
static bool upstream_is_valid(const char *url) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        CURLU *u;
        char *scheme = NULL, *user = NULL, *query = NULL, *fragment = NULL, *host = NULL;
        bool ok;

        if (pthread_once(&once, curl_dl_load) != 0 || !curl_dl_ok)
                return false;
        u = curl_dl.url();
        ok = u && strncmp(url, "https://", 8) == 0 &&
             strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789-._~:/[]") == strlen(url) &&
             curl_dl.url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
             curl_dl.url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK && streq(scheme, "https") &&
             curl_dl.url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host[0] &&
             curl_dl.url_get(u, CURLUPART_USER, &user, 0) == CURLUE_NO_USER &&
             curl_dl.url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_NO_QUERY &&
             curl_dl.url_get(u, CURLUPART_FRAGMENT, &fragment, 0) == CURLUE_NO_FRAGMENT;
        curl_dl.free(scheme);
        curl_dl.free(user);
        curl_dl.free(query);
        curl_dl.free(fragment);
        curl_dl.free(host);
        curl_dl.url_cleanup(u);
        return ok;
}

static int parse_upstream(json_object *v, const char *field, void *userdata, char **ret_error) {
        BrokerCredential *c = userdata;
        _cleanup_free_ char *url = strdup(json_object_get_string(v));
        size_t n;

        if (!url)
                return -ENOMEM;
        n = strlen(url);
        if (n > 0 && url[n - 1] == '/')
                url[n - 1] = 0;
        if (!upstream_is_valid(url))
                return error_set(ret_error, -EINVAL, "%s: must be https://HOST[:PORT][/PATH] without user, "
                                 "query or fragment", field);
        free(c->upstream);
        c->upstream = TAKE_PTR(url);
        return 0;
}

/* A path of [A-Za-z0-9/_.~-] starting with "/", no "//", no "." or ".." segment; "/<star>" at the end only
 * (a prefix rule). */
static int parse_rule(const char *s, const char *field, BrokerRule *ret, char **ret_error) {
        const char *sp = strchr(s, ' ');
        _cleanup_free_ char *method = NULL, *path = NULL;
        size_t n;

        if (!sp)
                return error_set(ret_error, -EINVAL, "%s: must be \"METHOD /path\", got '%s'", field, s);
        method = strndup(s, (size_t) (sp - s));
        path = strdup(sp + 1);
        if (!method || !path)
                return -ENOMEM;
        ret->method = broker_method_from_string(method);
        if (ret->method < 0)
                return error_set(ret_error, -EINVAL,
                                 "%s: unknown method '%s' (GET, POST, PUT, PATCH, DELETE)", field, method);
        n = strlen(path);
        ret->prefix = n >= 2 && streq(path + n - 2, "/*");
        if (ret->prefix)
                path[n - 1] = 0;
        if (path[0] != '/' || strlen(path) > BROKER_PATH_MAX || strstr(path, "//") || strstr(path, "/./") ||
            strstr(path, "/../") || strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                 "/_.~-") != strlen(path))
                return error_set(ret_error, -EINVAL, "%s: invalid path '%s'", field, sp + 1);
        ret->path = TAKE_PTR(path);
        return 0;
}

typedef struct Inject {
        char *header;
        char *format;
} Inject;

static const JsonField inject_fields[] = {
        { "header", JSON_STRING, .offset = offsetof(Inject, header), .flags = JSON_MANDATORY | JSON_NULLABLE,
          .max = 64 },
        { "format", JSON_STRING, .offset = offsetof(Inject, format), .flags = JSON_MANDATORY | JSON_NULLABLE,
          .max = 64 },
        {}
};

static int parse_inject(json_object *v, const char *field, void *userdata, char **ret_error) {
        BrokerCredential *c = userdata;
        _cleanup_free_ char *header = NULL, *format = NULL;
        Inject i = {};
        const char *k;
        int r;

        r = json_dispatch(v, field, inject_fields, &i, ret_error);
        header = i.header;
        format = i.format;
        if (r < 0)
                return r;
        for (char *p = header; *p; p++)
                *p = (char) (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        if (!header_name_is_valid(header) || streq(header, "host") || streq(header, "content-length") ||
            streq(header, "transfer-encoding"))
                return error_set(ret_error, -EINVAL, "%s.header: invalid header name '%s'", field, header);
        k = strstr(format, "{key}");
        if (!k || strstr(k + 5, "{key}") || strspn(format, " !#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                            "[]^_`abcdefghijklmnopqrstuvwxyz{|}~") != strlen(format))
                return error_set(ret_error, -EINVAL, "%s.format: must contain \"{key}\" once, in printable ASCII",
                                 field);
        free(c->inject_header);
        free(c->inject_prefix);
        free(c->inject_suffix);
        c->inject_header = TAKE_PTR(header);
        c->inject_prefix = strndup(format, (size_t) (k - format));
        c->inject_suffix = strdup(k + 5);
        return c->inject_prefix && c->inject_suffix ? 0 : -ENOMEM;
}

static int parse_allow(json_object *a, const char *field, void *userdata, char **ret_error) {
        BrokerCredential *c = userdata;
        char elem[JSON_FIELD_MAX];
        int r;

        for (size_t i = 0; i < json_object_array_length(a); i++) {
                const char *s;

                json_field_index(elem, field, i);
                r = json_check_string(json_object_array_get_idx(a, i), elem, SIZE_MAX, &s, ret_error);
                if (r >= 0)
                        r = parse_rule(s, elem, &c->rules[c->n_rules], ret_error);
                if (r < 0)
                        return r;
                c->n_rules++;
        }
        return 0;
}

static const JsonField env_fields[] = {
        { "key",      JSON_STRING, .offset = offsetof(BrokerCredential, env_key),
          .flags = JSON_MANDATORY | JSON_NULLABLE, .max = 64, .check = check_env_name },
        { "base_url", JSON_STRING, .offset = offsetof(BrokerCredential, env_base_url),
          .flags = JSON_MANDATORY | JSON_NULLABLE, .max = 64, .check = check_env_name },
        {}
};

static int parse_env(json_object *v, const char *field, void *userdata, char **ret_error) {
        return json_dispatch(v, field, env_fields, userdata, ret_error);
}

/* The dummy is kept in dummy_presented until the whole credential is read, then wrapped in the inject
 * format (the order of the members is the writer's). */
static const JsonField credential_fields[] = {
        { "name",      JSON_STRING, .offset = offsetof(BrokerCredential, name),
          .flags = JSON_MANDATORY | JSON_NULLABLE, .max = BROKER_NAME_MAX, .check = check_name },
        { "upstream",  JSON_STRING, .callback = parse_upstream, .flags = JSON_MANDATORY | JSON_NULLABLE,
          .max = 512 },
        { "inject",    JSON_OBJECT, .callback = parse_inject, .flags = JSON_MANDATORY | JSON_NULLABLE },
        { "allow",     JSON_ARRAY,  .callback = parse_allow, .flags = JSON_MANDATORY | JSON_NULLABLE,
          .min = 1, .max = BROKER_RULES_MAX },
        { "dummy_key", JSON_STRING, .offset = offsetof(BrokerCredential, dummy_presented),
          .flags = JSON_MANDATORY | JSON_NULLABLE, .max = BROKER_KEY_MAX, .check = check_dummy_key },
        { "env",       JSON_OBJECT, .callback = parse_env, .flags = JSON_MANDATORY | JSON_NULLABLE },
        { "sealed",    JSON_STRING, .offset = offsetof(BrokerCredential, sealed), .flags = JSON_NULLABLE,
          .max = 64 * 1024 },
        {}
};

static int parse_credential(json_object *o, const char *field, BrokerCredential *c, char **ret_error) {
        _cleanup_free_ char *dummy = NULL;
        int r;

        r = json_dispatch(o, field, credential_fields, c, ret_error);
        dummy = TAKE_PTR(c->dummy_presented);
        if (r < 0)
                return r;
        c->dummy_presented = strdupf("%s%s%s", c->inject_prefix, dummy, c->inject_suffix);
        return c->dummy_presented ? 0 : -ENOMEM;
}

static const JsonField limit_fields[] = {
        { "max_request_bytes",  JSON_U64,      .offset = offsetof(BrokerConfig, max_request_bytes),
          .flags = JSON_NULLABLE, .min = 1024, .max = 64 << 20 },
        { "max_response_bytes", JSON_U64,      .offset = offsetof(BrokerConfig, max_response_bytes),
          .flags = JSON_NULLABLE, .min = 1024, .max = 1ULL << 30 },
        { "timeout_sec",        JSON_UNSIGNED, .offset = offsetof(BrokerConfig, timeout_sec),
          .flags = JSON_NULLABLE, .min = 1, .max = 3600 },
        { "max_connections",    JSON_UNSIGNED, .offset = offsetof(BrokerConfig, max_connections),
          .flags = JSON_NULLABLE, .min = 1, .max = 1024 },
        {}
};

static int parse_limits(json_object *v, const char *field, void *userdata, char **ret_error) {
        return json_dispatch(v, field, limit_fields, userdata, ret_error);
}

static int parse_credentials(json_object *a, const char *field, void *userdata, char **ret_error) {
        BrokerConfig *c = userdata;
        char elem[JSON_FIELD_MAX];
        int r;

        for (size_t i = 0; i < json_object_array_length(a); i++) {
                BrokerCredential *cred = &c->credentials[i];

                json_field_index(elem, field, i);
                r = parse_credential(json_object_array_get_idx(a, i), elem, cred, ret_error);
                c->n_credentials = i + 1;   /* freed by broker_config_done() also when half-parsed */
                if (r < 0)
                        return r;
                if (broker_config_find(c, cred->name, strlen(cred->name)) != cred)
                        return error_set(ret_error, -EINVAL, "%s.name: credential '%s' is listed twice", elem,
                                         cred->name);
        }
        return 0;
}

static const JsonField top_fields[] = {
        { "job_id",         JSON_STRING, .offset = offsetof(BrokerConfig, job_id),
          .flags = JSON_MANDATORY | JSON_NULLABLE, .max = JOB_ID_MAX, .check = check_job_id },
        { "listen",         JSON_STRING, .offset = offsetof(BrokerConfig, listen), .flags = JSON_NULLABLE,
          .max = 64 },
        { "max_cost_cents", JSON_U64,    .offset = offsetof(BrokerConfig, max_cost_cents),
          .flags = JSON_MANDATORY | JSON_NULLABLE, .max = 100000000 },
        { "prices",         JSON_STRING, .offset = offsetof(BrokerConfig, prices),
          .flags = JSON_MANDATORY | JSON_NULLABLE, .max = 4096 },
        { "limits",         JSON_OBJECT, .callback = parse_limits, .flags = JSON_NULLABLE },
        { "stats_file",     JSON_STRING, .offset = offsetof(BrokerConfig, stats_file), .flags = JSON_NULLABLE,
          .max = 4096, .check = check_absolute_path },
        { "credentials",    JSON_ARRAY,  .callback = parse_credentials,
          .flags = JSON_MANDATORY | JSON_NULLABLE, .min = 1, .max = BROKER_CREDENTIALS_MAX },
        {}
};

static const JsonDocument broker_config_document = {
        .max_bytes = BROKER_CONFIG_MAX_BYTES,
        .max_depth = 8,
        .fields = top_fields,
};

int broker_config_parse(const char *text, size_t len, BrokerConfig *ret, char **ret_error) {
        BrokerConfig c = {
                .max_request_bytes = 8 << 20,
                .max_response_bytes = 64 << 20,
                .timeout_sec = 600,
                .max_connections = 32,
        };
        int r;

        r = json_document_parse(&broker_config_document, text, len, &c, ret_error);
        if (r < 0) {
                broker_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

static int parse_text(const char *text, size_t len, void *ret, char **ret_error) {
        return broker_config_parse(text, len, ret, ret_error);
}

int broker_config_load(const char *path, BrokerConfig *ret, char **ret_error) {
        return json_load_file(path, BROKER_CONFIG_MAX_BYTES, "broker configuration", parse_text, ret, ret_error);
}

static void credential_done(BrokerCredential *c) {
        free(c->name);
        free(c->upstream);
        free(c->inject_header);
        free(c->inject_prefix);
        free(c->inject_suffix);
        for (size_t i = 0; i < c->n_rules; i++)
                free(c->rules[i].path);
        free(c->dummy_presented);
        free(c->env_key);
        free(c->env_base_url);
        free(c->sealed);
        if (c->secret)
                sodium_free(c->secret);   /* wipes */
        *c = (BrokerCredential) {};
}

void broker_config_done(BrokerConfig *c) {
        free(c->job_id);
        free(c->listen);
        free(c->prices);
        free(c->stats_file);
        for (size_t i = 0; i < c->n_credentials; i++)
                credential_done(&c->credentials[i]);
        *c = (BrokerConfig) {};
}

BrokerCredential *broker_config_find(const BrokerConfig *c, const char *name, size_t name_len) {
        for (size_t i = 0; i < c->n_credentials; i++) {
                const char *n = c->credentials[i].name;
                if (n && strlen(n) == name_len && memcmp(n, name, name_len) == 0)
                        return (BrokerCredential *) &c->credentials[i];
        }
        return NULL;
}

int broker_credential_set_secret(BrokerCredential *cred, const void *secret, size_t len) {
        char *s;

        if (!broker_key_is_valid(secret, len))
                return -EINVAL;
        if (cred->secret)
                return -EEXIST;
        if (sodium_init() < 0)
                return -EIO;
        s = sodium_malloc(len + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, secret, len);
        s[len] = 0;
        (void) sodium_mprotect_readonly(s);
        cred->secret = s;
        cred->secret_len = len;
        return 0;
}

int broker_config_check_secrets(const BrokerConfig *c, char **ret_error) {
        for (size_t i = 0; i < c->n_credentials; i++)
                if (!c->credentials[i].secret)
                        return error_set(ret_error, -ENOKEY, "Credential '%s' has no secret.", c->credentials[i].name);
        return 0;
}
