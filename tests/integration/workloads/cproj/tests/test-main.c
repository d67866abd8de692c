/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-main.c: the library's unit tests, one of them counting in 4 threads at once */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hashmap.h"
#include "strbuf.h"
#include "wordcount.h"

static int failures;
#define CHECK(x) do { if (!(x)) { fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #x); \
                                  failures++; } } while (0)

static void test_strbuf(void) {
        StrBuf b = {};
        for (int i = 0; i < 1000; i++)
                CHECK(strbuf_append(&b, "ab", 2) == 0);
        CHECK(b.len == 2000 && strlen(b.data) == 2000);
        strbuf_free(&b);
}

static void test_hashmap(void) {
        HashMap m = {};
        char key[32];
        for (int i = 0; i < 5000; i++) {
                snprintf(key, sizeof key, "k%d", i % 1000);
                CHECK(hashmap_add(&m, key, 1) == 0);
        }
        CHECK(m.n_used == 1000);
        CHECK(hashmap_get(&m, "k7") == 5 && hashmap_get(&m, "nope") == 0);
        hashmap_free(&m);
}

static void test_top(void) {
        const char *t = "The cat and the hat. THE END, and don't stop";
        HashMap m = {};
        const HashEntry *top[3];
        CHECK(wordcount_text(&m, t, strlen(t)) == 0);
        CHECK(wordcount_top(&m, top, 3) == 3);
        CHECK(strcmp(top[0]->key, "the") == 0 && top[0]->count == 3);
        CHECK(strcmp(top[1]->key, "and") == 0 && top[1]->count == 2);
        CHECK(hashmap_get(&m, "don't") == 1);
        hashmap_free(&m);
}

static void *count_thread(void *arg) {
        HashMap m = {};
        const char *t = "one two two three three three ";
        for (int i = 0; i < 2000; i++)
                if (wordcount_text(&m, t, strlen(t)) < 0)
                        return NULL;
        *(unsigned long *) arg = hashmap_get(&m, "three");
        hashmap_free(&m);
        return NULL;
}

static void test_threads(void) {
        pthread_t th[4];
        unsigned long got[4] = {};
        for (int i = 0; i < 4; i++)
                CHECK(pthread_create(&th[i], NULL, count_thread, &got[i]) == 0);
        for (int i = 0; i < 4; i++) {
                pthread_join(th[i], NULL);
                CHECK(got[i] == 6000);
        }
}

int main(void) {
        test_strbuf();
        test_hashmap();
        test_top();
        test_threads();
        printf("test-main: %s\n", failures ? "FAILED" : "4 tests passed");
        return failures ? 1 : 0;
}
