/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-tls.h: the SNI of the TLS ClientHello a job sends through a pond-egress tunnel. */
#pragma once

#include <stdint.h>

#include "basic/macro.h"

/* A TLS record's plaintext is at most 2^14 bytes (RFC 8446 5.1); the proxy buffers one record. */
#define EGRESS_TLS_RECORD_MAX (5 + 16384)

/* Parses the first TLS record in buf[0..len). Returns:
 *   1          a ClientHello with a server_name host_name: *ret_sni (malloc'd, as sent) set
 *   0          need more bytes
 *   -ENOENT    a well-formed ClientHello without server_name
 *   -EPROTO    not TLS, not a ClientHello, malformed, or a ClientHello fragmented over several records
 * *ret_reason (static string) says why on failure; may be NULL. */
int egress_tls_parse_sni(const void *buf, size_t len, char **ret_sni, const char **ret_reason);
