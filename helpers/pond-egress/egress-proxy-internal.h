/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-proxy-internal.h: what the proxy loop (egress-proxy.c) and a connection (egress-conn.c) share. */
#pragma once

#include <systemd/sd-event.h>

#include "egress-proxy.h"
#include "egress-resolve.h"

typedef struct EgressConn EgressConn;

typedef struct EgressProxy {
        const EgressConfig *config;
        sd_event *event;
        EgressResolver *resolver;
        sd_event_source *listen_source;
        EgressConn *conns;      /* doubly linked, for shutdown and live byte counts */
        unsigned n_conns;
        uint64_t next_id;
        EgressStats stats;
} EgressProxy;

/* Takes fd (an accepted, non-blocking socket) in every case. */
int egress_conn_new(EgressProxy *p, int fd);
void egress_conn_free(EgressConn *c);
void egress_conn_close_all(EgressProxy *p);
