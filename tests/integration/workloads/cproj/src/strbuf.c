/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* strbuf.c: a growable byte buffer, always NUL-terminated */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

int strbuf_append(StrBuf *b, const char *s, size_t n) {
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 16;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *p = realloc(b->data, cap);
                if (!p)
                        return -ENOMEM;
                b->data = p;
                b->cap = cap;
        }
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = 0;
        return 0;
}

void strbuf_reset(StrBuf *b) {
        b->len = 0;
        if (b->data)
                b->data[0] = 0;
}

void strbuf_free(StrBuf *b) {
        free(b->data);
        *b = (StrBuf) {};
}
