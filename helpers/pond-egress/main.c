/* pond-egress: the per-job HTTPS CONNECT proxy, run by pond-egress@ID.service. Options into arg_*, the
 * listening socket (--listen), then the loop in egress-proxy.c. See docs/egress.md. */
#include <getopt.h>
#include <systemd/sd-daemon.h>

#include "config.h"
#include "egress-proxy.h"
#include "jobid.h"
#include "log.h"
#include "socket-util.h"

#define ALLOW_FILES_MAX 8

static EgressConfig arg_config;
static const char *arg_listen;
static const char *arg_allow_files[ALLOW_FILES_MAX];
static size_t arg_n_allow_files;

static void help(void) {
        printf("Usage: pond-egress --job-id ID --listen ADDR:PORT --allow-file FILE...\n"
               "                   (--hosts-file FILE | --dns-server ADDR[:PORT]) [OPTIONS]\n\n"
               "The per-job HTTPS CONNECT proxy of pond. Normally started by pond-egress@ID.service.\n\n"
               "  --allow-file FILE       JSON {\"allow_hosts\": [...]}; repeatable (policy defaults, job)\n"
               "  --allowed-ports LIST    comma-separated CONNECT ports (default 443)\n"
               "  --allow-ip-literals     allow CONNECT to public IP literals (default: refused)\n"
               "  --max-conns N           concurrent connections (default 256)\n"
               "  --idle-timeout S        seconds without traffic (default 60)\n"
               "  --total-timeout S       seconds per connection (default 3600)\n"
               "  --max-bytes N           bytes per job, both directions (default 16 GiB)\n"
               "  --stats-file FILE       JSON totals written atomically at exit\n"
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
        case 'j':
                if (!job_id_is_valid(optarg_))
                        return log_error_errno(EINVAL, "Invalid --job-id '%s'.", optarg_);
                cf->job_id = optarg_;
                return 0;
        case 'l':
                arg_listen = optarg_;
                return 0;
        case 'a':
                if (arg_n_allow_files >= ALLOW_FILES_MAX)
                        return log_error_errno(E2BIG, "At most %d --allow-file options.", ALLOW_FILES_MAX);
                arg_allow_files[arg_n_allow_files++] = optarg_;
                return 0;
        case 'H':
                cf->hosts_file = optarg_;
                return 0;
        case 'D':
                cf->dns_server = optarg_;
                return 0;
        case 'p':
                if (egress_parse_ports(optarg_, cf) < 0)
                        return log_error_errno(EINVAL, "Invalid --allowed-ports '%s': up to %d ports 1..65535, "
                                               "comma-separated.", optarg_, EGRESS_PORTS_MAX);
                return 0;
        case 'L':
                cf->allow_ip_literals = true;
                return 0;
        case 'c':
                if (parse_u64(optarg_, 1, 65536, &v) < 0)
                        return log_error_errno(EINVAL, "Invalid --max-conns '%s': 1..65536.", optarg_);
                cf->max_conns = (unsigned) v;
                return 0;
        case 'i':
        case 't':
                if (parse_u64(optarg_, 1, 7 * 86400, &v) < 0)
                        return log_error_errno(EINVAL, "Invalid timeout '%s': 1..604800 seconds.", optarg_);
                *(c == 'i' ? &cf->idle_timeout_usec : &cf->total_timeout_usec) = v * 1000000ULL;
                return 0;
        case 'b':
                if (parse_u64(optarg_, 1, UINT64_MAX, &cf->max_bytes) < 0)
                        return log_error_errno(EINVAL, "Invalid --max-bytes '%s'.", optarg_);
                return 0;
        case 's':
                cf->stats_file = optarg_;
                return 0;
        case 'd':
                log_set_max_level(LOG_DEBUG);
                return 0;
        default:
                return -EINVAL;
        }
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "job-id", required_argument, NULL, 'j' },
                { "listen", required_argument, NULL, 'l' },
                { "allow-file", required_argument, NULL, 'a' },
                { "hosts-file", required_argument, NULL, 'H' },
                { "dns-server", required_argument, NULL, 'D' },
                { "allowed-ports", required_argument, NULL, 'p' },
                { "allow-ip-literals", no_argument, NULL, 'L' },
                { "max-conns", required_argument, NULL, 'c' },
                { "idle-timeout", required_argument, NULL, 'i' },
                { "total-timeout", required_argument, NULL, 't' },
                { "max-bytes", required_argument, NULL, 'b' },
                { "stats-file", required_argument, NULL, 's' },
                { "debug", no_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {}
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (c == 'h')
                        return help(), 0;
                if (c == 'V')
                        return puts("pond-egress " POND_VERSION), 0;
                r = parse_option(c, optarg);
                if (r < 0)
                        return r;
        }
        if (optind != argc)
                return log_error_errno(EINVAL, "Unexpected argument '%s'.", argv[optind]);
        if (!arg_config.job_id || !arg_listen || arg_n_allow_files == 0)
                return log_error_errno(EINVAL, "--job-id, --listen and --allow-file are required.");
        if (!!arg_config.hosts_file == !!arg_config.dns_server)
                return log_error_errno(EINVAL, "Exactly one of --hosts-file and --dns-server is required.");
        return 1;
}

static int run(void) {
        int r;

        for (size_t i = 0; i < arg_n_allow_files; i++) {
                _cleanup_free_ char *error = NULL;
                r = egress_allow_load_file(&arg_config.allow, arg_allow_files[i], &error);
                if (r < 0)
                        return error ? log_error_errno(r, "%s", error)
                                     : log_error_errno(r, "Failed to load '%s': %m", arg_allow_files[i]);
        }
        r = egress_local_addrs_load(&arg_config.local);
        if (r < 0)
                return log_error_errno(r, "Failed to list the host's addresses: %m");
        r = socket_listen_tcp(arg_listen, &arg_config.listen_fd);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on '%s' (ADDR:PORT or [V6]:PORT): %m", arg_listen);
        log_info("Job %s: %zu allowed host patterns, %zu ports, listening.", arg_config.job_id,
                 egress_allow_size(&arg_config.allow), arg_config.n_ports);
        (void) sd_notify(false, "READY=1");
        r = egress_proxy_run(&arg_config);
        if (r < 0)
                return log_error_errno(r, "Proxy failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        int r;

        log_set_prefix("pond-egress");
        egress_config_init(&arg_config);
        r = parse_argv(argc, argv);
        if (r > 0)
                r = run();
        egress_config_done(&arg_config);
        return r < 0 ? 1 : 0;
}
