/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-job-config.c: reads and checks pond-egress's per-job configuration. It comes from the supervisor,
 * but is checked as strictly as a job spec: a typo must refuse the proxy, never widen what it lets out. */
#include <limits.h>

#include "egress-job-config.h"
#include "errmsg.h"
#include "fileio.h"
#include "jobid.h"
#include "json-strict.h"

#define LISTEN_MAX 64

static int want_type(json_object *v, json_type type, const char *key, char **ret_error) {
        if (!json_object_is_type(v, type))
                return error_set(ret_error, -EINVAL, "egress config: '%s' must be a %s.", key,
                                 json_type_to_name(type));
        return 0;
}

static int parse_string(json_object *v, const char *key, size_t max, char **ret, char **ret_error) {
        char *s;
        int r;

        r = want_type(v, json_type_string, key, ret_error);
        if (r < 0)
                return r;
        if ((size_t) json_object_get_string_len(v) > max || json_object_get_string_len(v) == 0)
                return error_set(ret_error, -EINVAL, "egress config: '%s' must be 1..%zu bytes.", key, max);
        s = strdup(json_object_get_string(v));
        if (!s)
                return -ENOMEM;
        free(*ret);
        *ret = s;
        return 0;
}

static int parse_hosts(json_object *v, EgressAllow *allow, char **ret_error) {
        int r;

        r = want_type(v, json_type_array, "allow_hosts", ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *h = json_object_array_get_idx(v, i);
                _cleanup_free_ char *p = NULL;

                if (!json_object_is_type(h, json_type_string))
                        return error_set(ret_error, -EINVAL, "egress config: 'allow_hosts' has an entry that "
                                         "is not a string.");
                r = egress_allow_add(allow, json_object_get_string(h));
                if (r == -E2BIG)
                        return error_set(ret_error, r, "egress config: 'allow_hosts' has more than %d entries.",
                                         EGRESS_ALLOW_MAX);
                if (r == -EINVAL) {
                        p = json_printable(json_object_get_string(h));
                        return error_set(ret_error, r, "egress config: allow_hosts entry '%s' is not a host "
                                         "name or *.domain wildcard (LDH, at least two labels).", p ?: "?");
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_ports(json_object *v, EgressJobConfig *c, char **ret_error) {
        size_t n;
        int r;

        r = want_type(v, json_type_array, "allowed_ports", ret_error);
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        if (n == 0 || n > EGRESS_JOB_PORTS_MAX)
                return error_set(ret_error, -EINVAL, "egress config: 'allowed_ports' must list 1..%d ports.",
                                 EGRESS_JOB_PORTS_MAX);
        for (size_t i = 0; i < n; i++) {
                json_object *p = json_object_array_get_idx(v, i);
                int64_t port = json_object_is_type(p, json_type_int) ? json_object_get_int64(p) : 0;

                if (port < 1 || port > 65535)
                        return error_set(ret_error, -EINVAL, "egress config: 'allowed_ports' entries must be "
                                         "ports 1..65535.");
                c->ports[i] = (uint16_t) port;
        }
        c->n_ports = n;
        return 0;
}

static int parse_key(const char *key, json_object *v, EgressJobConfig *c, char **ret_error) {
        int r;

        if (streq(key, "job_id")) {
                if (!json_object_is_type(v, json_type_string) || !job_id_is_valid(json_object_get_string(v)))
                        return error_set(ret_error, -EINVAL, "egress config: 'job_id' must be a job id.");
                return parse_string(v, key, JOB_ID_MAX, &c->job_id, ret_error);
        }
        if (streq(key, "listen"))
                return parse_string(v, key, LISTEN_MAX, &c->listen, ret_error);
        if (streq(key, "allow_hosts"))
                return parse_hosts(v, &c->allow, ret_error);
        if (streq(key, "allowed_ports"))
                return parse_ports(v, c, ret_error);
        if (streq(key, "allow_ip_literals")) {
                r = want_type(v, json_type_boolean, key, ret_error);
                if (r >= 0)
                        c->allow_ip_literals = json_object_get_boolean(v);
                return r;
        }
        if (streq(key, "stats_file")) {
                r = parse_string(v, key, PATH_MAX - 1, &c->stats_file, ret_error);
                if (r >= 0 && c->stats_file[0] != '/')
                        return error_set(ret_error, -EINVAL, "egress config: 'stats_file' must be absolute.");
                return r;
        }
        return error_set(ret_error, -EINVAL, "egress config: unknown key '%s'.", key);
}

int egress_job_config_parse(const char *text, size_t len, EgressJobConfig *ret, char **ret_error) {
        _cleanup_(egress_job_config_done) EgressJobConfig c = { .ports = { 443 }, .n_ports = 1 };
        _cleanup_json_ json_object *root = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = json_parse_strict(text, len, EGRESS_JOB_CONFIG_MAX_BYTES, 4, &root, &error);
        if (r < 0)
                return error_set(ret_error, r, "egress config: %s", error ?: "invalid JSON");
        if (!json_object_is_type(root, json_type_object))
                return error_set(ret_error, -EINVAL, "egress config: not a JSON object.");
        json_object_object_foreach(root, key, v) {
                r = parse_key(key, v, &c, ret_error);
                if (r < 0)
                        return r;
        }
        if (!c.job_id)
                return error_set(ret_error, -EINVAL, "egress config: 'job_id' is required.");
        *ret = c;
        c = (EgressJobConfig) {};
        return 0;
}

int egress_job_config_load(const char *path, EgressJobConfig *ret, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_full_file(path, EGRESS_JOB_CONFIG_MAX_BYTES, &text, &len);
        if (r < 0)
                return error_set(ret_error, r, "egress config: cannot read %s: %s", path, strerror(-r));
        return egress_job_config_parse(text, len, ret, ret_error);
}

void egress_job_config_done(EgressJobConfig *c) {
        free(c->job_id);
        free(c->listen);
        egress_allow_done(&c->allow);
        free(c->stats_file);
        *c = (EgressJobConfig) {};
}
