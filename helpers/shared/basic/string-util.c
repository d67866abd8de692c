/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* string-util.c: formatted copies, path joining, strict UTF-8. */
#include <stdint.h>
#include <stdio.h>

#include "basic/string-util.h"

char *strdupf_va(const char *fmt, va_list ap) {
        char *s;

        /* The only place a caller's format is passed on: every caller is itself checked by _printf_. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
#pragma GCC diagnostic pop
        return s;
}

char *strdupf(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        s = strdupf_va(fmt, ap);
        va_end(ap);
        return s;
}

char *path_join(const char *prefix, const char *name) {
        return prefix ? strdupf("%s/%s", prefix, name) : strdup(name);
}

/* Length of the well-formed UTF-8 sequence at p, or 0 if it is not one. */
static size_t utf8_sequence_length(const unsigned char *p, size_t left) {
        unsigned char lo = 0x80, hi = 0xbf;
        size_t n;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                n = 2;
        else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                n = 3;
                if (p[0] == 0xe0)
                        lo = 0xa0;
                else if (p[0] == 0xed)
                        hi = 0x9f;
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                n = 4;
                if (p[0] == 0xf0)
                        lo = 0x90;
                else if (p[0] == 0xf4)
                        hi = 0x8f;
        } else
                return 0;

        if (left < n || p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if (p[i] < 0x80 || p[i] > 0xbf)
                        return 0;
        return n;
}

size_t utf8_valid_prefix(const char *s, size_t len) {
        size_t i = 0;

        while (i < len) {
                size_t n = utf8_sequence_length((const unsigned char *) s + i, len - i);

                if (n == 0)
                        break;
                i += n;
        }
        return i;
}
