/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-unit-name.c: a job's unit names come from one builder and only from a valid job id; pond's
 * directories from one table whose overrides are the environment's. */
#include <errno.h>
#include <stdlib.h>

#include "basic/dirs.h"
#include "basic/macro.h"
#include "basic/unit-name.h"
#include "config.h"
#include "tests.h"

TEST_MAIN();

TEST(every_kind) {
        static const struct {
                UnitKind kind;
                const char *name;
        } cases[] = {
                { UNIT_JOB_SERVICE, "pond-job@j-1.service" },
                { UNIT_SCOPE, "pond-j-1.scope" },
                { UNIT_EGRESS_SERVICE, "pond-egress@j-1.service" },
                { UNIT_BROKER_SERVICE, "pond-broker@j-1.service" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *n = NULL;

                ASSERT_OK(unit_name(cases[i].kind, "j-1", &n));
                ASSERT_STREQ(cases[i].name, n);
        }
}

TEST(refuses_bad_ids_and_kinds) {
        char *n = NULL;

        ASSERT_ERROR(EINVAL, unit_name(UNIT_JOB_SERVICE, "../x", &n));
        ASSERT_ERROR(EINVAL, unit_name(UNIT_SCOPE, "", &n));
        ASSERT_ERROR(EINVAL, unit_name(UNIT_SCOPE, NULL, &n));
        ASSERT_ERROR(EINVAL, unit_name(UNIT_JOB_SERVICE, "a b", &n));
        ASSERT_ERROR(EINVAL, unit_name(_UNIT_KIND_MAX, "j", &n));
        ASSERT_ERROR(EINVAL, unit_name(_UNIT_KIND_INVALID, "j", &n));
        ASSERT_TRUE(n == NULL);
}

TEST(dirs_and_overrides) {
        ASSERT_OK(unsetenv("POND_POLICYDIR"));
        ASSERT_STREQ(POND_POLICYDIR, pond_dir(POND_DIR_POLICY));
        ASSERT_OK(setenv("POND_POLICYDIR", "/tmp/policy", 1));
        ASSERT_STREQ("/tmp/policy", pond_dir(POND_DIR_POLICY));
        ASSERT_OK(unsetenv("POND_POLICYDIR"));
        ASSERT_OK(setenv("POND_KEYDIR", "/tmp/keys", 1));
        ASSERT_STREQ(POND_KEYDIR, pond_dir(POND_DIR_KEY));  /* the pinned keys are not relocatable */
        ASSERT_OK(unsetenv("POND_KEYDIR"));
        ASSERT_STREQ(POND_NFTDIR, pond_dir(POND_DIR_NFT));
        ASSERT_TRUE(pond_dir(_POND_DIR_MAX) == NULL);
}
