/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-network.c: step 3 of the design, for the confined postures: the job's own network namespace, the
 * veth to the host and the host-side nftables rules, before anything runs; what the job is told about its
 * network; and the job's sidecars, configured for the job's address and started (they come up while the
 * runtime creates the container). Profile none keeps the host's network and has no sidecars. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <string.h>

#include "job.h"
#include "image.h"
#include "log.h"
#include "string-util.h"

static int pushf(char ***env, const char *fmt, ...) _printf_(2, 3);
static int pushf(char ***env, const char *fmt, ...) {
        va_list ap;
        char *v;

        va_start(ap, fmt);
        v = strdupf_va(fmt, ap);
        va_end(ap);
        return v ? strv_push(env, v) : -ENOMEM;
}

/* Where the proxy is (allowlist), that the broker is reached directly, and where the image's CA bundle is,
 * so pip, npm, git and curl work unchanged. */
static int posture_environment(Job *j) {
        static const char *const proxy_vars[] = { "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy" };
        static const char *const ca_vars[] = { "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                                               "GIT_SSL_CAINFO", "CURL_CA_BUNDLE" };
        char host[INET_ADDRSTRLEN];
        char ***env = &j->network.env;
        int r = 0;

        inet_ntop(AF_INET, &j->network.net.lease.host_addr, host, sizeof host);
        if (j->input.resolved->net == NET_ALLOWLIST)
                for (size_t i = 0; r >= 0 && i < ELEMENTSOF(proxy_vars); i++)
                        r = pushf(env, "%s=http://%s:%u", proxy_vars[i], host, NET_PROXY_PORT);
        if (r >= 0)
                r = pushf(env, "NO_PROXY=%s", host);
        if (r >= 0)
                r = pushf(env, "no_proxy=%s", host);
        if (r >= 0 && j->sidecars[POND_SIDECAR_BROKER].config)
                r = pushf(env, "POND_BROKER_ADDR=%s:%u", host, NET_BROKER_PORT);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ca_vars); i++)
                r = pushf(env, "%s=%s", ca_vars[i], IMAGE_CA_BUNDLE);
        return r;
}

/* The job's addresses, its environment and its sidecars' configurations, and the sidecars' units started:
 * first of all the job's resources, since a sidecar's unit takes longest to come up (systemd sets up its
 * sandbox). They listen on the host address before the veth has it (IP_FREEBIND), reachable only once
 * job_network() has made the veth and loaded the rules; the payload waits for them either way. */
int job_network_lease(Job *j) {
        _cleanup_free_ char *err = NULL;
        int r;

        if (j->input.resolved->net == NET_OPEN)
                return 0;
        r = job_net_lease(j->paths.id, j->paths.rundir, &j->network.net.lease, &err);
        if (r < 0) {
                log_error_errno(r, "Cannot lease the job's addresses: %s", err ?: strerror(-r));
                return job_fail(j, r, "cannot set up the job's network");
        }
        j->network.leased = true;
        r = posture_environment(j);
        if (r >= 0)
                r = job_sidecars_write(j);
        if (r >= 0)
                r = job_sidecars_start(j);
        return r;
}

int job_network(Job *j) {
        NetPosture posture = j->input.resolved->net;
        _cleanup_free_ char *err = NULL;
        uint16_t ports[2];
        size_t n_ports = 0;
        int r;

        if (posture == NET_OPEN)
                return 0;
        if (!j->network.leased)
                return -EINVAL;
        /* A port is open only if this job's own sidecar listens behind it. */
        if (j->sidecars[POND_SIDECAR_BROKER].config)
                ports[n_ports++] = NET_BROKER_PORT;
        if (j->sidecars[POND_SIDECAR_EGRESS].config)
                ports[n_ports++] = NET_PROXY_PORT;
        r = job_net_setup(j->paths.id, j->paths.rundir, j->userns.fd, &j->network.net.lease, ports, n_ports,
                          &j->network.net, &err);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the job's network: %s", err ?: strerror(-r));
                return job_fail(j, r, "cannot set up the job's network");
        }
        j->network.up = true;
        return 0;
}

void job_network_done(JobNetwork *n) {
        strv_freep(&n->env);
        *n = (JobNetwork) {};
}
