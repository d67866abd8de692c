/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* strbuf.h: a growable byte buffer */
#pragma once
#include <stddef.h>

typedef struct StrBuf {
        char *data;
        size_t len, cap;
} StrBuf;

int strbuf_append(StrBuf *b, const char *s, size_t n);
void strbuf_reset(StrBuf *b);
void strbuf_free(StrBuf *b);
