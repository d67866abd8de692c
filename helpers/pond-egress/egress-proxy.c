/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-proxy.c: the loop of pond-egress: the listening socket, the connection cap, the resolver, the
 * signals that stop it and the job's totals written at the end. Connections live in egress-conn.c. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/signal-util.h"
#include "basic/string-util.h"
#include "config.h"
#include "egress-audit.h"
#include "egress-proxy-internal.h"
#include "sidecar/socket-util.h"

void egress_config_init(EgressConfig *c) {
        *c = (EgressConfig) {
                .listen_fd = -EBADF,
                .ports = { 443 },
                .n_ports = 1,
                .max_conns = 256,
                .idle_timeout_usec = 60 * 1000000ULL,
                .total_timeout_usec = 3600 * 1000000ULL,
                .max_bytes = 16ULL << 30,
        };
}

void egress_config_done(EgressConfig *c) {
        egress_allow_done(&c->allow);
        egress_local_addrs_done(&c->local);
}


int egress_parse_ports(const char *s, EgressConfig *c) {
        uint16_t ports[EGRESS_PORTS_MAX];
        size_t n = 0;

        for (const char *p = s;;) {
                size_t l = strcspn(p, ",");
                if (n >= EGRESS_PORTS_MAX || parse_port(p, l, &ports[n]) < 0)
                        return -EINVAL;
                n++;
                if (!p[l])
                        break;
                p += l + 1;
        }
        memcpy(c->ports, ports, n * sizeof ports[0]);
        c->n_ports = n;
        return 0;
}

int egress_stats_format(const char *job_id, const EgressStats *s, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        const char *text;
        char *copy;

        if (!o)
                return -ENOMEM;
        if (json_object_object_add(o, "job_id", json_object_new_string(job_id ?: "")) < 0 ||
            json_object_object_add(o, "connections", json_object_new_uint64(s->connections)) < 0 ||
            json_object_object_add(o, "allowed", json_object_new_uint64(s->allowed)) < 0 ||
            json_object_object_add(o, "denied", json_object_new_uint64(s->denied)) < 0 ||
            json_object_object_add(o, "bytes_up", json_object_new_uint64(s->bytes_up)) < 0 ||
            json_object_object_add(o, "bytes_down", json_object_new_uint64(s->bytes_down)) < 0)
                return -ENOMEM;
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || asprintf(&copy, "%s\n", text) < 0)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

static int write_stats(const EgressConfig *c, const EgressStats *s) {
        _cleanup_free_ char *text = NULL, *dir = NULL;
        _cleanup_close_ int dfd = -EBADF;
        const char *slash = strrchr(c->stats_file, '/');
        int r;

        r = egress_stats_format(c->job_id, s, &text);
        if (r < 0)
                return r;
        dir = slash ? strndup(c->stats_file, (size_t) (slash - c->stats_file) + 1) : strdup(".");
        if (!dir)
                return -ENOMEM;
        dfd = open(dir, O_DIRECTORY | O_CLOEXEC | O_RDONLY);
        if (dfd < 0)
                return -errno;
        return write_file_atomic_at(dfd, slash ? slash + 1 : c->stats_file, text, strlen(text), 0644);
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                "Connection: close\r\nContent-Length: 43\r\n\r\npond-egress: job connection limit reached\n";
        EgressProxy *p = userdata;

        /* A bounded batch per wake-up, so a flood of connects cannot starve open tunnels. */
        for (int i = 0; i < 64; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0)
                        break;
                if (p->n_conns >= p->config->max_conns) {
                        p->stats.connections++;
                        p->stats.denied++;
                        egress_audit(EGRESS_DECISION_DENIED, &(EgressAuditRecord) {
                                .job_id = p->config->job_id, .reason = "job connection limit reached",
                                .status = 503 });
                        (void) !send(cfd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                        safe_close(cfd);
                        continue;
                }
                (void) egress_conn_new(p, cfd);
        }
        return 0;
}

