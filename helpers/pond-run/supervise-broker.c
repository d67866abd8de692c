/* supervise-broker.c: the job's credential broker, pond-broker@ID.service, for jobs that bring sealed model
 * credentials. The supervisor never opens them: it writes the broker's configuration (the job's sealed
 * blobs, a fresh random dummy key per credential, the budget), checks it with the broker's own parser
 * before anything runs (a bad credential is a refusal), tells the job its dummy keys and base URLs,
 * starts the broker before the payload (fail closed), watches for the cost ceiling, and records the
 * broker's totals in the result. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>

#include "broker-config.h"
#include "config.h"
#include "errmsg.h"
#include "fileio.h"
#include "json-strict.h"
#include "log.h"
#include "scope.h"
#include "supervise-launch.h"

static json_object *jget(json_object *o, const char *k) {
        json_object *v = NULL;
        return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* The broker's configuration for this job: the spec's credentials plus what only the worker decides. */
static int build_config(const Job *j, const char *listen, json_object **ret) {
        _cleanup_json_ json_object *c = json_object_new_object(), *creds = NULL;
        _cleanup_free_ char *prices = NULL;

        if (!c || json_object_deep_copy(j->spec->credentials, &creds, NULL) < 0 ||
            asprintf(&prices, "%s/prices.json", getenv("POND_POLICYDIR") ?: POND_POLICYDIR) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(creds); i++) {
                uint8_t rnd[24];
                char hex[2 * sizeof rnd + 1], dummy[sizeof hex + 16];

                randombytes_buf(rnd, sizeof rnd);
                sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
                snprintf(dummy, sizeof dummy, "pond-dummy-%s", hex);
                /* The job's own dummy_key, if it sent one, is replaced: the worker picks it. */
                json_object_object_add(json_object_array_get_idx(creds, i), "dummy_key", json_object_new_string(dummy));
        }
        json_object_object_add(c, "job_id", json_object_new_string(j->id));
        json_object_object_add(c, "listen", json_object_new_string(listen));
        json_object_object_add(c, "max_cost_cents", json_object_new_uint64(j->spec->limits.max_cost_cents));
        json_object_object_add(c, "prices", json_object_new_string(prices));
        json_object_object_add(c, "credentials", TAKE_PTR(creds));
        *ret = TAKE_PTR(c);
        return 0;
}

/* At acceptance: credentials need a confined network (the broker listens on the job's veth) and a budget,
 * and must pass the broker's parser. Anything else is a refusal before anything runs. */
int job_broker_check(const Job *j, char **ret_error) {
        _cleanup_json_ json_object *c = NULL;
        BrokerConfig parsed = {};
        const char *text;
        int r;

        if (!j->spec->credentials)
                return 0;
        if (j->resolved->net == NET_OPEN)
                return error_set(ret_error, -EINVAL, "credentials: need a confined profile (profile none has no broker)");
        if (j->spec->limits.max_cost_cents == 0)
                return error_set(ret_error, -EINVAL, "limits.max_cost_cents: required with credentials");
        r = build_config(j, "127.0.0.1:8080", &c);
        if (r < 0)
                return r;
        text = json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN);
        r = broker_config_parse(text, strlen(text), &parsed, ret_error);
        if (r >= 0)
                broker_config_done(&parsed);
        return r < 0 ? -EINVAL : 0;
}

static char *broker_dir(const JobPaths *p) {
        char *d = NULL;
        return asprintf(&d, "%s/broker/%s", p->rundir, p->id) < 0 ? NULL : d;
}

/* Writes the configuration and adds the job's variables: per credential its dummy key and base URL. */
static int write_config(Job *j, const char *dir, char ***env) {
        _cleanup_json_ json_object *c = NULL;
        _cleanup_close_ int dfd = -EBADF;
        char host[INET_ADDRSTRLEN], listen[INET_ADDRSTRLEN + 8];
        json_object *creds;
        const char *text;
        int r;

        inet_ntop(AF_INET, &j->net.lease.host_addr, host, sizeof host);
        snprintf(listen, sizeof listen, "%s:%u", host, NET_BROKER_PORT);
        r = build_config(j, listen, &c);
        if (r < 0)
                return r;
        creds = jget(c, "credentials");
        for (size_t i = 0; i < json_object_array_length(creds); i++) {
                json_object *e = json_object_array_get_idx(creds, i), *ev = jget(e, "env");
                const char *key = json_object_get_string(jget(ev, "key")),
                           *url = json_object_get_string(jget(ev, "base_url"));
                char *v = NULL;

                if (key && (asprintf(&v, "%s=%s", key, json_object_get_string(jget(e, "dummy_key"))) < 0 ||
                            strv_push(env, v) < 0))
                        return -ENOMEM;
                if (url && (asprintf(&v, "%s=http://%s/%s", url, listen, json_object_get_string(jget(e, "name"))) < 0 ||
                            strv_push(env, v) < 0))
                        return -ENOMEM;
        }
        r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        text = json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN);
        /* Read by systemd (LoadCredential=) on the broker's behalf, never by the job. */
        return write_file_atomic_at(dfd, "config.json", text, strlen(text), 0600);
}

/* Before the bundle is written: the job's environment carries the dummy keys and base URLs. */
int job_broker_configure(Job *j) {
        _cleanup_free_ char *dir = broker_dir(&j->paths);
        int r;

        if (!j->spec->credentials)
                return 0;
        if (!dir)
                return -ENOMEM;
        r = write_config(j, dir, &j->posture_env);
        if (r < 0)
                return log_error_errno(r, "Cannot write the broker's configuration: %m");
        j->broker_up = true; /* from here on, stopping it is part of every exit path */
        return 0;
}

/* Starts the broker's unit without waiting: it comes up while the runtime creates the container. */
int job_broker_start(Job *j) {
        _cleanup_free_ char *unit = NULL;
        int r;

        if (!j->broker_up)
                return 0;
        if (asprintf(&unit, "pond-broker@%s.service", j->id) < 0)
                return -ENOMEM;
        r = unit_start_begin(j->bus, unit, &j->broker_starting);
        if (r < 0)
                return log_error_errno(r, "Cannot start %s: %m", unit);
        return 0;
}

int job_broker_wait(Job *j) {
        return sidecar_wait(j, &j->broker_starting, "credential broker (a credential may not open for this job "
                            "and worker)");
}

static char *stats_path(const char *id) {
        char *p = NULL;
        return asprintf(&p, "/run/pond-broker/%s/stats.json", id) < 0 ? NULL : p;
}

/* Polled while the job runs: the broker marks its stats when the budget is exhausted. */
bool job_broker_ceiling_hit(const Job *j) {
        _cleanup_free_ char *path = stats_path(j->id), *buf = NULL;
        _cleanup_json_ json_object *o = NULL;
        size_t len;

        if (!j->broker_up || !path || read_full_file(path, 64 * 1024, &buf, &len) < 0 ||
            json_parse_strict(buf, len, 64 * 1024, 4, &o, NULL) < 0)
                return false;
        return json_object_get_boolean(jget(o, "ceiling_hit"));
}

int job_broker_stop(sd_bus *bus, const JobPaths *paths, json_object **ret_stats) {
        _cleanup_free_ char *unit = NULL, *runtime = NULL, *dir = broker_dir(paths);

        if (!dir || asprintf(&unit, "pond-broker@%s.service", paths->id) < 0 ||
            asprintf(&runtime, "/run/pond-broker/%s", paths->id) < 0)
                return -ENOMEM;
        return sidecar_stop(bus, unit, runtime, dir, ret_stats);
}
