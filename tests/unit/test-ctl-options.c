/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ctl-options.c: a verb's option table: flags, values (the last one wins), short options with and
 * without a value, operands among the options, usage errors told apart from what an option's own parser
 * refused, a fresh parse each time, and --checkout resolved as it comes. */
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/macro.h"
#include "ctl-options.h"
#include "ctl.h"
#include "tests.h"

TEST_MAIN();

#define ARGV(...) (char *[]) { "verb", __VA_ARGS__, NULL }
#define ARGC(...) ((int) ELEMENTSOF(((char *[]) { "verb", __VA_ARGS__ })))
#define PARSE(opts, userdata, ...) ctl_options_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (opts), (userdata))

static int count_calls(const char *arg, void *userdata) {
        int *calls = userdata;

        (*calls)++;
        return streq(arg, "bad") ? -ENOTRECOVERABLE : 0;
}

TEST(flags_values_operands) {
        const char *pubkey = NULL, *out = NULL;
        bool json = false, quiet = false;
        const CtlOption opts[] = {
                CTL_OPTION_JSON(&json),
                CTL_OPTION_QUIET(&quiet),
                CTL_OPTION_PUBKEY(&pubkey),
                { "output", 'o', .value = &out },
                {}
        };
        char **argv = ARGV("ID", "--pubkey", "a.pub", "-q", "--pubkey=b.pub", "-o", "x", "more");
        int r;

        r = ctl_options_parse(9, argv, opts, NULL);
        ASSERT_EQ(7, r);
        EXPECT_TRUE(quiet);
        EXPECT_FALSE(json);
        EXPECT_STREQ("b.pub", pubkey);
        EXPECT_STREQ("x", out);
        /* The operands, in order, after the options. */
        EXPECT_STREQ("ID", argv[r]);
        EXPECT_STREQ("more", argv[r + 1]);

        /* "--" ends the options; -oVALUE is -o VALUE. */
        ASSERT_EQ(3, PARSE(opts, NULL, "-oy", "--", "--json"));
        EXPECT_STREQ("y", out);
        EXPECT_FALSE(json);
        ASSERT_EQ(2, PARSE(opts, NULL, "--json"));
        EXPECT_TRUE(json);
}

TEST(usage_errors) {
        const char *pubkey = NULL;
        bool json = false;
        const CtlOption opts[] = { CTL_OPTION_JSON(&json), CTL_OPTION_PUBKEY(&pubkey), {} };

        EXPECT_ERROR(CTL_EUSAGE, PARSE(opts, NULL, "--bogus"));
        EXPECT_ERROR(CTL_EUSAGE, PARSE(opts, NULL, "-j"));          /* no short name */
        EXPECT_ERROR(CTL_EUSAGE, PARSE(opts, NULL, "--pubkey"));    /* no value */
        EXPECT_ERROR(CTL_EUSAGE, PARSE(opts, NULL, "--json=yes"));  /* a flag takes none */
        /* Each parse starts afresh: the last failure leaves nothing behind. */
        ASSERT_EQ(2, PARSE(opts, NULL, "--json", "ID"));
}

/* An option's own parser sees each value in order; its refusal is its own, not a usage error. */
TEST(parse_functions) {
        const CtlOption opts[] = { { "min", .parse = count_calls }, {} };
        int calls = 0;

        ASSERT_EQ(4, PARSE(opts, &calls, "--min", "1", "--min=2"));
        EXPECT_EQ(2, calls);
        EXPECT_ERROR(ENOTRECOVERABLE, PARSE(opts, &calls, "--min", "bad", "--min", "3"));
        EXPECT_EQ(3, calls);
}

TEST(table_bounded) {
        char *argv[] = { (char *) "verb", NULL };
        CtlOption opts[CTL_OPTIONS_MAX + 2] = {};
        bool b = false;

        for (size_t i = 0; i < CTL_OPTIONS_MAX; i++)
                opts[i] = (CtlOption) { "flag", .flag = &b };
        EXPECT_EQ(1, ctl_options_parse(1, argv, opts, NULL));
        opts[CTL_OPTIONS_MAX] = (CtlOption) { "one-too-many", .flag = &b };
        EXPECT_ERROR(E2BIG, ctl_options_parse(1, argv, opts, NULL));
}

TEST(checkout) {
        static const CtlOption opts[] = { CTL_OPTION_CHECKOUT, {} };
        _cleanup_free_ char *checkout = NULL;
        char cwd[PATH_MAX];

        ASSERT_TRUE(getcwd(cwd, sizeof cwd) != NULL);
        ASSERT_EQ(3, PARSE(opts, &checkout, "--checkout", "."));
        EXPECT_STREQ(cwd, checkout);
        ASSERT_EQ(3, PARSE(opts, &checkout, "--checkout", "/"));
        EXPECT_STREQ("/", checkout);
        EXPECT_ERROR(ENOENT, PARSE(opts, &checkout, "--checkout", "/nonexistent/dir"));
        EXPECT_ERROR(ENOTDIR, PARSE(opts, &checkout, "--checkout", "/dev/null"));
        EXPECT_STREQ("/", checkout); /* a refused one changes nothing */
}
