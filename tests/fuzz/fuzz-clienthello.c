/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-clienthello.c: libFuzzer target for egress_tls_parse_sni(): no input may crash or read out of
 * bounds; a returned SNI is non-empty, NUL-free and within the record; every refusal says why. */
#include <stdint.h>

#include "egress-tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *sni = NULL;
        const char *reason = NULL;
        int r;

        r = egress_tls_parse_sni(data, size, &sni, &reason);
        if (r == 1) {
                if (!sni || !sni[0] || strlen(sni) + 9 > size || !memmem(data, size, sni, strlen(sni)))
                        abort();
        } else if (sni)
                abort();
        if (r < 0 && r != -ENOMEM && !reason)
                abort();
        if (r == 0 && size >= EGRESS_TLS_RECORD_MAX)
                abort();
        free(sni);
        return 0;
}
