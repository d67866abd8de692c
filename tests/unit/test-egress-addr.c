/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-egress-addr.c: the egress address classifier: every refused range, v4 and v6, the IPv6 forms that
 * embed IPv4, the metadata addresses and the host's own addresses. */
#include <arpa/inet.h>

#include "egress-addr.h"
#include "tests.h"

TEST_MAIN();

static const EgressLocalAddrs *local_;

static int classify(const char *text) {
        struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(443) };
        struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(443) };

        if (inet_pton(AF_INET, text, &s4.sin_addr) == 1)
                return egress_addr_classify((struct sockaddr *) &s4, sizeof s4, local_);
        if (inet_pton(AF_INET6, text, &s6.sin6_addr) == 1)
                return egress_addr_classify((struct sockaddr *) &s6, sizeof s6, local_);
        return -1;
}

#define CHECK(expected, text)                                                                        \
        do {                                                                                         \
                int _k = classify(text);                                                             \
                if (_k != (expected))                                                                \
                        TEST_FAIL_("%s: expected %s, got %s", text, egress_addr_class_to_string(expected), \
                                   egress_addr_class_to_string(_k) ?: "?");                          \
        } while (0)

TEST(ipv4_refused_ranges) {
        CHECK(EGRESS_ADDR_UNSPECIFIED, "0.0.0.0");
        CHECK(EGRESS_ADDR_THIS_NETWORK, "0.1.2.3");
        CHECK(EGRESS_ADDR_LOOPBACK, "127.0.0.1");
        CHECK(EGRESS_ADDR_LOOPBACK, "127.255.255.254");
        CHECK(EGRESS_ADDR_PRIVATE, "10.1.2.3");
        CHECK(EGRESS_ADDR_PRIVATE, "172.16.0.1");
        CHECK(EGRESS_ADDR_PRIVATE, "172.31.255.255");
        CHECK(EGRESS_ADDR_PRIVATE, "192.168.1.1");
        CHECK(EGRESS_ADDR_CGNAT, "100.64.0.1");
        CHECK(EGRESS_ADDR_CGNAT, "100.127.255.255");
        CHECK(EGRESS_ADDR_LINK_LOCAL, "169.254.1.1");
        CHECK(EGRESS_ADDR_BENCHMARKING, "198.18.0.1");
        CHECK(EGRESS_ADDR_BENCHMARKING, "198.19.255.255");
        CHECK(EGRESS_ADDR_MULTICAST, "224.0.0.1");
        CHECK(EGRESS_ADDR_MULTICAST, "239.255.255.250");
        CHECK(EGRESS_ADDR_RESERVED, "240.0.0.1");
        CHECK(EGRESS_ADDR_RESERVED, "192.88.99.1");
        CHECK(EGRESS_ADDR_BROADCAST, "255.255.255.255");
        CHECK(EGRESS_ADDR_IETF_PROTOCOL, "192.0.0.8");
}

TEST(ipv4_public_and_edges) {
        CHECK(EGRESS_ADDR_PUBLIC, "1.1.1.1");
        CHECK(EGRESS_ADDR_PUBLIC, "8.8.8.8");
        CHECK(EGRESS_ADDR_PUBLIC, "172.15.255.255");
        CHECK(EGRESS_ADDR_PUBLIC, "172.32.0.0");
        CHECK(EGRESS_ADDR_PUBLIC, "100.63.255.255");
        CHECK(EGRESS_ADDR_PUBLIC, "100.128.0.0");
        CHECK(EGRESS_ADDR_PUBLIC, "198.17.255.255");
        CHECK(EGRESS_ADDR_PUBLIC, "198.20.0.0");
        CHECK(EGRESS_ADDR_PUBLIC, "223.255.255.255");
        CHECK(EGRESS_ADDR_PUBLIC, "11.0.0.0");
        /* Documentation ranges are allowed on purpose (see egress-addr.c): tests use them as "public". */
        CHECK(EGRESS_ADDR_PUBLIC, "192.0.2.1");
        CHECK(EGRESS_ADDR_PUBLIC, "198.51.100.7");
        CHECK(EGRESS_ADDR_PUBLIC, "203.0.113.9");
}

TEST(metadata) {
        CHECK(EGRESS_ADDR_METADATA, "169.254.169.254");
        CHECK(EGRESS_ADDR_METADATA, "100.100.100.200");
        CHECK(EGRESS_ADDR_METADATA, "168.63.129.16");
        CHECK(EGRESS_ADDR_METADATA, "192.0.0.192");
        CHECK(EGRESS_ADDR_METADATA, "fd00:ec2::254");
        CHECK(EGRESS_ADDR_METADATA, "::ffff:169.254.169.254");
        CHECK(EGRESS_ADDR_METADATA, "64:ff9b::a9fe:a9fe");
        CHECK(EGRESS_ADDR_PUBLIC, "168.63.129.17");
}

