/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-connect.h: the strict parser of the HTTP CONNECT request head a job sends to pond-egress. */
#pragma once

#include <stdint.h>
#include <sys/socket.h>

#include "basic/macro.h"

#define EGRESS_HEAD_MAX 8192
#define EGRESS_HEADERS_MAX 64

typedef enum EgressHostKind {
        EGRESS_HOST_NAME,
        EGRESS_HOST_IPV4,
        EGRESS_HOST_IPV6,
} EgressHostKind;

typedef struct EgressConnectRequest {
        char host[EGRESS_HEAD_MAX]; /* as sent, without brackets; NUL-terminated */
        EgressHostKind kind;
        struct sockaddr_storage literal; /* for IPV4/IPV6, port filled in */
        socklen_t literal_len;
        uint16_t port;
} EgressConnectRequest;

/* Parses buf[0..len). Returns:
 *   0            need more bytes (len < EGRESS_HEAD_MAX and no complete head yet)
 *   1            a complete CONNECT head: *ret filled, *ret_head_len = bytes up to and including CRLFCRLF
 *   -EMSGSIZE    no complete head within EGRESS_HEAD_MAX bytes (answer 400)
 *   -EOPNOTSUPP  a well-formed request with another method (answer 405)
 *   -EBADMSG     anything else (answer 400)
 * *ret_reason (static string) says why on failure; may be NULL. */
int egress_connect_parse(const void *buf, size_t len, EgressConnectRequest *ret, size_t *ret_head_len,
                         const char **ret_reason);
