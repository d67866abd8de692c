/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tests.h: a tiny TAP test harness in the manner of the kernel's kselftest_harness.h.
 *
 * TEST(name) defines a test; FIXTURE(f), FIXTURE_SETUP(f), FIXTURE_TEARDOWN(f) and TEST_F(f, name) define
 * tests that share a set-up (run afresh for each test, as "f.name"); main() comes from TEST_MAIN().
 *
 * Each test runs in a child process of its own: a crash, a setenv, a chdir or a process it left running
 * ends with it, and the next test starts clean. The exit status is the verdict (0 pass, 1 fail, 4 skip; a
 * signal or any other status is a failure, and so is an exit that did not come back from the test).
 * The runner is a child subreaper: whatever a test left running is killed when the test ends.
 *
 * ASSERT_* records a failure and returns from the test (or from the set-up, which then skips the test
 * body; the teardown still runs, so it must accept a partly set-up fixture, as destructors accept NULL).
 * EXPECT_* records a failure and carries on. Assertions put the expected value first and print
 * file:line. TEST_SKIP(reason) says why a test cannot run here; a test never passes silently.
 *
 * TEST_FILTER="glob[,glob...]" (fnmatch, separated by commas or spaces) runs only the tests whose names
 * match; the others are reported as "ok N - name # SKIP filtered", so the TAP plan stays whole. */
#pragma once

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct TestCase {
        const char *name;
        void (*func)(void);
} TestCase;

extern int test_failed_;
extern const char *test_skipped_;

#define TEST_MAX 256
extern TestCase test_cases_[TEST_MAX];
extern int test_count_;

#define TEST_EXIT_SKIP_ 4 /* kselftest's KSFT_SKIP */

/* A test that cannot run here says so (TAP "# SKIP reason"); it never passes silently. */
#define TEST_SKIP(reason)                                                                   \
        do {                                                                                \
                test_skipped_ = (reason);                                                   \
                return;                                                                     \
        } while (0)

/* Past TEST_MAX the binary refuses to start rather than run fewer tests than it defines. */
__attribute__((unused)) static void test_register_(const char *name, void (*func)(void)) {
        if (test_count_ >= TEST_MAX) {
                fprintf(stderr, "tests.h: more than TEST_MAX (%d) tests, cannot register '%s'; raise TEST_MAX\n",
                        TEST_MAX, name);
                abort();
        }
        test_cases_[test_count_++] = (TestCase){ name, func };
}

#define TEST_REGISTER_(name, fn)                                                            \
        __attribute__((constructor)) static void fn##_register_(void) {                     \
                test_register_(name, fn);                                                   \
        }

