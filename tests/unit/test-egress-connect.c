/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-egress-connect.c: the CONNECT request head parser: good heads, every refusal and its status. */
#include <arpa/inet.h>

#include "egress-connect.h"
#include "tests.h"

TEST_MAIN();

static EgressConnectRequest req_;

static int parse(const char *s, size_t *head_len, const char **reason) {
        size_t dummy;
        return egress_connect_parse(s, strlen(s), &req_, head_len ?: &dummy, reason);
}

TEST(good_name) {
        const char *s = "CONNECT registry.example.org:443 HTTP/1.1\r\nHost: registry.example.org:443\r\n"
                        "User-Agent: pip\r\n\r\n";
        size_t len = 0;

        ASSERT_EQ(1, parse(s, &len, NULL));
        ASSERT_EQ(strlen(s), len);
        ASSERT_STREQ("registry.example.org", req_.host);
        ASSERT_EQ(443, req_.port);
        ASSERT_EQ(EGRESS_HOST_NAME, req_.kind);
}

TEST(no_headers_and_http10) {
        ASSERT_EQ(1, parse("CONNECT a.example:8443 HTTP/1.0\r\n\r\n", NULL, NULL));
        ASSERT_EQ(8443, req_.port);
}

TEST(trailing_tunnel_bytes) {
        const char *s = "CONNECT x.example:443 HTTP/1.1\r\n\r\n\x16\x03\x01";
        size_t len = 0;

        ASSERT_EQ(1, parse(s, &len, NULL));
        ASSERT_EQ(strlen(s) - 3, len);
}

TEST(ip_literals) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &req_.literal;
        struct sockaddr_in *s4 = (struct sockaddr_in *) &req_.literal;
        char buf[INET6_ADDRSTRLEN];

        ASSERT_EQ(1, parse("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_EQ(EGRESS_HOST_IPV6, req_.kind);
        ASSERT_STREQ("2001:db8::1", req_.host);
        ASSERT_EQ(AF_INET6, s6->sin6_family);
        ASSERT_EQ(443, ntohs(s6->sin6_port));
        ASSERT_STREQ("2001:db8::1", inet_ntop(AF_INET6, &s6->sin6_addr, buf, sizeof buf));
        ASSERT_EQ(1, parse("CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_EQ(EGRESS_HOST_IPV6, req_.kind);
        ASSERT_EQ(1, parse("CONNECT 198.51.100.1:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_EQ(EGRESS_HOST_IPV4, req_.kind);
        ASSERT_EQ(AF_INET, s4->sin_family);
        /* Not inet_pton's dotted quad: stays a name (and the name check refuses it later). */
        ASSERT_EQ(1, parse("CONNECT 127.1:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_EQ(EGRESS_HOST_NAME, req_.kind);
}

TEST(bad_ipv6) {
        ASSERT_ERROR(EBADMSG, parse("CONNECT [::1:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT [fe80::1%eth0]:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT [zz::1]:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT []:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT ::1:443 HTTP/1.1\r\n\r\n", NULL, NULL));
}

TEST(ports) {
        ASSERT_EQ(1, parse("CONNECT a.b:1 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_EQ(1, parse("CONNECT a.b:65535 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_EQ(65535, req_.port);
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:0 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:65536 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:0443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:+443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b: HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443a HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:4430000 HTTP/1.1\r\n\r\n", NULL, NULL));
}

TEST(other_methods_are_405) {
        const char *reason = NULL;

        ASSERT_ERROR(EOPNOTSUPP, parse("GET http://a.b/ HTTP/1.1\r\nHost: a.b\r\n\r\n", NULL, &reason));
        ASSERT_CONTAINS("CONNECT", reason);
        ASSERT_ERROR(EOPNOTSUPP, parse("POST / HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EOPNOTSUPP, parse("connect a.b:443 HTTP/1.1\r\n\r\n", NULL, NULL));
}

TEST(garbage_is_400) {
        const char *reason = NULL;

        ASSERT_ERROR(EBADMSG, parse("\x16\x03\x01\x02", NULL, &reason));
        ASSERT_CONTAINS("not an HTTP request", reason);
        ASSERT_ERROR(EBADMSG, parse("\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1\n\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/2.0\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1 \r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT  a.b:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a_b.c:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT http://a.b:443 HTTP/1.1\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1\r\nNoColon\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1\r\n: empty\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1\r\nA: b\rc\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1\r\nA b: c\r\n\r\n", NULL, NULL));
        ASSERT_ERROR(EBADMSG, parse("CONNECT a.b:443 HTTP/1.1\r\nA: \x01\r\n\r\n", NULL, NULL));
}

TEST(incomplete_needs_more) {
        ASSERT_EQ(0, parse("", NULL, NULL));
        ASSERT_EQ(0, parse("CONN", NULL, NULL));
        ASSERT_EQ(0, parse("CONNECT a.b:443 HTTP/1.1\r\n", NULL, NULL));
        ASSERT_EQ(0, parse("CONNECT a.b:443 HTTP/1.1\r\nHost: a\r\n\r", NULL, NULL));
}

TEST(oversize_and_header_count) {
        char *big = malloc(EGRESS_HEAD_MAX + 100);
        const char *reason = NULL;
        size_t n = 0;

        ASSERT_TRUE(big != NULL);
        n += (size_t) sprintf(big, "CONNECT a.b:443 HTTP/1.1\r\n");
        while (n < EGRESS_HEAD_MAX)
                n += (size_t) sprintf(big + n, "X: y\r\n");
        ASSERT_ERROR(EMSGSIZE, egress_connect_parse(big, n, &req_, &n, &reason));
        ASSERT_CONTAINS("too large", reason);

        n = (size_t) sprintf(big, "CONNECT a.b:443 HTTP/1.1\r\n");
        for (int i = 0; i < EGRESS_HEADERS_MAX + 1; i++)
                n += (size_t) sprintf(big + n, "X: y\r\n");
        n += (size_t) sprintf(big + n, "\r\n");
        ASSERT_ERROR(EBADMSG, egress_connect_parse(big, n, &req_, &n, NULL));
        free(big);
}
