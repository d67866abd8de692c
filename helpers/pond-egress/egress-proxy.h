/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-proxy.h: pond-egress, the per-job HTTPS CONNECT proxy: configuration and the loop. */
#pragma once

#include <stdint.h>

#include "egress-addr.h"
#include "sidecar/egress-allow.h"

#define EGRESS_PORTS_MAX 32

typedef struct EgressConfig {
        const char *job_id;
        int listen_fd;                  /* a listening TCP socket; the proxy does not close it */
        EgressAllow allow;
        const char *hosts_file;         /* at most one of hosts_file and dns_server; with neither, the */
        const char *dns_server;         /* nameservers of resolv_conf (NULL: /etc/resolv.conf) */
        const char *resolv_conf;
        uint16_t ports[EGRESS_PORTS_MAX];
        size_t n_ports;
        bool allow_ip_literals;
        unsigned max_conns;
        uint64_t idle_timeout_usec;
        uint64_t total_timeout_usec;
        uint64_t max_bytes;             /* both directions, all connections of the job */
        const char *stats_file;         /* NULL: none */
        EgressLocalAddrs local;         /* the host's own addresses, refused as upstreams */
} EgressConfig;

typedef struct EgressStats {
        uint64_t connections, allowed, denied, bytes_up, bytes_down;
} EgressStats;

/* Defaults: port 443, 256 connections, 60 s idle, 1 h total, 16 GiB. */
void egress_config_init(EgressConfig *c);
void egress_config_done(EgressConfig *c);

/* "443,4443": at most EGRESS_PORTS_MAX ports 1..65535. */
int egress_parse_ports(const char *s, EgressConfig *c);

/* Sets up the resolver, tells systemd READY=1, runs until SIGTERM or SIGINT; then writes the stats file (if
 * configured). 0 or -errno; a set-up that failed before READY=1 also with *ret_error, why (a sentence that
 * names the file or option, for the unit's status text). */
int egress_proxy_run(const EgressConfig *c, char **ret_error);

/* The stats as JSON text (malloc'd). */
int egress_stats_format(const char *job_id, const EgressStats *s, char **ret);
