/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-tls.c: reads the server_name of a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3) with every
 * length checked against the one that encloses it. The proxy compares the name with the CONNECT host,
 * so a tunnel opened for an allowlisted name cannot carry a handshake for another (domain fronting on a
 * shared front end) or a plain-text protocol. Only the first record is read: a ClientHello fragmented
 * over several records is refused (no common client does that; larger post-quantum key shares still fit
 * one 16 KiB record). */
#include "egress-tls.h"

typedef struct Reader {
        const uint8_t *p;
        size_t left;
} Reader;

static bool take(Reader *r, size_t n, Reader *ret) {
        if (r->left < n)
                return false;
        if (ret)
                *ret = (Reader) { r->p, n };
        r->p += n;
        r->left -= n;
        return true;
}

static bool u8(Reader *r, unsigned *ret) {
        if (r->left < 1)
                return false;
        *ret = r->p[0];
        return take(r, 1, NULL);
}

static bool u16(Reader *r, unsigned *ret) {
        if (r->left < 2)
                return false;
        *ret = (unsigned) r->p[0] << 8 | r->p[1];
        return take(r, 2, NULL);
}

/* A vector with a length prefix of width 1 or 2. */
static bool vec(Reader *r, int width, Reader *ret) {
        unsigned n;

        if (!(width == 1 ? u8(r, &n) : u16(r, &n)))
                return false;
        return take(r, n, ret);
}

#define FAIL(why) do { *reason = (why); return -EPROTO; } while (0)

static int parse_server_name(Reader ext, char **ret, const char **reason) {
        Reader list, name;
        unsigned type;
        char *s = NULL;

        if (!vec(&ext, 2, &list) || ext.left != 0 || list.left == 0)
                FAIL("malformed server_name extension");
        while (list.left > 0) {
                if (!u8(&list, &type) || !vec(&list, 2, &name)) {
                        free(s);
                        FAIL("malformed server_name list");
                }
                if (type != 0)
                        continue;
                /* RFC 6066: at most one name of each type; an empty or NUL-carrying name is not a name. */
                if (s || name.left == 0 || memchr(name.p, 0, name.left)) {
                        free(s);
                        FAIL("server_name with an empty, duplicate or NUL-carrying host_name");
                }
                s = strndup((const char *) name.p, name.left);
                if (!s)
                        return -ENOMEM;
        }
        if (!s)
                FAIL("server_name without a host_name");
        *ret = s;
        return 0;
}

static int parse_extensions(Reader exts, char **ret_sni, const char **reason) {
        char *sni = NULL;
        int r;

        while (exts.left > 0) {
                unsigned type;
                Reader data;

                if (!u16(&exts, &type) || !vec(&exts, 2, &data)) {
                        free(sni);
                        FAIL("malformed extension");
                }
                if (type != 0)
                        continue;
                if (sni) {
                        free(sni);
                        FAIL("duplicate server_name extension");
                }
                r = parse_server_name(data, &sni, reason);
                if (r < 0)
                        return r;
        }
        if (!sni) {
                *reason = "ClientHello without server_name";
                return -ENOENT;
        }
        *ret_sni = sni;
        return 1;
}

static int parse_client_hello(Reader body, char **ret_sni, const char **reason) {
        Reader session, suites, compression, exts;
        unsigned version;

        if (!u16(&body, &version) || (version >> 8) != 3 || !take(&body, 32, NULL))
                FAIL("malformed ClientHello version or random");
        if (!vec(&body, 1, &session) || session.left > 32)
                FAIL("malformed ClientHello session id");
        if (!vec(&body, 2, &suites) || suites.left < 2 || suites.left % 2 != 0)
                FAIL("malformed ClientHello cipher suites");
        if (!vec(&body, 1, &compression) || compression.left < 1)
                FAIL("malformed ClientHello compression methods");
        if (body.left == 0) {
                *reason = "ClientHello without extensions";
                return -ENOENT;
        }
        if (!vec(&body, 2, &exts) || body.left != 0)
                FAIL("malformed ClientHello extensions");
        return parse_extensions(exts, ret_sni, reason);
}

int egress_tls_parse_sni(const void *buf, size_t len, char **ret_sni, const char **ret_reason) {
        const uint8_t *b = buf;
        const char *dummy, **reason = ret_reason ?: &dummy;
        size_t rec_len, hs_len;

        /* Judge the header bytes as they arrive: a plain-text client is refused on its first byte. */
        if (len >= 1 && b[0] != 0x16)
                FAIL("not a TLS handshake record");
        if (len >= 2 && b[1] != 0x03)
                FAIL("not a TLS record version");
        if (len < 5)
                return 0;
        rec_len = (size_t) b[3] << 8 | b[4];
        if (rec_len < 4 || rec_len > EGRESS_TLS_RECORD_MAX - 5)
                FAIL("TLS record length out of range");
        if (len < 5 + rec_len)
                return 0;
        if (b[5] != 1)
                FAIL("first handshake message is not a ClientHello");
        hs_len = (size_t) b[6] << 16 | (size_t) b[7] << 8 | b[8];
        if (hs_len + 4 > rec_len)
                FAIL("ClientHello fragmented over several TLS records");
        if (hs_len + 4 < rec_len)
                FAIL("TLS record carries more than the ClientHello");
        return parse_client_hello((Reader) { b + 9, hs_len }, ret_sni, reason);
}
