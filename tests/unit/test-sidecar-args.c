/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-sidecar-args.c: the sidecars' shared command line: --config required, no operands, --debug,
 * --help and --version answered, every other option (and getopt_long()'s refusals) to the sidecar's own
 * parser, refusals said through the sidecar's own refuse(). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "sidecar/sidecar-args.h"
#include "tests.h"

TEST_MAIN();

static char *refused;
static const char *seen_x;
static int seen_unknown, helped;

static void help(void) {
        helped++;
}

static int parse_option(int c, const char *arg) {
        if (c == 'x') {
                seen_x = arg;
                return 0;
        }
        seen_unknown++;
        return -EINVAL;
}

static int refuse(int r, const char *fmt, ...) _printf_(2, 3);
static int refuse(int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        free(refused);
        refused = strdupf_va(fmt, ap);
        va_end(ap);
        return r;
}

static const SidecarArgs args = {
        .program = "pond-test",
        .options = (const struct option[]) {
                { "x-file", required_argument, NULL, 'x' },
                {}
        },
        .help = help,
        .parse_option = parse_option,
        .refuse = refuse,
};

#define PARSE(config, ...)                                                                          \
        sidecar_args_parse(&args, (int) ELEMENTSOF(((char *[]) { "pond-test", __VA_ARGS__ })),     \
                           (char *[]) { "pond-test", __VA_ARGS__, NULL }, (config))

TEST(config_and_own_options) {
        const char *config = NULL;

        ASSERT_EQ(1, PARSE(&config, "--x-file", "/x", "--config", "/c.json"));
        EXPECT_STREQ("/c.json", config);
        EXPECT_STREQ("/x", seen_x);
        EXPECT_TRUE(refused == NULL);
        /* The last one wins, and "--config=FILE" is the same. */
        ASSERT_EQ(1, PARSE(&config, "--config=/a.json", "--config", "/b.json"));
        EXPECT_STREQ("/b.json", config);
}

TEST(config_required) {
        const char *config = "untouched";

        EXPECT_ERROR(EINVAL, PARSE(&config, "--x-file", "/x"));
        EXPECT_STREQ("--config is required", refused);
        EXPECT_STREQ("untouched", config);
}

TEST(no_operands) {
        const char *config = NULL;

        EXPECT_ERROR(EINVAL, PARSE(&config, "--config", "/c.json", "extra"));
        EXPECT_STREQ("unexpected argument 'extra'", refused);
        EXPECT_TRUE(config == NULL);
}

/* What getopt_long() refuses goes to the sidecar's parser as '?', which says why and stops the parse. */
TEST(unknown_to_the_sidecar) {
        const char *config = NULL;

        EXPECT_ERROR(EINVAL, PARSE(&config, "--config", "/c.json", "--nope"));
        EXPECT_EQ(1, seen_unknown);
        EXPECT_ERROR(EINVAL, PARSE(&config, "--config"));
        EXPECT_EQ(2, seen_unknown);
        EXPECT_TRUE(config == NULL);
}

TEST(help_version_debug) {
        _cleanup_close_ int saved = -EBADF, null = -EBADF;
        const char *config = NULL;
        int r;

        EXPECT_EQ(0, PARSE(&config, "--help"));
        EXPECT_EQ(0, PARSE(&config, "-h", "--nope"));
        EXPECT_EQ(2, helped);
        /* --version prints to stdout, which is the TAP stream here: into /dev/null for the call */
        fflush(stdout);
        saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(saved >= 0 && null >= 0 && dup2(null, STDOUT_FILENO) == STDOUT_FILENO);
        r = PARSE(&config, "--version");
        fflush(stdout);
        ASSERT_TRUE(dup2(saved, STDOUT_FILENO) == STDOUT_FILENO);
        EXPECT_EQ(0, r);
        EXPECT_TRUE(config == NULL);
        log_set_max_level(LOG_INFO);
        ASSERT_EQ(1, PARSE(&config, "--debug", "--config", "/c.json"));
        EXPECT_EQ(LOG_DEBUG, log_get_max_level());
}
