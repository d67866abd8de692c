/* broker-config.c: reads and validates pond-broker's configuration file, and holds the credentials' real
 * secrets in sodium_malloc'd memory. The file comes from the supervisor, but is checked as strictly as a
 * job spec: a typo must refuse the broker, never widen what it lets through. */
#include <curl/curl.h>
#include <inttypes.h>
#include <sodium.h>

#include "broker-config.h"
#include "errmsg.h"
#include "fileio.h"
#include "jobid.h"
#include "json-strict.h"

static const char *const method_table[_BROKER_METHOD_MAX] = {
        [BROKER_METHOD_GET] = "GET",
        [BROKER_METHOD_POST] = "POST",
        [BROKER_METHOD_PUT] = "PUT",
        [BROKER_METHOD_PATCH] = "PATCH",
        [BROKER_METHOD_DELETE] = "DELETE",
};

const char *broker_method_to_string(BrokerMethod m) {
        return m >= 0 && m < _BROKER_METHOD_MAX ? method_table[m] : NULL;
}

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

static bool name_is_valid(const char *s) {
        size_t n = strlen(s);

        return n > 0 && n <= BROKER_NAME_MAX && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* Lowercase RFC 9110 token; the header the key goes into. */
static bool header_name_is_valid(const char *s) {
        size_t n = strlen(s);

        return n > 0 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* Every key of o must be one of allowed (NULL-terminated). */
static int check_keys(json_object *o, const char *what, const char *const *allowed, char **ret_error) {
        json_object_object_foreach(o, key, val) {
                bool ok = false;
                (void) val;
                for (size_t i = 0; allowed[i]; i++)
                        ok = ok || streq(key, allowed[i]);
                if (!ok)
                        return error_set(ret_error, -EINVAL, "%s: unknown key '%s'.", what, key);
        }
        return 0;
}

static int get_object(json_object *o, const char *key, json_type type, bool required, json_object **ret,
                      char **ret_error) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !v) {
                *ret = NULL;
                return required ? error_set(ret_error, -EINVAL, "'%s' is required.", key) : 0;
        }
        if (!json_object_is_type(v, type))
                return error_set(ret_error, -EINVAL, "'%s' must be a %s.", key, json_type_to_name(type));
        *ret = v;
        return 1;
}

static int get_string(json_object *o, const char *key, bool required, size_t max, char **ret, char **ret_error) {
        json_object *v;
        char *s;
        int r;

        r = get_object(o, key, json_type_string, required, &v, ret_error);
        if (r <= 0)
                return r;
        if ((size_t) json_object_get_string_len(v) > max)
                return error_set(ret_error, -EINVAL, "'%s' is longer than %zu bytes.", key, max);
        s = strdup(json_object_get_string(v));
        if (!s)
                return -ENOMEM;
        free(*ret);
        *ret = s;
        return 1;
}

static int get_u64(json_object *o, const char *key, uint64_t min, uint64_t max, uint64_t *ret, char **ret_error) {
        json_object *v;
        int64_t i;
        int r;

        r = get_object(o, key, json_type_int, false, &v, ret_error);
        if (r <= 0)
                return r;
        i = json_object_get_int64(v);
        if (i < 0 || (uint64_t) i < min || (uint64_t) i > max)
                return error_set(ret_error, -EINVAL, "'%s' must be %" PRIu64 "..%" PRIu64 ".", key, min, max);
        *ret = (uint64_t) i;
        return 1;
}