#define TEST(n)                                                                             \
        static void test_##n(void);                                                         \
        TEST_REGISTER_(#n, test_##n)                                                        \
        static void test_##n(void)

/* FIXTURE(f) { members; };  The fixture is zeroed, then set up, in the test's own process. */
#define FIXTURE(f)                                                                          \
        typedef struct f##_fixture_ f##_fixture_;                                           \
        struct f##_fixture_
#define FIXTURE_DATA(f) f##_fixture_ /* the fixture's type, for helpers that take it */
#define FIXTURE_SETUP(f) static void f##_setup_(__attribute__((unused)) f##_fixture_ *self)
#define FIXTURE_TEARDOWN(f) static void f##_teardown_(__attribute__((unused)) f##_fixture_ *self)

#define TEST_F(f, n)                                                                        \
        static void test_f_##f##__##n(f##_fixture_ *self);                                  \
        static void test_run_##f##__##n(void) {                                             \
                f##_fixture_ fixture_ = {};                                                  \
                f##_setup_(&fixture_);                                                       \
                if (!test_failed_ && !test_skipped_)                                        \
                        test_f_##f##__##n(&fixture_);                                        \
                f##_teardown_(&fixture_);                                                    \
        }                                                                                   \
        TEST_REGISTER_(#f "." #n, test_run_##f##__##n)                                      \
        static void test_f_##f##__##n(__attribute__((unused)) f##_fixture_ *self)

/* Prints a TAP comment: every line of it starts with "# ", whatever the text holds (a multi-line JSON
 * document must not read as TAP lines). */
__attribute__((unused, format(printf, 1, 2))) static void test_log_(const char *fmt, ...) {
        char *text = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (n < 0)
                return (void) printf("# (out of memory)\n");
        for (char *line = text, *end; line; line = end ? end + 1 : NULL) {
                end = strchr(line, '\n');
                if (!end && !*line && line != text)
                        break; /* the text ended with a newline */
                printf("# %.*s\n", end ? (int) (end - line) : (int) strlen(line), line);
        }
        free(text);
}

/* A comment in the TAP output, for what a reader of a failure needs to see. */
#define TEST_LOG(fmt, ...) test_log_(fmt, ##__VA_ARGS__)

/* Reports a failure at the caller's file:line. */
#define TEST_REPORT_(fmt, ...)                                                              \
        do {                                                                                \
                test_log_("%s:%d: " fmt, __FILE__, __LINE__, ##__VA_ARGS__);                \
                test_failed_ = 1;                                                           \
        } while (0)

#define TEST_FAIL_(fmt, ...)                                                                \
        do {                                                                                \
                TEST_REPORT_(fmt, ##__VA_ARGS__);                                           \
                return;                                                                     \
        } while (0)

/* Each check takes what to do on failure: `return` (ASSERT_*) or nothing (EXPECT_*). */
#define TEST_CHECK_TRUE_(on_fail, x)                                                        \
        do {                                                                                \
                if (!(x)) {                                                                 \
                        TEST_REPORT_("expected true: %s", #x);                              \
                        on_fail;                                                            \
                }                                                                           \
        } while (0)

#define TEST_CHECK_OK_(on_fail, expr)                                                       \
        do {                                                                                \
                long _r = (long) (expr);                                                    \
                if (_r < 0) {                                                               \
                        TEST_REPORT_("%s failed: %ld (%s)", #expr, _r, strerror((int) -_r)); \
                        on_fail;                                                            \
                }                                                                           \
        } while (0)

#define TEST_CHECK_ERROR_(on_fail, err, expr)                                               \
        do {                                                                                \
                long _r = (long) (expr);                                                    \
                if (_r != -(long) (err)) {                                                  \
                        TEST_REPORT_("%s: expected -%s, got %ld", #expr, #err, _r);         \
                        on_fail;                                                            \
                }                                                                           \
        } while (0)

#define TEST_CHECK_EQ_(on_fail, expected, actual)                                           \
        do {                                                                                \
                intmax_t _e = (intmax_t) (expected), _a = (intmax_t) (actual);              \
                if (_e != _a) {                                                             \
                        TEST_REPORT_("%s: expected %jd, got %jd", #actual, _e, _a);         \
                        on_fail;                                                            \
                }                                                                           \
        } while (0)

#define TEST_CHECK_STREQ_(on_fail, expected, actual)                                        \
        do {                                                                                \
                const char *_e = (expected), *_a = (actual);                                \
                if (!_e || !_a || strcmp(_e, _a) != 0) {                                    \
                        TEST_REPORT_("%s: expected \"%s\", got \"%s\"", #actual,            \
                                     _e ?: "(null)", _a ?: "(null)");                       \
                        on_fail;                                                            \
                }                                                                           \
        } while (0)

/* The substring must occur: for refusal messages that must name the field. */
#define TEST_CHECK_CONTAINS_(on_fail, needle, haystack)                                     \
        do {                                                                                \
                const char *_n = (needle), *_h = (haystack);                                \
                if (!_h || !strstr(_h, _n)) {                                               \
                        TEST_REPORT_("%s: expected to contain \"%s\", got \"%s\"",          \
                                     #haystack, _n, _h ?: "(null)");                        \
                        on_fail;                                                            \
                }                                                                           \
        } while (0)

#define ASSERT_TRUE(x) TEST_CHECK_TRUE_(return, x)
#define ASSERT_FALSE(x) ASSERT_TRUE(!(x))
#define ASSERT_OK(expr) TEST_CHECK_OK_(return, expr)
#define ASSERT_ERROR(err, expr) TEST_CHECK_ERROR_(return, err, expr)
#define ASSERT_EQ(expected, actual) TEST_CHECK_EQ_(return, expected, actual)
#define ASSERT_STREQ(expected, actual) TEST_CHECK_STREQ_(return, expected, actual)
#define ASSERT_CONTAINS(needle, haystack) TEST_CHECK_CONTAINS_(return, needle, haystack)

#define EXPECT_TRUE(x) TEST_CHECK_TRUE_((void) 0, x)
#define EXPECT_FALSE(x) EXPECT_TRUE(!(x))
#define EXPECT_OK(expr) TEST_CHECK_OK_((void) 0, expr)
#define EXPECT_ERROR(err, expr) TEST_CHECK_ERROR_((void) 0, err, expr)
#define EXPECT_EQ(expected, actual) TEST_CHECK_EQ_((void) 0, expected, actual)
#define EXPECT_STREQ(expected, actual) TEST_CHECK_STREQ_((void) 0, expected, actual)
#define EXPECT_CONTAINS(needle, haystack) TEST_CHECK_CONTAINS_((void) 0, needle, haystack)

/* What the child tells the runner beyond its exit status (a page shared across the fork). */
typedef struct TestShared {
        int returned;   /* the test came back: an exit() from inside it is no pass */
        char skip[256];
} TestShared;

/* 1 if TEST_FILTER is set and no glob in it matches name. */
__attribute__((unused)) static int test_filtered_out_(const char *name) {
        const char *f = getenv("TEST_FILTER");
        char glob[256];

        if (!f || !f[strspn(f, ", ")])
                return 0;
        for (f += strspn(f, ", "); *f; f += strspn(f, ", ")) {
                size_t n = strcspn(f, ", ");
                if (n < sizeof glob) {
                        memcpy(glob, f, n);
                        glob[n] = 0;
                        if (fnmatch(glob, name, 0) == 0)
                                return 0;
                }
                f += n;
        }
        return 1;
}

__attribute__((unused, noreturn)) static void test_child_(const TestCase *t, TestShared *shared) {
        pid_t self = getpid();

        /* Unbuffered enough that what a test printed before it crashed is not lost. */
        setvbuf(stdout, NULL, _IOLBF, 0);
        test_failed_ = 0;
        test_skipped_ = NULL;
        t->func();
        if (getpid() != self)
                _exit(0); /* a process the test forked returned into the harness: not the verdict */
        if (test_skipped_)
                snprintf(shared->skip, sizeof shared->skip, "%s", test_skipped_);
        shared->returned = 1;
        /* exit(), not _exit(): the child is a whole test program, and its atexit checks (LeakSanitizer in
         * the ASan build) must judge this test. */
        exit(test_failed_ ? 1 : test_skipped_ ? TEST_EXIT_SKIP_ : 0);
}

/* Kills and reaps what the test left running (reparented to us, the subreaper), until nothing is left. */
__attribute__((unused)) static void test_kill_leftovers_(const char *name) {
        char path[64];
        int killed = 0;

        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int) getpid());
        for (int round = 0; round < 64; round++) {
                FILE *f = fopen(path, "re");
                int pid, n = 0;

                if (!f)
                        break;
                while (fscanf(f, "%d", &pid) == 1) {
                        (void) kill(pid, SIGKILL);
                        (void) waitpid(pid, NULL, 0);
                        n++;
                }
                fclose(f);
                if (n == 0)
                        break;
                killed += n;
        }
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        if (killed > 0)
                printf("# %s: killed %d process(es) the test left running\n", name, killed);
}

/* Runs test i in a child; prints its TAP line; returns 1 if it failed. */
__attribute__((unused)) static int test_run_one_(int i, TestShared *shared) {
        const TestCase *t = &test_cases_[i];
        int status, code;
        pid_t pid;

        if (test_filtered_out_(t->name)) {
                printf("ok %d - %s # SKIP filtered\n", i + 1, t->name);
                return 0;
        }
        memset(shared, 0, sizeof *shared);
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid == 0)
                test_child_(t, shared);
        while (pid > 0 && waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        pid = -1;
                        break;
                }
        if (pid < 0) {
                printf("# %s: cannot run the test: %s\nnot ok %d - %s\n", t->name, strerror(errno), i + 1, t->name);
                return 1;
        }
        test_kill_leftovers_(t->name);
        if (WIFSIGNALED(status)) {
                printf("# %s: killed by signal %d (%s)\n", t->name, WTERMSIG(status), strsignal(WTERMSIG(status)));
                code = -1;
        } else {
                code = WEXITSTATUS(status);
                if ((code == 0 || code == TEST_EXIT_SKIP_) && !shared->returned) {
                        printf("# %s: exited (status %d) before the test returned\n", t->name, code);
                        code = -1;
                } else if (code != 0 && code != 1 && code != TEST_EXIT_SKIP_)
                        printf("# %s: exited with status %d\n", t->name, code);
        }
        if (code == TEST_EXIT_SKIP_)
                printf("ok %d - %s # SKIP %s\n", i + 1, t->name, shared->skip);
        else
                printf("%s %d - %s\n", code == 0 ? "ok" : "not ok", i + 1, t->name);
        fflush(stdout);
        return code != 0 && code != TEST_EXIT_SKIP_;
}

__attribute__((unused)) static int test_main_(void) {
        TestShared *shared;
        int failures = 0;

        shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED) {
                printf("Bail out! mmap: %s\n", strerror(errno));
                return 1;
        }
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        printf("1..%d\n", test_count_);
        for (int i = 0; i < test_count_; i++)
                failures += test_run_one_(i, shared);
        return failures ? 1 : 0;
}

#define TEST_MAIN()                                                                         \
        int test_failed_;                                                                   \
        const char *test_skipped_;                                                          \
        TestCase test_cases_[TEST_MAX];                                                     \
        int test_count_;                                                                    \
        int main(void) {                                                                    \
                return test_main_();                                                        \
        }