TEST(ipv6_refused_ranges) {
        CHECK(EGRESS_ADDR_UNSPECIFIED, "::");
        CHECK(EGRESS_ADDR_LOOPBACK, "::1");
        CHECK(EGRESS_ADDR_IPV4_COMPATIBLE, "::127.0.0.1");
        CHECK(EGRESS_ADDR_IPV4_COMPATIBLE, "::8.8.8.8");
        CHECK(EGRESS_ADDR_LINK_LOCAL, "fe80::1");
        CHECK(EGRESS_ADDR_LINK_LOCAL, "febf::1");
        CHECK(EGRESS_ADDR_SITE_LOCAL, "fec0::1");
        CHECK(EGRESS_ADDR_UNIQUE_LOCAL, "fc00::1");
        CHECK(EGRESS_ADDR_UNIQUE_LOCAL, "fd12:3456::1");
        CHECK(EGRESS_ADDR_MULTICAST, "ff02::1");
        CHECK(EGRESS_ADDR_TEREDO, "2001::1");
        CHECK(EGRESS_ADDR_TEREDO, "2001:0:4136:e378:8000:63bf:3fff:fdd2");
        CHECK(EGRESS_ADDR_BENCHMARKING, "2001:2::1");
        CHECK(EGRESS_ADDR_IETF_PROTOCOL, "2001:10::1");
        CHECK(EGRESS_ADDR_RESERVED, "100::1");
        CHECK(EGRESS_ADDR_RESERVED, "4000::1");
        CHECK(EGRESS_ADDR_RESERVED, "::ffff:0:7f00:1"); /* IPv4-translated (RFC 2765): not global unicast */
}

TEST(ipv6_public) {
        CHECK(EGRESS_ADDR_PUBLIC, "2606:4700::1111");
        CHECK(EGRESS_ADDR_PUBLIC, "2a00:1450:4001::1");
        CHECK(EGRESS_ADDR_PUBLIC, "2001:200::1");
        CHECK(EGRESS_ADDR_PUBLIC, "2001:db8::1"); /* documentation, like TEST-NET: allowed */
        CHECK(EGRESS_ADDR_PUBLIC, "3fff:ffff::1");
}

TEST(embedded_ipv4) {
        CHECK(EGRESS_ADDR_LOOPBACK, "::ffff:127.0.0.1");
        CHECK(EGRESS_ADDR_PRIVATE, "::ffff:10.0.0.1");
        CHECK(EGRESS_ADDR_PUBLIC, "::ffff:8.8.8.8");
        CHECK(EGRESS_ADDR_LOOPBACK, "64:ff9b::127.0.0.1");
        CHECK(EGRESS_ADDR_PRIVATE, "64:ff9b::192.168.0.1");
        CHECK(EGRESS_ADDR_PUBLIC, "64:ff9b::8.8.8.8");
        /* 64:ff9b:1::/48, RFC 6052 layout: 10.0.0.1 is 0a00 in bits 48..63, 0001 after the u octet. */
        CHECK(EGRESS_ADDR_PRIVATE, "64:ff9b:1:0a00:0000:0100::");
        CHECK(EGRESS_ADDR_PUBLIC, "64:ff9b:1:0808:0008:0800::");
        CHECK(EGRESS_ADDR_LOOPBACK, "2002:7f00:1::1");
        CHECK(EGRESS_ADDR_LINK_LOCAL, "2002:a9fe:0101::");
        CHECK(EGRESS_ADDR_METADATA, "2002:a9fe:a9fe::1");
        CHECK(EGRESS_ADDR_PUBLIC, "2002:0808:0808::1");
}

TEST(host_addresses) {
        EgressLocalAddrs l = {};
        struct sockaddr_in s4 = { .sin_family = AF_INET };
        struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };

        inet_pton(AF_INET, "203.0.113.5", &s4.sin_addr);
        inet_pton(AF_INET6, "2a01:4f8::5", &s6.sin6_addr);
        ASSERT_EQ(1, egress_local_addrs_add(&l, (struct sockaddr *) &s4));
        ASSERT_EQ(1, egress_local_addrs_add(&l, (struct sockaddr *) &s6));
        local_ = &l;
        CHECK(EGRESS_ADDR_HOST, "203.0.113.5");
        CHECK(EGRESS_ADDR_HOST, "::ffff:203.0.113.5");
        CHECK(EGRESS_ADDR_HOST, "64:ff9b::203.0.113.5");
        CHECK(EGRESS_ADDR_HOST, "2002:cb00:7105::1");
        CHECK(EGRESS_ADDR_HOST, "2a01:4f8::5");
        CHECK(EGRESS_ADDR_PUBLIC, "203.0.113.6");
        CHECK(EGRESS_ADDR_PUBLIC, "2a01:4f8::6");
        local_ = NULL;
        egress_local_addrs_done(&l);
}

TEST(system_host_addresses_include_loopback) {
        _cleanup_(egress_local_addrs_done) EgressLocalAddrs l = {};

        ASSERT_OK(egress_local_addrs_load(&l));
        ASSERT_TRUE(l.n >= 1);
}

TEST(bad_family_and_length) {
        struct sockaddr_in s4 = { .sin_family = AF_INET };
        struct sockaddr sa = { .sa_family = AF_UNIX };

        ASSERT_EQ(EGRESS_ADDR_BAD_FAMILY, egress_addr_classify(&sa, sizeof sa, NULL));
        ASSERT_EQ(EGRESS_ADDR_BAD_FAMILY, egress_addr_classify((struct sockaddr *) &s4, 4, NULL));
        ASSERT_EQ(EGRESS_ADDR_BAD_FAMILY, egress_addr_classify(NULL, 0, NULL));
        for (int k = 0; k < _EGRESS_ADDR_MAX; k++)
                ASSERT_TRUE(egress_addr_class_to_string(k) != NULL);
}
