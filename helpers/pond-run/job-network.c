/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-network.c: step 3 of the design, for the confined postures: the job's own network namespace, the
 * veth to the host and the host-side nftables rules, before anything runs (a job with no sidecar to reach,
 * broker-only without a broker, gets the namespace with lo alone); what the job is told about its
 * network; and the job's sidecars, configured for the job's address and started (they come up while the
 * runtime creates the container). Profile none keeps the host's network and has no sidecars. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"
#include "rootfs/image.h"

static int pushf(char ***env, const char *fmt, ...) _printf_(2, 3);
static int pushf(char ***env, const char *fmt, ...) {
        va_list ap;
        char *v;

        va_start(ap, fmt);
        v = strdupf_va(fmt, ap);
        va_end(ap);
        return v ? strv_push(env, v) : -ENOMEM;
}

/* Whether the job has a sidecar to reach (a broker, a proxy), and so a veth and a lease: broker-only
 * without a broker has none. */
static bool job_has_peer(const Job *j) {
        return j->sidecars[POND_SIDECAR_BROKER].config || j->sidecars[POND_SIDECAR_EGRESS].config;
}

/* Where the proxy is (allowlist) and that the broker is reached directly, at the host side of the veth. */
static int peer_environment(Job *j) {
        static const char *const proxy_vars[] = { "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy" };
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
        return r;
}

/* The peers' variables, if any, and where the image's CA bundle is, so pip, npm, git and curl work
 * unchanged. */
static int posture_environment(Job *j) {
        static const char *const ca_vars[] = { "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                                               "GIT_SSL_CAINFO", "CURL_CA_BUNDLE" };
        int r = j->network.leased ? peer_environment(j) : 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ca_vars); i++)
                r = pushf(&j->network.env, "%s=%s", ca_vars[i], IMAGE_CA_BUNDLE);
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
        /* broker-only without a broker: its namespace gets lo alone, nothing to lease (job_network_begin()) */
        if (!job_has_peer(j))
                return posture_environment(j);
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

#define SETUP_ERROR_MAX 512

/* The child: everything job_net_setup() makes, or its error on the pipe (it removes what it made). */
static _noreturn_ void setup_child(Job *j, const uint16_t *ports, size_t n_ports, int error_fd) {
        _cleanup_free_ char *err = NULL;
        JobNet net;
        int r;

        r = job_net_setup(j->paths.id, j->paths.rundir, j->userns.fd, j->network.leased ? &j->network.net.lease : NULL,
                          ports, n_ports, &net, &err);
        if (r < 0) {
                const char *why = err ?: strerror(-r);
                (void) write(error_fd, why, MIN(strlen(why), (size_t) SETUP_ERROR_MAX - 1));
                _exit(EXIT_FAILURE);
        }
        _exit(EXIT_SUCCESS);
}

/* The namespace, the veth and the rules are made by a child while the supervisor stages the workspace,
 * writes the bundle and has the scope made: 9-10 ms that were in series before the runtime's create step
 * (docs/benchmarks.md). Their names come from the job id, so the bundle can name the namespace now; the
 * container is let go only once the child has ended well. */
int job_network_begin(Job *j) {
        _cleanup_close_ int error_read = -EBADF, error_write = -EBADF;
        uint16_t ports[2];
        size_t n_ports = 0;
        JobNet names;
        int fds[2], r;

        if (j->input.resolved->net == NET_OPEN)
                return 0;
        /* A port is open only if this job's own sidecar listens behind it; with neither, there is no veth. */
        if (j->sidecars[POND_SIDECAR_BROKER].config)
                ports[n_ports++] = NET_BROKER_PORT;
        if (j->sidecars[POND_SIDECAR_EGRESS].config)
                ports[n_ports++] = NET_PROXY_PORT;
        if ((n_ports > 0) != j->network.leased)
                return -EINVAL;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        error_read = fds[0];
        error_write = fds[1];
        r = safe_fork_full("(pond-net)", NULL, (const int[]) { error_write, j->userns.fd }, j->userns.fd >= 0 ? 2 : 1,
                           FORK_EXEC_FLAGS, &j->network.setup);
        if (r < 0)
                return job_fail(j, log_error_errno(r, "Cannot fork the job's network set-up: %m"),
                                "cannot set up the job's network");
        if (r == 0)
                setup_child(j, ports, n_ports, error_write);
        job_net_names(j->paths.id, &names);
        names.lease = j->network.net.lease;
        j->network.net = names;
        j->network.up = true;
        j->network.setup_error = TAKE_FD(error_read);
        return 0;
}

int job_network_finish(Job *j) {
        char err[SETUP_ERROR_MAX] = "";
        siginfo_t si = {};
        ssize_t n;
        int r;

        if (j->network.setup.pid <= 0)
                return 0;
        r = pidref_wait_or_kill(&j->network.setup, NETWORK_SETUP_USEC, &si);
        if (r >= 0 && siginfo_exited_ok(&si))
                return 0;
        /* The child has ended: what it wrote (one write, below PIPE_BUF) is all in the pipe. */
        if (j->network.setup_error >= 0 && (n = read(j->network.setup_error, err, sizeof err - 1)) > 0)
                err[n] = '\0';
        j->network.up = false;
        log_error_errno(r < 0 ? r : EIO, "Cannot set up the job's network: %s", *err ? err :
                        r < 0 ? strerror(-r) : "the set-up failed");
        return job_fail(j, r < 0 ? r : -EIO, "cannot set up the job's network");
}

void job_network_stop(JobNetwork *n) {
        sigkill_wait(&n->setup);
        n->setup_error = safe_close(n->setup_error);
}

void job_network_done(JobNetwork *n) {
        job_network_stop(n);
        strv_freep(&n->env);
        *n = (JobNetwork) JOB_NETWORK_NULL;
}
