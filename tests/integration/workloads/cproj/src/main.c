/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* main.c: wc-top N: the N most frequent words of stdin, "count word" per line */
#include <stdio.h>
#include <stdlib.h>

#include "strbuf.h"
#include "wordcount.h"

int main(int argc, char **argv) {
        size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10;
        StrBuf in = {};
        char buf[4096];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, stdin)) > 0)
                if (strbuf_append(&in, buf, k) < 0)
                        return 1;
        HashMap m = {};
        if (wordcount_text(&m, in.data ? in.data : "", in.len) < 0)
                return 1;
        const HashEntry **top = calloc(n ? n : 1, sizeof *top);
        if (!top)
                return 1;
        size_t got = wordcount_top(&m, top, n);
        for (size_t i = 0; i < got; i++)
                printf("%lu %s\n", top[i]->count, top[i]->key);
        free(top);
        hashmap_free(&m);
        strbuf_free(&in);
        return 0;
}
