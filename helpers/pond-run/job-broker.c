/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-broker.c: what is particular to the job's credential broker, pond-broker@ID.service, for jobs that
 * bring sealed model credentials. The supervisor never opens them: it builds the broker's configuration
 * (the job's sealed blobs, a fresh random dummy key per credential, the budget), checked with the
 * broker's own parser (broker-config.h) before anything runs, tells the job its dummy keys and base URLs,
 * and cancels the job when the broker reports the cost ceiling through its unit. The contract it shares
 * with the egress proxy is job-sidecar.c's. */
#include <signal.h>
#include <sodium.h>
#include <string.h>

#include "basic/dirs.h"
#include "basic/errmsg.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "job.h"
#include "policy/policy-file.h"
#include "secrets/keys.h"
#include "sidecar/broker-config.h"

/* The job's own dummy_key, if it sent one, is replaced: the worker picks it. */
static int set_dummy_keys(json_object *creds) {
        for (size_t i = 0; i < json_object_array_length(creds); i++) {
                uint8_t rnd[24];
                char hex[2 * sizeof rnd + 1], dummy[sizeof hex + 16];

                randombytes_buf(rnd, sizeof rnd);
                sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
                snprintf(dummy, sizeof dummy, "pond-dummy-%s", hex);
                if (json_object_object_add(json_object_array_get_idx(creds, i), "dummy_key",
                                           json_object_new_string(dummy)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Credentials need a confined network (the broker listens on the job's veth) and a budget. The
 * configuration is the spec's credentials plus what only the worker decides. */
int job_broker_config(const Job *j, json_object **ret, char **ret_error) {
        _cleanup_json_ json_object *c = NULL, *creds = NULL;
        _cleanup_free_ char *prices = NULL;
        const JobSpec *spec = j->input.spec;
        int r;

        *ret = NULL;
        if (!spec->credentials)
                return 0;
        if (j->input.resolved->net == NET_OPEN)
                return error_set(ret_error, -EINVAL,
                                 "credentials: need a confined profile (profile none has no broker)");
        if (spec->limits.max_cost_cents == 0)
                return error_set(ret_error, -EINVAL, "limits.max_cost_cents: required with credentials");
        /* The operator's /etc/pond/prices.json, if there is one (policy-file.h). */
        r = policy_file("prices.json", &prices);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_set(ret_error, r, "broker: prices.json: cannot look in %s: %s", pond_dir(POND_DIR_CONFIG),
                                 strerror(-r));
        c = json_object_new_object();
        if (!c || json_object_deep_copy(spec->credentials, &creds, NULL) < 0 || set_dummy_keys(creds) < 0)
                return -ENOMEM;
        if (json_object_object_add(c, "job_id", json_object_new_string(j->paths.id)) < 0 ||
            json_object_object_add(c, "max_cost_cents", json_object_new_uint64(spec->limits.max_cost_cents)) < 0 ||
            json_object_object_add(c, "prices", json_object_new_string(prices)) < 0 ||
            json_object_object_add(c, "stats_file",
                                   json_object_new_string(j->paths.sidecars[POND_SIDECAR_BROKER].stats)) < 0 ||
            json_object_object_add(c, "credentials", TAKE_PTR(creds)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int job_broker_check(const char *text, size_t len, char **ret_error) {
        BrokerConfig parsed = {};
        int r;

        r = broker_config_parse(text, len, &parsed, ret_error);
        if (r >= 0)
                broker_config_done(&parsed);
        return r < 0 ? -EINVAL : 0;
}

static char *base_url(const char *listen, const char *name) {
        char *u = NULL;
        return asprintf(&u, "http://%s/%s", listen, name) < 0 ? NULL : u;
}

/* Per credential: its dummy key and its base URL, http://LISTEN/NAME. */
int job_broker_environment(json_object *config, const char *listen, char ***env) {
        json_object *creds = json_get(config, "credentials");

        for (size_t i = 0; i < json_object_array_length(creds); i++) {
                json_object *e = json_object_array_get_idx(creds, i), *ev = json_get(e, "env");
                const char *key = json_object_get_string(json_get(ev, "key")),
                           *url = json_object_get_string(json_get(ev, "base_url"));
                _cleanup_free_ char *u = base_url(listen, json_object_get_string(json_get(e, "name")));
                char *v = NULL;

                if (!u)
                        return -ENOMEM;
                if (key && (asprintf(&v, "%s=%s", key, json_object_get_string(json_get(e, "dummy_key"))) < 0 ||
                            strv_push(env, v) < 0))
                        return -ENOMEM;
                if (url && (asprintf(&v, "%s=%s", url, u) < 0 || strv_push(env, v) < 0))
                        return -ENOMEM;
        }
        return 0;
}

/* What the job is told of credential name, for its home files: the same base URL and dummy key as its
 * environment gets. The configuration must have its listen address (job_sidecars_write()). */
int job_broker_values(json_object *config, const char *name, char **ret_base_url, const char **ret_dummy_key) {
        json_object *creds = json_get(config, "credentials");
        const char *listen = json_get_str(config, "listen");

        for (size_t i = 0; listen && name && i < json_object_array_length(creds); i++) {
                json_object *e = json_object_array_get_idx(creds, i);
                const char *n = json_get_str(e, "name"), *key = json_get_str(e, "dummy_key");
                char *u;

                if (!n || !key || !streq(n, name))
                        continue;
                u = base_url(listen, name);
                if (!u)
                        return -ENOMEM;
                *ret_base_url = u;
                *ret_dummy_key = key;
                return 0;
        }
        return -ENOENT;
}

typedef struct BrokerState {
        const char *status_text;
        int32_t exec_main_code, exec_main_status;
} BrokerState;

static int read_changed(sd_bus_message *m, BrokerState *st) {
        const char *name;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        break;
                if (streq(name, "StatusText"))
                        r = sd_bus_message_read(m, "v", "s", &st->status_text);
                else if (streq(name, "ExecMainCode"))
                        r = sd_bus_message_read(m, "v", "i", &st->exec_main_code);
                else if (streq(name, "ExecMainStatus"))
                        r = sd_bus_message_read(m, "v", "i", &st->exec_main_status);
                else
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        return r;
}

/* The broker's unit changed: its status text says the ceiling was reached (at once), or it exited with
 * BROKER_EXIT_CEILING (after its grace period). Either cancels the job. */
int job_broker_on_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BrokerState st = {};
        const char *interface;

        if (sd_bus_message_read(m, "s", &interface) < 0 || !streq(interface, "org.freedesktop.systemd1.Service") ||
            read_changed(m, &st) < 0)
                return 0;
        if ((st.status_text && strncmp(st.status_text, BROKER_STATUS_CEILING, strlen(BROKER_STATUS_CEILING)) == 0) ||
            (st.exec_main_code == CLD_EXITED && st.exec_main_status == BROKER_EXIT_CEILING))
                job_cost_ceiling(userdata);
        return 0;
}

/* The sealing key is the broker's credential (a 0400 copy): its source is checked as the signing key's
 * is, so that a key others may read opens no job's credentials. */
int job_broker_accept(Job *j, char **ret_error) {
        if (!j->sidecars[POND_SIDECAR_BROKER].config || job_check_key_source(KEY_SEAL_SECRET_FILE) >= 0)
                return 0;
        *ret_error = strdup("credentials: the worker's sealing key is refused: it must be root's and 0600 or "
                            "stricter (docs/operations.md, \"Keys\")");
        return -EPERM;
}