/* https only, a host, no credentials, query or fragment: the key must go nowhere else. */
static int check_upstream(char *url, char **ret_error) {
        CURLU *u = curl_url();
        char *scheme = NULL, *user = NULL, *query = NULL, *fragment = NULL, *host = NULL;
        size_t n = strlen(url);
        int r = 0;

        if (!u)
                return -ENOMEM;
        if (n > 0 && url[n - 1] == '/')
                url[n - 1] = 0;
        if (strncmp(url, "https://", 8) != 0 || strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                        "0123456789-._~:/[]") != strlen(url) ||
            curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK || !streq(scheme, "https") ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0] ||
            curl_url_get(u, CURLUPART_USER, &user, 0) != CURLUE_NO_USER ||
            curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_NO_QUERY ||
            curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0) != CURLUE_NO_FRAGMENT)
                r = error_set(ret_error, -EINVAL, "'upstream' must be https://HOST[:PORT][/PATH] without user, "
                              "query or fragment.");
        curl_free(scheme);
        curl_free(user);
        curl_free(query);
        curl_free(fragment);
        curl_free(host);
        curl_url_cleanup(u);
        return r;
}

/* A path of [A-Za-z0-9/_.~-] starting with "/", no "//", no "." or ".." segment; "/<star>" at the end only (a prefix rule). */
static int parse_rule(const char *s, BrokerRule *ret, char **ret_error) {
        const char *sp = strchr(s, ' ');
        _cleanup_free_ char *method = NULL, *path = NULL;
        size_t n;

        if (!sp)
                return error_set(ret_error, -EINVAL, "'allow' entries are \"METHOD /path\", got '%s'.", s);
        method = strndup(s, (size_t) (sp - s));
        path = strdup(sp + 1);
        if (!method || !path)
                return -ENOMEM;
        ret->method = broker_method_from_string(method);
        if (ret->method < 0)
                return error_set(ret_error, -EINVAL, "'allow': unknown method '%s' (GET, POST, PUT, PATCH, DELETE).",
                                 method);
        n = strlen(path);
        ret->prefix = n >= 2 && streq(path + n - 2, "/*");
        if (ret->prefix)
                path[n - 1] = 0;
        if (path[0] != '/' || strlen(path) > BROKER_PATH_MAX || strstr(path, "//") || strstr(path, "/./") ||
            strstr(path, "/../") || strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                 "/_.~-") != strlen(path))
                return error_set(ret_error, -EINVAL, "'allow': invalid path '%s'.", sp + 1);
        ret->path = TAKE_PTR(path);
        return 0;
}

