/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-egress-tls.c: the ClientHello SNI parser against a real openssl s_client ClientHello (captured
 * from `openssl s_client -servername Allowed.Example.`) and truncated and malformed variants. */
#include "egress-tls.h"
#include "tests.h"

TEST_MAIN();

static const unsigned char hello[] = {
#include "test-egress-hello.inc"
};


/* Offsets in the capture: the server_name extension starts at 0x90 (type 0x0000), its host_name at 0x99;
 * the next extension (ec_point_formats, 0x000b) at 0xa9. */
#define SNI_EXT 0x90
#define SNI_NAME 0x99
#define NEXT_EXT 0xa9

static int parse(const unsigned char *b, size_t n, char **sni) {
        return egress_tls_parse_sni(b, n, sni, NULL);
}

TEST(real_client_hello) {
        _cleanup_free_ char *sni = NULL;
        const char *reason = "unset";

        ASSERT_EQ(1, egress_tls_parse_sni(hello, sizeof hello, &sni, &reason));
        ASSERT_STREQ("Allowed.Example.", sni);
}

TEST(every_truncation_needs_more) {
        for (size_t n = 0; n < sizeof hello; n++) {
                char *sni = NULL;
                ASSERT_EQ(0, parse(hello, n, &sni));
                ASSERT_TRUE(sni == NULL);
        }
}

TEST(trailing_bytes_after_record_are_ignored) {
        unsigned char b[sizeof hello + 10];
        _cleanup_free_ char *sni = NULL;

        memcpy(b, hello, sizeof hello);
        memset(b + sizeof hello, 0x17, 10);
        ASSERT_EQ(1, parse(b, sizeof b, &sni));
}

TEST(not_tls) {
        char *sni = NULL;
        const char *reason = NULL;

        ASSERT_ERROR(EPROTO, egress_tls_parse_sni("GET / HTTP/1.1\r\n\r\n", 18, &sni, &reason));
        ASSERT_CONTAINS("not a TLS", reason);
        ASSERT_ERROR(EPROTO, parse((const unsigned char *) "G", 1, &sni));
        ASSERT_ERROR(EPROTO, parse((const unsigned char *) "\x16\x02", 2, &sni));
        ASSERT_ERROR(EPROTO, parse((const unsigned char *) "SSH-2.0-x\r\n", 11, &sni));
}

static void mutate_and_expect(size_t off, unsigned char v, int expected) {
        unsigned char b[sizeof hello];
        char *sni = NULL;

        memcpy(b, hello, sizeof b);
        b[off] = v;
        ASSERT_EQ(expected, parse(b, sizeof b, &sni));
        free(sni);
}

TEST(malformed_variants) {
        mutate_and_expect(5, 2, -EPROTO);             /* ServerHello, not ClientHello */
        mutate_and_expect(8, 0x3a, -EPROTO);          /* handshake longer than the record: fragmented */
        mutate_and_expect(8, 0x38, -EPROTO);          /* record carries more than the ClientHello */
        mutate_and_expect(9, 0x02, -EPROTO);          /* legacy_version 2.x */
        mutate_and_expect(43, 33, -EPROTO);           /* session id longer than 32 */
        mutate_and_expect(SNI_EXT + 2, 0xff, -EPROTO);  /* extension length beyond the extensions */
        mutate_and_expect(SNI_NAME - 3, 1, -EPROTO);    /* a server_name list without a host_name */
        mutate_and_expect(3, 0x02, 0);                /* record length beyond the buffer: need more */
        mutate_and_expect(3, 0x41, -EPROTO);          /* record length over 2^14 */
}

TEST(no_sni) {
        unsigned char b[sizeof hello];
        char *sni = NULL;

        /* Rename the server_name extension (type 0) to an unknown type: a ClientHello without SNI. */
        memcpy(b, hello, sizeof b);
        b[SNI_EXT + 1] = 0x77;
        ASSERT_ERROR(ENOENT, parse(b, sizeof b, &sni));
}

TEST(duplicate_and_odd_names) {
        unsigned char b[sizeof hello];
        char *sni = NULL;

        memcpy(b, hello, sizeof b);
        b[SNI_NAME + 3] = 0;    /* NUL inside the host_name */
        ASSERT_ERROR(EPROTO, parse(b, sizeof b, &sni));
        memcpy(b, hello, sizeof b);
        b[NEXT_EXT + 1] = 0x00; /* ec_point_formats becomes a second server_name extension */
        ASSERT_ERROR(EPROTO, parse(b, sizeof b, &sni));
}
