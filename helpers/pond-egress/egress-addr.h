/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-addr.h: is a socket address one pond-egress may dial? The classifier of the egress proxy. */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "basic/macro.h"

typedef enum EgressAddrClass {
        EGRESS_ADDR_PUBLIC,
        EGRESS_ADDR_UNSPECIFIED,
        EGRESS_ADDR_THIS_NETWORK,
        EGRESS_ADDR_LOOPBACK,
        EGRESS_ADDR_PRIVATE,
        EGRESS_ADDR_CGNAT,
        EGRESS_ADDR_LINK_LOCAL,
        EGRESS_ADDR_METADATA,
        EGRESS_ADDR_IETF_PROTOCOL,
        EGRESS_ADDR_BENCHMARKING,
        EGRESS_ADDR_MULTICAST,
        EGRESS_ADDR_RESERVED,
        EGRESS_ADDR_BROADCAST,
        EGRESS_ADDR_UNIQUE_LOCAL,
        EGRESS_ADDR_SITE_LOCAL,
        EGRESS_ADDR_TEREDO,
        EGRESS_ADDR_IPV4_COMPATIBLE,
        EGRESS_ADDR_HOST,
        EGRESS_ADDR_BAD_FAMILY,
        _EGRESS_ADDR_MAX,
        _EGRESS_ADDR_INVALID = -EINVAL,
} EgressAddrClass;

const char *egress_addr_class_to_string(EgressAddrClass c);

/* The addresses of the host itself (every interface, every namespace-visible address), kept as IPv6
 * with IPv4 in the ::ffff:0:0/96 form so one comparison covers both families. */
typedef struct EgressLocalAddrs {
        struct in6_addr *addrs;
        size_t n;
} EgressLocalAddrs;

void egress_local_addrs_done(EgressLocalAddrs *l);
int egress_local_addrs_add(EgressLocalAddrs *l, const struct sockaddr *sa);
/* Fills l from getifaddrs(). */
int egress_local_addrs_load(EgressLocalAddrs *l);

/* Classifies sa (AF_INET or AF_INET6, len bytes). Anything but EGRESS_ADDR_PUBLIC is refused.
 * IPv6 forms that embed an IPv4 address (::ffff:0:0/96, 64:ff9b::/96, 64:ff9b:1::/48, 2002::/16) are
 * classified by the embedded address. local may be NULL. */
EgressAddrClass egress_addr_classify(const struct sockaddr *sa, socklen_t len, const EgressLocalAddrs *local);

/* "192.0.2.1:443" / "[2001:db8::1]:443" into buf (at least EGRESS_ADDR_STRLEN bytes). */
#define EGRESS_ADDR_STRLEN (INET6_ADDRSTRLEN + 8)
const char *egress_addr_to_string(const struct sockaddr *sa, char *buf, size_t size);
