/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-addr.c: the address classifier of pond-egress. A tunnel is dialled only to an address that is
 * globally routable and not the host, its neighbours or a cloud metadata service; every IPv6 form that
 * carries an IPv4 address inside is judged by that IPv4 address.
 *
 * Documentation ranges (192.0.2.0/24 TEST-NET-1, 198.51.100.0/24 TEST-NET-2, 203.0.113.0/24 TEST-NET-3,
 * 2001:db8::/32) are deliberately treated as public: they are never routed on the internet, so allowing
 * them opens a path to nothing real, and they are exactly what tests and demos use for "an upstream on
 * the internet" (RFC 5737/3849). Refusing them would protect nothing and make the allowed path untestable
 * without weakening the classifier elsewhere. A site that numbers internal hosts from them (a misuse)
 * must say so in its threat model. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdint.h>

#include "egress-addr.h"

static const char *const class_table[_EGRESS_ADDR_MAX] = {
        [EGRESS_ADDR_PUBLIC] = "public",
        [EGRESS_ADDR_UNSPECIFIED] = "unspecified",
        [EGRESS_ADDR_THIS_NETWORK] = "this-network",
        [EGRESS_ADDR_LOOPBACK] = "loopback",
        [EGRESS_ADDR_PRIVATE] = "private",
        [EGRESS_ADDR_CGNAT] = "cgnat",
        [EGRESS_ADDR_LINK_LOCAL] = "link-local",
        [EGRESS_ADDR_METADATA] = "metadata",
        [EGRESS_ADDR_IETF_PROTOCOL] = "ietf-protocol",
        [EGRESS_ADDR_BENCHMARKING] = "benchmarking",
        [EGRESS_ADDR_MULTICAST] = "multicast",
        [EGRESS_ADDR_RESERVED] = "reserved",
        [EGRESS_ADDR_BROADCAST] = "broadcast",
        [EGRESS_ADDR_UNIQUE_LOCAL] = "unique-local",
        [EGRESS_ADDR_SITE_LOCAL] = "site-local",
        [EGRESS_ADDR_TEREDO] = "teredo",
        [EGRESS_ADDR_IPV4_COMPATIBLE] = "ipv4-compatible",
        [EGRESS_ADDR_HOST] = "host-address",
        [EGRESS_ADDR_BAD_FAMILY] = "bad-family",
};

const char *egress_addr_class_to_string(EgressAddrClass c) {
        return c >= 0 && c < _EGRESS_ADDR_MAX ? class_table[c] : NULL;
}

void egress_local_addrs_done(EgressLocalAddrs *l) {
        free(l->addrs);
        *l = (EgressLocalAddrs) {};
}

static void v4_mapped(uint32_t v4, struct in6_addr *ret) {
        *ret = (struct in6_addr) {};
        ret->s6_addr[10] = ret->s6_addr[11] = 0xff;
        v4 = htonl(v4);
        memcpy(ret->s6_addr + 12, &v4, 4);
}

int egress_local_addrs_add(EgressLocalAddrs *l, const struct sockaddr *sa) {
        struct in6_addr a, *n;

        if (sa->sa_family == AF_INET)
                v4_mapped(ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr), &a);
        else if (sa->sa_family == AF_INET6)
                a = ((const struct sockaddr_in6 *) sa)->sin6_addr;
        else
                return 0;
        n = reallocarray(l->addrs, l->n + 1, sizeof *n);
        if (!n)
                return -ENOMEM;
        n[l->n++] = a;
        l->addrs = n;
        return 1;
}

int egress_local_addrs_load(EgressLocalAddrs *l) {
        struct ifaddrs *ifa;
        int r = 0;

        if (getifaddrs(&ifa) < 0)
                return negative_errno();
        for (struct ifaddrs *i = ifa; i && r >= 0; i = i->ifa_next)
                if (i->ifa_addr)
                        r = egress_local_addrs_add(l, i->ifa_addr);
        freeifaddrs(ifa);
        return r < 0 ? r : 0;
}

