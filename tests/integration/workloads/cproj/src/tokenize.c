/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tokenize.c: splits a text into lower-case words (ASCII letters and apostrophes inside a word) */
#include <ctype.h>

#include "strbuf.h"
#include "tokenize.h"

int tokenize(const char *text, size_t len, int (*fn)(const char *word, void *userdata), void *userdata) {
        StrBuf w = {};
        int r = 0;
        for (size_t i = 0; i <= len && r >= 0; i++) {
                char c = i < len ? text[i] : ' ';
                if (isalpha((unsigned char) c) || (c == '\'' && w.len > 0 && i + 1 < len &&
                                                   isalpha((unsigned char) text[i + 1]))) {
                        char l = (char) tolower((unsigned char) c);
                        r = strbuf_append(&w, &l, 1);
                } else if (w.len > 0) {
                        r = fn(w.data, userdata);
                        strbuf_reset(&w);
                }
        }
        strbuf_free(&w);
        return r;
}