static int setup_resolver(EgressProxy *p, char **ret_error) {
        const EgressConfig *c = p->config;
        _cleanup_free_ char *servers = NULL;
        int r;

        if ((c->hosts_file ? 1 : 0) + (c->dns_server ? 1 : 0) + (c->resolv_conf ? 1 : 0) > 1)
                return error_set(ret_error, -EINVAL, "at most one of --hosts-file, --dns-server and --resolv-conf");
        if (c->hosts_file) {
                r = egress_resolver_new_hosts(p->event, c->hosts_file, &p->resolver, ret_error);
                if (r < 0 && ret_error && !*ret_error)
                        error_set(ret_error, r, "cannot read the hosts file %s: %s", c->hosts_file, strerror(-r));
                return r;
        }
        if (c->dns_server)
                return egress_resolver_new_dns(p->event, c->dns_server, &p->resolver, ret_error);
        /* The worker's own nameservers; the job's reason then says what is missing, and where to set it. */
        r = egress_resolver_new_system(p->event, c->resolv_conf, &p->resolver, ret_error);
        if (r < 0 && !c->resolv_conf && ret_error && *ret_error) {
                char *m = strdupf("%s, and POND_EGRESS_RESOLVER in %s sets neither --dns-server nor --hosts-file",
                                  *ret_error, POND_CONFDIR "/egress.env");
                if (m) {
                        free(*ret_error);
                        *ret_error = m;
                }
        }
        if (r < 0)
                return r;
        if (egress_resolver_servers(p->resolver, &servers) >= 0)
                log_info("Resolving through the nameservers of %s: %s.", c->resolv_conf ?: EGRESS_RESOLV_CONF,
                         servers);
        return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int run_loop(EgressProxy *p, char **ret_error) {
        const EgressConfig *c = p->config;
        int r;

        signal(SIGPIPE, SIG_IGN);
        r = sigprocmask_many(SIG_BLOCK, NULL, SIGTERM, SIGINT, -1);
        if (r >= 0)
                r = sd_event_add_signal(p->event, NULL, SIGTERM, on_signal, NULL);
        if (r >= 0)
                r = sd_event_add_signal(p->event, NULL, SIGINT, on_signal, NULL);
        if (r >= 0)
                r = sd_event_add_io(p->event, &p->listen_source, c->listen_fd, EPOLLIN, on_accept, p);
        if (r < 0)
                return error_set(ret_error, r, "cannot set up the event loop: %s", strerror(-r));
        /* Before READY=1: a proxy without a resolver does not start, and says why (main.c). */
        r = setup_resolver(p, ret_error);
        if (r < 0)
                return r;
        (void) sd_notify(false, "READY=1");
        return sd_event_loop(p->event);
}

int egress_proxy_run(const EgressConfig *c, char **ret_error) {
        EgressProxy p = { .config = c };
        char summary[256];
        int r, k;

        r = sd_event_new(&p.event);
        if (r < 0)
                return error_set(ret_error, r, "cannot set up the event loop: %s", strerror(-r));
        r = run_loop(&p, ret_error);
        egress_conn_close_all(&p);
        snprintf(summary, sizeof summary, "%" PRIu64 " connections, %" PRIu64 " allowed, %" PRIu64 " denied, %"
                 PRIu64 " bytes up, %" PRIu64 " bytes down", p.stats.connections, p.stats.allowed,
                 p.stats.denied, p.stats.bytes_up, p.stats.bytes_down);
        egress_audit(EGRESS_DECISION_STATS, &(EgressAuditRecord) {
                .job_id = c->job_id, .reason = summary, .has_bytes = true,
                .bytes_up = p.stats.bytes_up, .bytes_down = p.stats.bytes_down });
        if (c->stats_file) {
                k = write_stats(c, &p.stats);
                if (k < 0 && r >= 0)
                        r = k;
        }
        egress_resolver_free(p.resolver);
        sd_event_source_disable_unref(p.listen_source);
        sd_event_unref(p.event);
        return r;
}