static bool is_local(const EgressLocalAddrs *local, const struct in6_addr *a) {
        if (local)
                for (size_t i = 0; i < local->n; i++)
                        if (memcmp(&local->addrs[i], a, sizeof *a) == 0)
                                return true;
        return false;
}

#define V4(a, b, c, d) (((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((uint32_t) (c) << 8) | (uint32_t) (d))

static bool in4(uint32_t a, uint32_t net, unsigned prefix) {
        uint32_t mask = prefix == 0 ? 0 : UINT32_MAX << (32 - prefix);
        return (a & mask) == (net & mask);
}

static EgressAddrClass classify_v4(uint32_t a, const EgressLocalAddrs *local) {
        static const struct {
                uint32_t net;
                unsigned prefix;
                EgressAddrClass class;
        } table[] = {
                /* Specific addresses first, so the reason names the metadata service and not its range. */
                { V4(169, 254, 169, 254), 32, EGRESS_ADDR_METADATA },   /* AWS, GCP, Azure IMDS, OpenStack */
                { V4(100, 100, 100, 200), 32, EGRESS_ADDR_METADATA },   /* Alibaba Cloud */
                { V4(168, 63, 129, 16), 32, EGRESS_ADDR_METADATA },     /* Azure wireserver (a public range) */
                { V4(192, 0, 0, 192), 32, EGRESS_ADDR_METADATA },       /* Oracle Cloud */
                { V4(255, 255, 255, 255), 32, EGRESS_ADDR_BROADCAST },
                { V4(0, 0, 0, 0), 32, EGRESS_ADDR_UNSPECIFIED },
                { V4(0, 0, 0, 0), 8, EGRESS_ADDR_THIS_NETWORK },
                { V4(10, 0, 0, 0), 8, EGRESS_ADDR_PRIVATE },
                { V4(100, 64, 0, 0), 10, EGRESS_ADDR_CGNAT },
                { V4(127, 0, 0, 0), 8, EGRESS_ADDR_LOOPBACK },
                { V4(169, 254, 0, 0), 16, EGRESS_ADDR_LINK_LOCAL },
                { V4(172, 16, 0, 0), 12, EGRESS_ADDR_PRIVATE },
                { V4(192, 0, 0, 0), 24, EGRESS_ADDR_IETF_PROTOCOL },
                { V4(192, 88, 99, 0), 24, EGRESS_ADDR_RESERVED },       /* 6to4 relay anycast, deprecated */
                { V4(192, 168, 0, 0), 16, EGRESS_ADDR_PRIVATE },
                { V4(198, 18, 0, 0), 15, EGRESS_ADDR_BENCHMARKING },
                { V4(224, 0, 0, 0), 4, EGRESS_ADDR_MULTICAST },
                { V4(240, 0, 0, 0), 4, EGRESS_ADDR_RESERVED },
        };
        struct in6_addr m;

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (in4(a, table[i].net, table[i].prefix))
                        return table[i].class;
        v4_mapped(a, &m);
        return is_local(local, &m) ? EGRESS_ADDR_HOST : EGRESS_ADDR_PUBLIC;
}

static uint32_t be32_at(const uint8_t *p) {
        return V4(p[0], p[1], p[2], p[3]);
}

static bool in6(const uint8_t *a, const uint8_t *net, unsigned prefix) {
        unsigned bytes = prefix / 8, bits = prefix % 8;

        if (memcmp(a, net, bytes) != 0)
                return false;
        return bits == 0 || ((a[bytes] ^ net[bytes]) & (0xff << (8 - bits))) == 0;
}

