/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-connect.c: libFuzzer target for egress_connect_parse(): no input may crash or read out of bounds,
 * an accepted head must be CONNECT with a port and a host of the allowed bytes, every refusal says why. */
#include <stdint.h>

#include "egress-connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static EgressConnectRequest req;
        const char *reason = NULL;
        size_t head_len = 0;
        int r;

        r = egress_connect_parse(data, size, &req, &head_len, &reason);
        if (r == 1) {
                if (size < 4 || head_len > size || head_len > EGRESS_HEAD_MAX || req.port == 0 ||
                    memcmp(data, "CONNECT ", 8) != 0 || memcmp(data + head_len - 4, "\r\n\r\n", 4) != 0)
                        abort();
                if (!req.host[0] ||
                    strspn(req.host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:") !=
                            strlen(req.host))
                        abort();
        } else if (r < 0 && !reason)
                abort();
        else if (r == 0 && size >= EGRESS_HEAD_MAX)
                abort();
        return 0;
}
