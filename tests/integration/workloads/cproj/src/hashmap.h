/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hashmap.h: string -> count, open addressing */
#pragma once
#include <stddef.h>

typedef struct HashEntry {
        char *key;
        unsigned long count;
} HashEntry;

typedef struct HashMap {
        HashEntry *slots;
        size_t n_slots, n_used;
} HashMap;

int hashmap_add(HashMap *m, const char *key, unsigned long n);
unsigned long hashmap_get(const HashMap *m, const char *key);
void hashmap_free(HashMap *m);
