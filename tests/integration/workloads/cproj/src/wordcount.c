/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* wordcount.c: counting words into a hashmap and ranking them */
#include <stdlib.h>
#include <string.h>

#include "tokenize.h"
#include "wordcount.h"

static int add_word(const char *word, void *userdata) {
        return hashmap_add(userdata, word, 1);
}

int wordcount_text(HashMap *m, const char *text, size_t len) {
        return tokenize(text, len, add_word, m);
}

static int cmp(const void *a, const void *b) {
        const HashEntry *x = *(const HashEntry * const *) a, *y = *(const HashEntry * const *) b;
        if (x->count != y->count)
                return x->count < y->count ? 1 : -1;
        return strcmp(x->key, y->key);
}

size_t wordcount_top(const HashMap *m, const HashEntry **out, size_t n) {
        const HashEntry **all = malloc((m->n_used + 1) * sizeof *all);
        size_t k = 0;
        if (!all)
                return 0;
        for (size_t i = 0; i < m->n_slots; i++)
                if (m->slots[i].key)
                        all[k++] = &m->slots[i];
        qsort(all, k, sizeof *all, cmp);
        if (n > k)
                n = k;
        memcpy(out, all, n * sizeof *out);
        free(all);
        return n;
}
