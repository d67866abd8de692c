/* tests.h: a tiny TAP test harness. TEST(name) defines a test; main() comes from TEST_MAIN().
 * Assertions put the expected value first and print file:line on failure. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

typedef struct TestCase {
        const char *name;
        void (*func)(void);
} TestCase;

extern int test_failed_;
extern const char *test_skipped_;

/* A test that cannot run here says so (TAP "# SKIP reason"); it never passes silently. */
#define TEST_SKIP(reason)                                                                   \
        do {                                                                                \
                test_skipped_ = (reason);                                                   \
                return;                                                                     \
        } while (0)

#define TEST_MAX 256
extern TestCase test_cases_[TEST_MAX];
extern int test_count_;

#define TEST(n)                                                                        \
        static void test_##n(void);                                                    \
        __attribute__((constructor)) static void test_register_##n(void) {             \
                if (test_count_ < TEST_MAX)                                            \
                        test_cases_[test_count_++] = (TestCase){ #n, test_##n };       \
        }                                                                              \
        static void test_##n(void)

#define TEST_FAIL_(fmt, ...)                                                                \
        do {                                                                                \
                printf("# %s:%d: " fmt "\n", __FILE__, __LINE__, ##__VA_ARGS__);            \
                test_failed_ = 1;                                                           \
                return;                                                                     \
        } while (0)

#define ASSERT_TRUE(x)                                                                      \
        do {                                                                                \
                if (!(x))                                                                   \
                        TEST_FAIL_("expected true: %s", #x);                                \
        } while (0)
#define ASSERT_FALSE(x) ASSERT_TRUE(!(x))

#define ASSERT_OK(expr)                                                                     \
        do {                                                                                \
                long _r = (long) (expr);                                                    \
                if (_r < 0)                                                                 \
                        TEST_FAIL_("%s failed: %ld (%s)", #expr, _r, strerror((int) -_r));  \
        } while (0)

#define ASSERT_ERROR(err, expr)                                                             \
        do {                                                                                \
                long _r = (long) (expr);                                                    \
                if (_r != -(long) (err))                                                    \
                        TEST_FAIL_("%s: expected -%s, got %ld", #expr, #err, _r);           \
        } while (0)

#define ASSERT_EQ(expected, actual)                                                         \
        do {                                                                                \
                intmax_t _e = (intmax_t) (expected), _a = (intmax_t) (actual);              \
                if (_e != _a)                                                               \
                        TEST_FAIL_("%s: expected %jd, got %jd", #actual, _e, _a);           \
        } while (0)

#define ASSERT_STREQ(expected, actual)                                                      \
        do {                                                                                \
                const char *_e = (expected), *_a = (actual);                                \
                if (!_e || !_a || strcmp(_e, _a) != 0)                                      \
                        TEST_FAIL_("%s: expected \"%s\", got \"%s\"", #actual,              \
                                   _e ?: "(null)", _a ?: "(null)");                         \
        } while (0)

/* The substring must occur: for refusal messages that must name the field. */
#define ASSERT_CONTAINS(needle, haystack)                                                   \
        do {                                                                                \
                const char *_n = (needle), *_h = (haystack);                                \
                if (!_h || !strstr(_h, _n))                                                 \
                        TEST_FAIL_("%s: expected to contain \"%s\", got \"%s\"", #haystack, \
                                   _n, _h ?: "(null)");                                     \
        } while (0)

#define TEST_MAIN()                                                                         \
        int test_failed_;                                                                   \
        const char *test_skipped_;                                                          \
        TestCase test_cases_[TEST_MAX];                                                     \
        int test_count_;                                                                    \
        int main(void) {                                                                    \
                int failures = 0;                                                           \
                printf("1..%d\n", test_count_);                                             \
                for (int i = 0; i < test_count_; i++) {                                     \
                        test_failed_ = 0;                                                   \
                        test_skipped_ = NULL;                                               \
                        test_cases_[i].func();                                              \
                        printf("%s %d - %s%s%s\n", test_failed_ ? "not ok" : "ok", i + 1,   \
                               test_cases_[i].name, test_skipped_ ? " # SKIP " : "",        \
                               test_skipped_ ?: "");                                        \
                        fflush(stdout);                                                     \
                        failures += test_failed_;                                           \
                }                                                                           \
                return failures ? 1 : 0;                                                    \
        }
