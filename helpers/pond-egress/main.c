/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pond-egress: the per-job HTTPS CONNECT proxy, run by pond-egress@ID.service. The job's configuration
 * (egress-job-config.h) from --config, the worker's options into arg_*, the listening socket, then the
 * loop in egress-proxy.c. A proxy that cannot start says why in its unit's status text, which pond-run
 * puts in the job's result. See docs/egress.md. */
#include <stdarg.h>
#include <systemd/sd-daemon.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "egress-proxy.h"
#include "egress-resolve.h"
#include "sidecar/egress-job-config.h"
#include "sidecar/sidecar-args.h"
#include "sidecar/socket-util.h"

_Static_assert(EGRESS_JOB_PORTS_MAX <= EGRESS_PORTS_MAX, "the proxy must hold every port the config may list");

static EgressConfig arg_config;
static const char *arg_config_file;

/* A proxy that does not start: the reason is logged, and is the unit's status text, where pond-run finds it
 * (the PropertiesChanged of the failed unit) for the job's result. The barrier: systemd has taken the
 * STATUS= before the process exits, after which it could no longer tell whose it was. */
static int refuse(int r, const char *fmt, ...) _printf_(2, 3);
static int refuse(int r, const char *fmt, ...) {
        _cleanup_free_ char *reason = NULL;
        va_list ap;

        va_start(ap, fmt);
        reason = strdupf_va(fmt, ap);
        va_end(ap);
        log_error_errno(r, "%s", reason ?: "Out of memory.");
        if (reason) {
                (void) sd_notifyf(false, "STATUS=%s", reason);
                (void) sd_notify_barrier(false, 5 * 1000000ULL);
        }
        return r;
}

static void help(void) {
        printf("Usage: pond-egress --config FILE [--hosts-file FILE | --dns-server ADDR[:PORT] |\n"
               "                   --resolv-conf FILE] [OPTIONS]\n\n"
               "The per-job HTTPS CONNECT proxy of pond. Normally started by pond-egress@ID.service.\n\n"
               "  --config FILE           the job's configuration (JSON, docs/egress.md)\n"
               "  --hosts-file FILE       resolve from this hosts(5) file only\n"
               "  --dns-server ADDR       resolve through this one DNS server only\n"
               "  --resolv-conf FILE      resolve through the nameservers of this resolv.conf(5)\n"
               "                          (without any of the three: those of " EGRESS_RESOLV_CONF ")\n"
               "  --max-conns N           concurrent connections (default 256)\n"
               "  --idle-timeout S        seconds without traffic (default 60)\n"
               "  --total-timeout S       seconds per connection (default 3600)\n"
               "  --max-bytes N           bytes per job, both directions (default 16 GiB)\n"
               "See docs/egress.md.\n");
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s[0] || s[0] < '0' || s[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_option(int c, const char *optarg_) {
        EgressConfig *cf = &arg_config;
        uint64_t v;

        switch (c) {
        case 'H':
                cf->hosts_file = optarg_;
                return 0;
        case 'D':
                cf->dns_server = optarg_;
                return 0;
        case 'R':
                cf->resolv_conf = optarg_;
                return 0;
        case 'c':
                if (parse_u64(optarg_, 1, 65536, &v) < 0)
                        return refuse(-EINVAL, "invalid --max-conns '%s': 1..65536", optarg_);
                cf->max_conns = (unsigned) v;
                return 0;
        case 'i':
        case 't':
                if (parse_u64(optarg_, 1, 7 * 86400, &v) < 0)
                        return refuse(-EINVAL, "invalid timeout '%s': 1..604800 seconds", optarg_);
                *(c == 'i' ? &cf->idle_timeout_usec : &cf->total_timeout_usec) = v * 1000000ULL;
                return 0;
        case 'b':
                if (parse_u64(optarg_, 1, UINT64_MAX, &cf->max_bytes) < 0)
                        return refuse(-EINVAL, "invalid --max-bytes '%s'", optarg_);
                return 0;
        default: /* getopt_long() named it */
                return refuse(-EINVAL, "an unknown option, or one without its argument (pond-egress --help)");
        }
}

static const SidecarArgs args = {
        .program = "pond-egress",
        .options = (const struct option[]) {
                { "hosts-file", required_argument, NULL, 'H' },
                { "dns-server", required_argument, NULL, 'D' },
                { "resolv-conf", required_argument, NULL, 'R' },
                { "max-conns", required_argument, NULL, 'c' },
                { "idle-timeout", required_argument, NULL, 'i' },
                { "total-timeout", required_argument, NULL, 't' },
                { "max-bytes", required_argument, NULL, 'b' },
                {}
        },
        .help = help,
        .parse_option = parse_option,
        .refuse = refuse,
};

static int parse_argv(int argc, char *argv[]) {
        int r;

        r = sidecar_args_parse(&args, argc, argv, &arg_config_file);
        if (r <= 0)
                return r;
        if ((arg_config.hosts_file ? 1 : 0) + (arg_config.dns_server ? 1 : 0) + (arg_config.resolv_conf ? 1 : 0) > 1)
                return refuse(-EINVAL, "at most one of --hosts-file, --dns-server and --resolv-conf");
        return 1;
}

/* The job's part of the proxy's configuration; job stays the owner of the strings, the allowlist moves. */
static int load_job_config(EgressJobConfig *job) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = egress_job_config_load(arg_config_file, job, &error);
        if (r < 0)
                return refuse(r, "%s", error ?: "cannot load the configuration");
        if (!job->listen)
                return refuse(-EINVAL, "the configuration has no 'listen' address");
        arg_config.job_id = job->job_id;
        arg_config.allow = job->allow;
        job->allow = (EgressAllow) {};
        memcpy(arg_config.ports, job->ports, job->n_ports * sizeof job->ports[0]);
        arg_config.n_ports = job->n_ports;
        arg_config.allow_ip_literals = job->allow_ip_literals;
        arg_config.stats_file = job->stats_file;
        return 0;
}

static int run(void) {
        _cleanup_(egress_job_config_done) EgressJobConfig job = {};
        _cleanup_free_ char *error = NULL;
        int r;

        r = load_job_config(&job);
        if (r < 0)
                return r;
        r = egress_local_addrs_load(&arg_config.local);
        if (r < 0)
                return refuse(r, "cannot list the host's addresses: %s", strerror(-r));
        /* pond-egress@ID.socket's, made before the payload runs (its connections wait there until this
         * proxy is up); by hand, or without it, the proxy's own. */
        r = socket_listen_inherited(job.listen, &arg_config.listen_fd);
        if (r == -EBADF)
                return refuse(r, "the socket systemd passed is not one listening on '%s'", job.listen);
        if (r == -ENOENT)
                r = socket_listen_tcp(job.listen, &arg_config.listen_fd);
        if (r < 0)
                return refuse(r, "cannot listen on '%s' (ADDR:PORT or [V6]:PORT): %s", job.listen, strerror(-r));
        log_info("Job %s: %zu allowed host patterns, %zu ports, listening.", arg_config.job_id,
                 egress_allow_size(&arg_config.allow), arg_config.n_ports);
        /* READY=1 once its resolver is set up. */
        r = egress_proxy_run(&arg_config, &error);
        if (r < 0 && error)
                return refuse(r, "%s", error);
        if (r < 0)
                return log_error_errno(r, "Proxy failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        int r;

        egress_config_init(&arg_config);
        r = parse_argv(argc, argv);
        if (r > 0)
                r = run();
        egress_config_done(&arg_config);
        return r < 0 ? 1 : 0;
}
