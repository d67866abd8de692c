/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hashmap.c: string -> count, open addressing with linear probing, FNV-1a, grown at 3/4 load */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

static uint64_t fnv1a(const char *s) {
        uint64_t h = 1469598103934665603ULL;
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * 1099511628211ULL;
        return h;
}

static HashEntry *find(HashEntry *slots, size_t n_slots, const char *key) {
        size_t i = fnv1a(key) & (n_slots - 1);
        while (slots[i].key && strcmp(slots[i].key, key) != 0)
                i = (i + 1) & (n_slots - 1);
        return &slots[i];
}

static int grow(HashMap *m) {
        size_t n = m->n_slots ? m->n_slots * 2 : 64;
        HashEntry *slots = calloc(n, sizeof *slots);
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_slots; i++)
                if (m->slots[i].key)
                        *find(slots, n, m->slots[i].key) = m->slots[i];
        free(m->slots);
        m->slots = slots;
        m->n_slots = n;
        return 0;
}

int hashmap_add(HashMap *m, const char *key, unsigned long n) {
        if ((m->n_used + 1) * 4 > m->n_slots * 3) {
                int r = grow(m);
                if (r < 0)
                        return r;
        }
        HashEntry *e = find(m->slots, m->n_slots, key);
        if (!e->key) {
                e->key = strdup(key);
                if (!e->key)
                        return -ENOMEM;
                m->n_used++;
        }
        e->count += n;
        return 0;
}

unsigned long hashmap_get(const HashMap *m, const char *key) {
        if (m->n_slots == 0)
                return 0;
        const HashEntry *e = find(m->slots, m->n_slots, key);
        return e->key ? e->count : 0;
}

void hashmap_free(HashMap *m) {
        for (size_t i = 0; i < m->n_slots; i++)
                free(m->slots[i].key);
        free(m->slots);
        *m = (HashMap) {};
}
