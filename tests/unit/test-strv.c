/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-strv: NULL-terminated string vectors: strv_build() copies its arguments and sets its output only
 * on success; strv_push() appends, keeps the terminator, and takes its argument also on failure. */
#include <sys/resource.h>

#include "basic/strv.h"
#include "tests.h"

TEST_MAIN();

#if defined(__SANITIZE_ADDRESS__)
#define WITH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WITH_ASAN 1
#endif
#endif

TEST(build_copies_in_order) {
        _cleanup_strv_free_ char **v = NULL;
        char arg[] = "second";

        ASSERT_OK(strv_build(&v, "first", arg, "", NULL));
        ASSERT_EQ(3, strv_length(v));
        ASSERT_STREQ("first", v[0]);
        ASSERT_STREQ("second", v[1]);
        ASSERT_STREQ("", v[2]);
        ASSERT_TRUE(v[3] == NULL);
        /* Copies: the caller's buffer may change or go away. */
        ASSERT_TRUE(v[1] != arg);
        arg[0] = 'X';
        ASSERT_STREQ("second", v[1]);
}

TEST(build_empty) {
        _cleanup_strv_free_ char **v = NULL;

        ASSERT_OK(strv_build(&v, NULL));
        ASSERT_TRUE(v != NULL);
        ASSERT_EQ(0, strv_length(v));
        ASSERT_TRUE(v[0] == NULL);
}

TEST(length_of_null_is_zero) {
        ASSERT_EQ(0, strv_length(NULL));
}

TEST(push_onto_null_and_append) {
        _cleanup_strv_free_ char **l = NULL;

        ASSERT_OK(strv_push(&l, strdup("a")));
        ASSERT_EQ(1, strv_length(l));
        ASSERT_OK(strv_push(&l, strdup("b")));
        ASSERT_EQ(2, strv_length(l));
        ASSERT_STREQ("a", l[0]);
        ASSERT_STREQ("b", l[1]);
        ASSERT_TRUE(l[2] == NULL);
}

TEST(push_onto_built) {
        _cleanup_strv_free_ char **l = NULL;

        ASSERT_OK(strv_build(&l, "runc", "--root", NULL));
        ASSERT_OK(strv_push(&l, strdup("create")));
        ASSERT_EQ(3, strv_length(l));
        ASSERT_STREQ("runc", l[0]);
        ASSERT_STREQ("create", l[2]);
        ASSERT_TRUE(l[3] == NULL);
}

TEST(push_many) {
        _cleanup_strv_free_ char **l = NULL;
        char want[16];

        for (int i = 0; i < 1000; i++) {
                char *s = NULL;
                ASSERT_TRUE(asprintf(&s, "%d", i) > 0);
                ASSERT_OK(strv_push(&l, s));
        }
        ASSERT_EQ(1000, strv_length(l));
        for (int i = 0; i < 1000; i += 111) {
                snprintf(want, sizeof want, "%d", i);
                ASSERT_STREQ(want, l[i]);
        }
        ASSERT_TRUE(l[1000] == NULL);
}

/* strv_push(l, strdup(x)) with a failed strdup: -ENOMEM, and the list is as it was. */
TEST(push_null_is_enomem) {
        _cleanup_strv_free_ char **l = NULL, **empty = NULL;

        ASSERT_ERROR(ENOMEM, strv_push(&empty, NULL));
        ASSERT_TRUE(empty == NULL);
        ASSERT_OK(strv_build(&l, "x", NULL));
        ASSERT_ERROR(ENOMEM, strv_push(&l, NULL));
        ASSERT_EQ(1, strv_length(l));
        ASSERT_STREQ("x", l[0]);
}

/* With the address space capped (in this test's process only), copying a large argument fails: the
 * output is left as it was and nothing is half-built. */
TEST(build_failure_leaves_output_alone) {
#ifdef WITH_ASAN
        TEST_SKIP("AddressSanitizer reserves more address space than RLIMIT_AS would allow");
#else
        const size_t size = 64 << 20;
        char **sentinel = (char **) 0x1, **v = sentinel, *big = malloc(size);
        struct rlimit rl;
        long pages, page = sysconf(_SC_PAGESIZE);
        FILE *f = fopen("/proc/self/statm", "re");

        ASSERT_TRUE(big != NULL && f != NULL);
        memset(big, 'x', size - 1);
        big[size - 1] = 0;
        ASSERT_EQ(1, fscanf(f, "%ld", &pages));
        fclose(f);
        /* Room for small allocations, none for a second copy of big. */
        rl.rlim_cur = rl.rlim_max = (rlim_t) pages * (rlim_t) page + (16 << 20);
        ASSERT_EQ(0, setrlimit(RLIMIT_AS, &rl));
        ASSERT_ERROR(ENOMEM, strv_build(&v, "small", big, NULL));
        ASSERT_TRUE(v == sentinel);
        free(big);
#endif
}
