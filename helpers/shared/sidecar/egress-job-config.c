/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-job-config.c: reads and checks pond-egress's per-job configuration. It comes from the supervisor,
 * but is checked as strictly as a job spec: a typo must refuse the proxy, never widen what it lets out. */
#include <limits.h>

#include "basic/errmsg.h"
#include "basic/jobid.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "sidecar/egress-job-config.h"

#define LISTEN_MAX 64

static const char *check_job_id(const char *s) {
        return job_id_is_valid(s) ? NULL : "must be a job id";
}

static const char *check_absolute(const char *s) {
        return s[0] == '/' ? NULL : "must be an absolute path";
}

static int dispatch_hosts(json_object *v, const char *field, void *userdata, char **ret_error) {
        EgressJobConfig *c = userdata;
        int r;

        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *h = json_object_array_get_idx(v, i);
                _cleanup_free_ char *p = NULL;

                if (!json_object_is_type(h, json_type_string))
                        return error_set(ret_error, -EINVAL, "%s[%zu]: must be a string", field, i);
                r = egress_allow_add(&c->allow, json_object_get_string(h));
                if (r == -EINVAL) {
                        p = json_printable(json_object_get_string(h));
                        return error_set(ret_error, r, "%s[%zu]: '%s' is not a host name or *.domain wildcard "
                                         "(LDH, at least two labels)", field, i, p ?: "?");
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int dispatch_ports(json_object *v, const char *field, void *userdata, char **ret_error) {
        EgressJobConfig *c = userdata;
        size_t n = json_object_array_length(v);

        for (size_t i = 0; i < n; i++) {
                json_object *p = json_object_array_get_idx(v, i);
                int64_t port = json_object_is_type(p, json_type_int) ? json_object_get_int64(p) : 0;

                if (port < 1 || port > 65535)
                        return error_set(ret_error, -EINVAL, "%s[%zu]: must be a port 1..65535", field, i);
                c->ports[i] = (uint16_t) port;
        }
        c->n_ports = n;
        return 0;
}

static const JsonField config_fields[] = {
        { "job_id",            JSON_STRING, .offset = offsetof(EgressJobConfig, job_id), .flags = JSON_MANDATORY,
          .max = JOB_ID_MAX, .check = check_job_id },
        { "listen",            JSON_STRING, .offset = offsetof(EgressJobConfig, listen), .min = 1, .max = LISTEN_MAX },
        { "allow_hosts",       JSON_ARRAY,  .callback = dispatch_hosts, .max = EGRESS_ALLOW_MAX },
        { "allowed_ports",     JSON_ARRAY,  .callback = dispatch_ports, .min = 1, .max = EGRESS_JOB_PORTS_MAX },
        { "allow_ip_literals", JSON_BOOL,   .offset = offsetof(EgressJobConfig, allow_ip_literals) },
        { "stats_file",        JSON_STRING, .offset = offsetof(EgressJobConfig, stats_file), .min = 1,
          .max = PATH_MAX - 1, .check = check_absolute },
        {}
};

static const JsonDocument config_document = {
        .max_bytes = EGRESS_JOB_CONFIG_MAX_BYTES,
        .max_depth = 4,
        .fields = config_fields,
};

int egress_job_config_parse(const char *text, size_t len, EgressJobConfig *ret, char **ret_error) {
        _cleanup_(egress_job_config_done) EgressJobConfig c = { .ports = { 443 }, .n_ports = 1 };
        _cleanup_free_ char *error = NULL;
        int r;

        r = json_document_parse(&config_document, text, len, &c, &error);
        if (r < 0)
                return error_set(ret_error, r, "egress config: %s", error ?: "invalid");
        *ret = c;
        c = (EgressJobConfig) {};
        return 0;
}

static int parse_text(const char *text, size_t len, void *ret, char **ret_error) {
        return egress_job_config_parse(text, len, ret, ret_error);
}

int egress_job_config_load(const char *path, EgressJobConfig *ret, char **ret_error) {
        return json_load_file(path, EGRESS_JOB_CONFIG_MAX_BYTES, "egress configuration", parse_text, ret,
                              ret_error);
}

void egress_job_config_done(EgressJobConfig *c) {
        free(c->job_id);
        free(c->listen);
        egress_allow_done(&c->allow);
        free(c->stats_file);
        *c = (EgressJobConfig) {};
}
