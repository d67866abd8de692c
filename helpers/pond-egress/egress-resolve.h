/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-resolve.h: name -> socket addresses for pond-egress, from a hosts file, one DNS server, or the
 * nameservers of the worker's resolv.conf (never the rest of the system resolver: no NSS, no /etc/hosts, no
 * search domains). */
#pragma once

#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"

#define EGRESS_RESOLVE_MAX_ADDRS 64
#define EGRESS_RESOLV_CONF "/etc/resolv.conf"

typedef struct EgressSockaddr {
        struct sockaddr_storage sa;
        socklen_t len;
} EgressSockaddr;

/* Appends a copy of a (AF_INET or AF_INET6) with its port set to port to the array *l of *n entries; -E2BIG
 * past EGRESS_RESOLVE_MAX_ADDRS. Both resolvers (hosts file, DNS) build their answers with it. */
int egress_sockaddr_append(EgressSockaddr **l, size_t *n, const EgressSockaddr *a, uint16_t port);

typedef struct EgressResolver EgressResolver;
typedef struct EgressQuery EgressQuery;

/* r: 0 and n >= 1 addresses (port set), or -ENOENT (no such name or no address), -ETIMEDOUT, -E2BIG (more
 * than EGRESS_RESOLVE_MAX_ADDRS), -EIO. Called once, from the event loop, never from inside resolve(); the
 * query is freed after the call returns. */
typedef void (*EgressResolveCallback)(int r, const EgressSockaddr *addrs, size_t n, void *userdata);

/* A hosts(5) file, read once: "ADDRESS NAME..." lines, '#' comments; names that are not LDH names are
 * ignored (they could never match the allowlist). */
int egress_resolver_new_hosts(sd_event *e, const char *path, EgressResolver **ret, char **ret_error);
/* server: "ADDR", "ADDR:PORT", "[V6]:PORT" (c-ares csv syntax, one server). */
int egress_resolver_new_dns(sd_event *e, const char *server, EgressResolver **ret, char **ret_error);
/* The worker's own nameservers: those of the resolv.conf(5) file path (NULL: EGRESS_RESOLV_CONF), the first
 * three, as c-ares reads them (numeric addresses, port 53), and nothing else of the file. -ENOENT with
 * "no resolver configured: PATH does not exist" or "... names no nameserver"; another -errno with "cannot
 * read PATH: ..."; -EINVAL when c-ares would not ask the nameservers the file names. */
int egress_resolver_new_system(sd_event *e, const char *path, EgressResolver **ret, char **ret_error);
/* The servers a DNS resolver asks, "ADDR:PORT,[V6]:PORT" (malloc'd); -EOPNOTSUPP for a hosts file. */
int egress_resolver_servers(EgressResolver *r, char **ret);
EgressResolver *egress_resolver_free(EgressResolver *r);
static inline void egress_resolver_freep(EgressResolver **r) {
        egress_resolver_free(*r);
}

/* name must be normalized (egress_name_normalize). */
int egress_resolver_resolve(EgressResolver *r, const char *name, uint16_t port, EgressResolveCallback cb,
                            void *userdata, EgressQuery **ret_query);
/* The callback will not be called. */
void egress_query_cancel(EgressQuery *q);