/* The IPv6 forms that carry an IPv4 address: returns true and the address in *ret. */
static bool embedded_v4(const uint8_t *a, uint32_t *ret) {
        static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff };
        static const uint8_t nat64[16] = { 0x00, 0x64, 0xff, 0x9b };
        static const uint8_t nat64_local[16] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };
        static const uint8_t six_to_four[16] = { 0x20, 0x02 };

        if (in6(a, mapped, 96) || in6(a, nat64, 96))
                *ret = be32_at(a + 12);
        else if (in6(a, nat64_local, 48))
                /* RFC 6052 /48 layout: bits 64..71 (the "u" octet) are skipped. */
                *ret = V4(a[6], a[7], a[9], a[10]);
        else if (in6(a, six_to_four, 16))
                *ret = be32_at(a + 2);
        else
                return false;
        return true;
}

static EgressAddrClass classify_v6(const struct in6_addr *addr, const EgressLocalAddrs *local) {
        static const struct {
                uint8_t net[16];
                unsigned prefix;
                EgressAddrClass class;
        } table[] = {
                { { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128, EGRESS_ADDR_METADATA }, /* fd00:ec2::254 */
                { { [15] = 0 }, 128, EGRESS_ADDR_UNSPECIFIED },
                { { [15] = 1 }, 128, EGRESS_ADDR_LOOPBACK },
                { { [15] = 0 }, 96, EGRESS_ADDR_IPV4_COMPATIBLE },      /* ::/96, deprecated (RFC 4291) */
                { { 0x01, 0x00 }, 64, EGRESS_ADDR_RESERVED },           /* 100::/64 discard-only */
                { { 0x20, 0x01, 0x00, 0x00 }, 32, EGRESS_ADDR_TEREDO }, /* 2001::/32 */
                { { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, EGRESS_ADDR_BENCHMARKING },
                { { 0x20, 0x01 }, 23, EGRESS_ADDR_IETF_PROTOCOL },      /* 2001::/23 */
                { { 0xfc }, 7, EGRESS_ADDR_UNIQUE_LOCAL },
                { { 0xfe, 0x80 }, 10, EGRESS_ADDR_LINK_LOCAL },
                { { 0xfe, 0xc0 }, 10, EGRESS_ADDR_SITE_LOCAL },
                { { 0xff }, 8, EGRESS_ADDR_MULTICAST },
        };
        static const uint8_t global_unicast[16] = { 0x20 };
        const uint8_t *a = addr->s6_addr;
        uint32_t v4;

        if (embedded_v4(a, &v4))
                return classify_v4(v4, local);
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (in6(a, table[i].net, table[i].prefix))
                        return table[i].class;
        /* Outside 2000::/3 nothing is allocated for global unicast: refuse whatever the future brings. */
        if (!in6(a, global_unicast, 3))
                return EGRESS_ADDR_RESERVED;
        return is_local(local, addr) ? EGRESS_ADDR_HOST : EGRESS_ADDR_PUBLIC;
}

EgressAddrClass egress_addr_classify(const struct sockaddr *sa, socklen_t len, const EgressLocalAddrs *local) {
        if (!sa)
                return EGRESS_ADDR_BAD_FAMILY;
        if (sa->sa_family == AF_INET && len >= (socklen_t) sizeof(struct sockaddr_in))
                return classify_v4(ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr), local);
        if (sa->sa_family == AF_INET6 && len >= (socklen_t) sizeof(struct sockaddr_in6))
                return classify_v6(&((const struct sockaddr_in6 *) sa)->sin6_addr, local);
        return EGRESS_ADDR_BAD_FAMILY;
}

const char *egress_addr_to_string(const struct sockaddr *sa, char *buf, size_t size) {
        char a[INET6_ADDRSTRLEN];

        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *s = (const struct sockaddr_in *) sa;
                inet_ntop(AF_INET, &s->sin_addr, a, sizeof a);
                snprintf(buf, size, "%s:%u", a, ntohs(s->sin_port));
        } else if (sa->sa_family == AF_INET6) {
                const struct sockaddr_in6 *s = (const struct sockaddr_in6 *) sa;
                inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof a);
                snprintf(buf, size, "[%s]:%u", a, ntohs(s->sin6_port));
        } else
                snprintf(buf, size, "(family %d)", sa->sa_family);
        return buf;
}