static int parse_inject(json_object *o, BrokerCredential *c, char **ret_error) {
        static const char *const keys[] = { "header", "format", NULL };
        _cleanup_free_ char *format = NULL;
        const char *k;
        int r;

        r = check_keys(o, "'inject'", keys, ret_error);
        if (r >= 0)
                r = get_string(o, "header", true, 64, &c->inject_header, ret_error);
        if (r >= 0)
                r = get_string(o, "format", true, 64, &format, ret_error);
        if (r < 0)
                return r;
        for (char *p = c->inject_header; *p; p++)
                *p = (char) (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        if (!header_name_is_valid(c->inject_header) || streq(c->inject_header, "host") ||
            streq(c->inject_header, "content-length") || streq(c->inject_header, "transfer-encoding"))
                return error_set(ret_error, -EINVAL, "'inject.header': invalid header name '%s'.", c->inject_header);
        k = strstr(format, "{key}");
        if (!k || strstr(k + 5, "{key}") || strspn(format, " !#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                            "[]^_`abcdefghijklmnopqrstuvwxyz{|}~") != strlen(format))
                return error_set(ret_error, -EINVAL, "'inject.format' must contain \"{key}\" once, in printable ASCII.");
        c->inject_prefix = strndup(format, (size_t) (k - format));
        c->inject_suffix = strdup(k + 5);
        return c->inject_prefix && c->inject_suffix ? 0 : -ENOMEM;
}

static int parse_allow(json_object *a, BrokerCredential *c, char **ret_error) {
        size_t n = json_object_array_length(a);
        int r;

        if (n == 0 || n > BROKER_RULES_MAX)
                return error_set(ret_error, -EINVAL, "'allow' needs 1..%d entries.", BROKER_RULES_MAX);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(a, i);
                if (!json_object_is_type(e, json_type_string))
                        return error_set(ret_error, -EINVAL, "'allow' entries are strings \"METHOD /path\".");
                r = parse_rule(json_object_get_string(e), &c->rules[c->n_rules], ret_error);
                if (r < 0)
                        return r;
                c->n_rules++;
        }
        return 0;
}

static int parse_env(json_object *o, BrokerCredential *c, char **ret_error) {
        static const char *const keys[] = { "key", "base_url", NULL };
        int r;

        r = check_keys(o, "'env'", keys, ret_error);
        if (r >= 0)
                r = get_string(o, "key", true, 64, &c->env_key, ret_error);
        if (r >= 0)
                r = get_string(o, "base_url", true, 64, &c->env_base_url, ret_error);
        if (r < 0)
                return r;
        if (strspn(c->env_key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(c->env_key) ||
            strspn(c->env_base_url, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(c->env_base_url) ||
            !c->env_key[0] || !c->env_base_url[0])
                return error_set(ret_error, -EINVAL, "'env' names must be [A-Z0-9_]+.");
        return 0;
}

static int parse_credential(json_object *o, BrokerCredential *c, char **ret_error) {
        static const char *const keys[] = { "name", "upstream", "inject", "allow", "dummy_key", "env", "sealed",
                                            NULL };
        _cleanup_free_ char *dummy = NULL;
        json_object *inject, *allow, *env;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return error_set(ret_error, -EINVAL, "'credentials' entries must be objects.");
        r = check_keys(o, "credential", keys, ret_error);
        if (r >= 0)
                r = get_string(o, "name", true, BROKER_NAME_MAX, &c->name, ret_error);
        if (r >= 0 && !name_is_valid(c->name))
                r = error_set(ret_error, -EINVAL, "'name' must be [a-z0-9-]{1,%d}.", BROKER_NAME_MAX);
        if (r >= 0)
                r = get_string(o, "upstream", true, 512, &c->upstream, ret_error);
        if (r >= 0)
                r = check_upstream(c->upstream, ret_error);
        if (r >= 0)
                r = get_object(o, "inject", json_type_object, true, &inject, ret_error);
        if (r >= 0)
                r = parse_inject(inject, c, ret_error);
        if (r >= 0)
                r = get_object(o, "allow", json_type_array, true, &allow, ret_error);
        if (r >= 0)
                r = parse_allow(allow, c, ret_error);
        if (r >= 0)
                r = get_string(o, "dummy_key", true, BROKER_KEY_MAX, &dummy, ret_error);
        if (r >= 0 && (strlen(dummy) < 16 || !broker_key_is_valid(dummy, strlen(dummy))))
                r = error_set(ret_error, -EINVAL, "'dummy_key' must be 16..%d printable ASCII bytes, no spaces.",
                              BROKER_KEY_MAX);
        if (r >= 0)
                r = get_object(o, "env", json_type_object, true, &env, ret_error);
        if (r >= 0)
                r = parse_env(env, c, ret_error);
        if (r >= 0)
                r = get_string(o, "sealed", false, 64 * 1024, &c->sealed, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&c->dummy_presented, "%s%s%s", c->inject_prefix, dummy, c->inject_suffix) < 0) {
                c->dummy_presented = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int parse_limits(json_object *o, BrokerConfig *c, char **ret_error) {
        static const char *const keys[] = { "max_request_bytes", "max_response_bytes", "timeout_sec",
                                            "max_connections", NULL };
        uint64_t t = c->timeout_sec, m = c->max_connections;
        int r;

        r = check_keys(o, "'limits'", keys, ret_error);
        if (r >= 0)
                r = get_u64(o, "max_request_bytes", 1024, 64 << 20, &c->max_request_bytes, ret_error);
        if (r >= 0)
                r = get_u64(o, "max_response_bytes", 1024, 1ULL << 30, &c->max_response_bytes, ret_error);
        if (r >= 0)
                r = get_u64(o, "timeout_sec", 1, 3600, &t, ret_error);
        if (r >= 0)
                r = get_u64(o, "max_connections", 1, 1024, &m, ret_error);
        c->timeout_sec = (unsigned) t;
        c->max_connections = (unsigned) m;
        return r < 0 ? r : 0;
}

static int parse_credentials(json_object *a, BrokerConfig *c, char **ret_error) {
        size_t n = json_object_array_length(a);
        int r;

        if (n == 0 || n > BROKER_CREDENTIALS_MAX)
                return error_set(ret_error, -EINVAL, "'credentials' needs 1..%d entries.", BROKER_CREDENTIALS_MAX);
        for (size_t i = 0; i < n; i++) {
                BrokerCredential *cred = &c->credentials[i];
                r = parse_credential(json_object_array_get_idx(a, i), cred, ret_error);
                c->n_credentials = i + 1;
                if (r < 0)
                        return r;
                if (broker_config_find(c, cred->name, strlen(cred->name)) != cred)
                        return error_set(ret_error, -EINVAL, "credential '%s' is listed twice.", cred->name);
        }
        return 0;
}

static int parse_top(json_object *o, BrokerConfig *c, char **ret_error) {
        static const char *const keys[] = { "job_id", "listen", "max_cost_cents", "prices", "credentials",
                                            "limits", "stats_file", NULL };
        json_object *creds, *limits;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return error_set(ret_error, -EINVAL, "The broker configuration must be a JSON object.");
        r = check_keys(o, "configuration", keys, ret_error);
        if (r >= 0)
                r = get_string(o, "job_id", true, JOB_ID_MAX, &c->job_id, ret_error);
        if (r >= 0 && !job_id_is_valid(c->job_id))
                r = error_set(ret_error, -EINVAL, "'job_id' is not a valid job id.");
        if (r >= 0)
                r = get_string(o, "listen", false, 64, &c->listen, ret_error);
        if (r >= 0)
                r = get_u64(o, "max_cost_cents", 0, 100000000, &c->max_cost_cents, ret_error);
        if (r == 0)
                r = error_set(ret_error, -EINVAL, "'max_cost_cents' is required (0..100000000).");
        if (r >= 0)
                r = get_string(o, "prices", true, 4096, &c->prices, ret_error);
        if (r >= 0)
                r = get_string(o, "stats_file", false, 4096, &c->stats_file, ret_error);
        if (r > 0 && c->stats_file[0] != '/')
                r = error_set(ret_error, -EINVAL, "'stats_file' must be an absolute path.");
        if (r >= 0)
                r = get_object(o, "limits", json_type_object, false, &limits, ret_error);
        if (r > 0)
                r = parse_limits(limits, c, ret_error);
        if (r >= 0)
                r = get_object(o, "credentials", json_type_array, true, &creds, ret_error);
        if (r >= 0)
                r = parse_credentials(creds, c, ret_error);
        return r < 0 ? r : 0;
}

int broker_config_parse(const char *text, size_t len, BrokerConfig *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        BrokerConfig c = {
                .max_request_bytes = 8 << 20,
                .max_response_bytes = 64 << 20,
                .timeout_sec = 600,
                .max_connections = 32,
        };
        int r;

        r = json_parse_strict(text, len, BROKER_CONFIG_MAX_BYTES, 8, &o, ret_error);
        if (r < 0)
                return r;
        r = parse_top(o, &c, ret_error);
        if (r < 0) {
                broker_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int broker_config_load(const char *path, BrokerConfig *ret, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_full_file(path, BROKER_CONFIG_MAX_BYTES, &text, &len);
        if (r < 0)
                return error_set(ret_error, r, "Failed to read broker configuration '%s': %s", path, strerror(-r));
        return broker_config_parse(text, len, ret, ret_error);
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
