/* supervise-egress.c: the job's CONNECT proxy, pond-egress@ID.service (allowlist posture). The supervisor
 * writes its per-job configuration (listen address on the host side of the job's veth, the policy's
 * defaults and the job's allow_hosts, the allowed ports), starts it before the payload and fails closed if
 * it does not come up, and stops it after the payload to record its byte counts in the result. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "fileio.h"
#include "json-strict.h"
#include "log.h"
#include "scope.h"
#include "supervise-launch.h"

static char *egress_dir(const Job *j) {
        char *p = NULL;
        return asprintf(&p, "%s/egress/%s", j->paths.rundir, j->id) < 0 ? NULL : p;
}

static int egress_unit(const char *id, char **ret) {
        return asprintf(ret, "pond-egress@%s.service", id) < 0 ? -ENOMEM : 0;
}

/* The allowed ports are the policy's (policy/egress.json), never the job's. */
static int allowed_ports(char **ret) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *ports = NULL;
        char list[128] = "";
        size_t len;
        int r;

        if (asprintf(&path, "%s/egress.json", getenv("POND_POLICYDIR") ?: POND_POLICYDIR) < 0)
                return -ENOMEM;
        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r >= 0)
                r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, 4, &o, NULL);
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(o, "allowed_ports", &ports) || !json_object_is_type(ports, json_type_array) ||
            json_object_array_length(ports) == 0 || json_object_array_length(ports) > 16)
                return -EINVAL;
        for (size_t i = 0; i < json_object_array_length(ports); i++) {
                int64_t p = json_object_get_int64(json_object_array_get_idx(ports, i));
                if (p <= 0 || p > 65535)
                        return -EINVAL;
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%lld", i ? "," : "", (long long) p);
        }
        *ret = strdup(list);
        return *ret ? 0 : -ENOMEM;
}

static int write_config(Job *j, const char *dir) {
        _cleanup_json_ json_object *allow = json_object_new_object(), *hosts = json_object_new_array();
        _cleanup_free_ char *env = NULL, *ports = NULL;
        _cleanup_close_ int dfd = -EBADF;
        char host[INET_ADDRSTRLEN];
        const char *text;
        int r;

        if (!allow || !hosts)
                return -ENOMEM;
        for (size_t i = 0; j->spec->sandbox.allow_hosts[i]; i++)
                if (json_object_array_add(hosts, json_object_new_string(j->spec->sandbox.allow_hosts[i])) < 0)
                        return -ENOMEM;
        json_object_object_add(allow, "allow_hosts", TAKE_PTR(hosts));
        r = allowed_ports(&ports);
        if (r < 0)
                return log_error_errno(r, "Cannot read the allowed ports from policy/egress.json: %m");
        inet_ntop(AF_INET, &j->net.lease.host_addr, host, sizeof host);
        if (asprintf(&env, "POND_EGRESS_ARGS=--listen %s:%u --allow-file %s/egress.json --allowed-ports %s "
                     "--stats-file /run/pond-egress/%s/stats.json\n", host, NET_PROXY_PORT,
                     getenv("POND_POLICYDIR") ?: POND_POLICYDIR, ports, j->id) < 0)
                return -ENOMEM;
        r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        text = json_object_to_json_string_ext(allow, JSON_C_TO_STRING_PLAIN);
        /* Read by systemd (EnvironmentFile=, LoadCredential=), not by the proxy itself. */
        r = write_file_atomic_at(dfd, "allow.json", text, strlen(text), 0600);
        if (r >= 0)
                r = write_file_atomic_at(dfd, "env", env, strlen(env), 0600);
        return r;
}

/* Starts the proxy's unit without waiting: it comes up while the runtime creates the container. */
int job_egress_start(Job *j) {
        _cleanup_free_ char *dir = egress_dir(j), *unit = NULL;
        int r;

        if (j->resolved->net != NET_ALLOWLIST)
                return 0;
        if (!dir || egress_unit(j->id, &unit) < 0)
                return -ENOMEM;
        r = write_config(j, dir);
        if (r < 0)
                return log_error_errno(r, "Cannot write the egress proxy's configuration: %m");
        j->egress_up = true; /* from here on, stopping it is part of every exit path */
        r = unit_start_begin(j->bus, unit, &j->egress_starting);
        if (r < 0)
                return log_error_errno(r, "Cannot start %s: %m", unit);
        return 0;
}

/* Before the payload may run: the proxy is up, or the job does not run (fail closed). */
int job_egress_wait(Job *j) {
        return sidecar_wait(j, &j->egress_starting, "egress proxy");
}

/* Stops the proxy (its final counts are written on SIGTERM), returns them as JSON if asked and found, and
 * removes its configuration and preserved runtime directory. Idempotent. */
int job_egress_stop(sd_bus *bus, const JobPaths *paths, json_object **ret_stats) {
        _cleanup_free_ char *unit = NULL, *runtime = NULL, *dir = NULL;

        if (egress_unit(paths->id, &unit) < 0 || asprintf(&runtime, "/run/pond-egress/%s", paths->id) < 0 ||
            asprintf(&dir, "%s/egress/%s", paths->rundir, paths->id) < 0)
                return -ENOMEM;
        return sidecar_stop(bus, unit, runtime, dir, ret_stats);
}
