/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-policy-file.c: the operator's /etc/pond/NAME replaces the shipped policy file NAME, file by file, in
 * the one lookup every policy reader uses (policy-file.h): found, not found, a dangling symlink, a confdir
 * that cannot be looked into, bad names; and the readers (policy_load, admission_policy_load) through it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admission/admission.h"
#include "basic/macro.h"
#include "policy/policy-file.h"
#include "policy/policy.h"
#include "tests.h"

TEST_MAIN();

FIXTURE(dirs) {
        char root[64];
        char conf[96];
        char shipped[96];
};

static int write_file(const char *dir, const char *name, const char *text) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = fopen(path, "w");
        if (!f)
                return -errno;
        fputs(text, f);
        return fclose(f) == 0 ? 0 : -errno;
}

FIXTURE_SETUP(dirs) {
        snprintf(self->root, sizeof self->root, "/tmp/pond-test-policy-file.XXXXXX");
        if (!mkdtemp(self->root))
                abort();
        snprintf(self->conf, sizeof self->conf, "%s/etc-pond", self->root);
        snprintf(self->shipped, sizeof self->shipped, "%s/policy", self->root);
        if (mkdir(self->conf, 0755) < 0 || mkdir(self->shipped, 0755) < 0)
                abort();
}

FIXTURE_TEARDOWN(dirs) {
        char cmd[128];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", self->root);
        (void) system(cmd);
}

TEST_F(dirs, shipped_file_without_an_override) {
        _cleanup_free_ char *p = NULL;
        char want[160];

        ASSERT_OK(policy_file_find(self->conf, self->shipped, "profiles.json", &p));
        snprintf(want, sizeof want, "%s/profiles.json", self->shipped);
        ASSERT_STREQ(want, p);
}

TEST_F(dirs, override_by_name_only) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        char want[160];

        ASSERT_OK(write_file(self->conf, "worker.json", "{}"));
        ASSERT_OK(policy_file_find(self->conf, self->shipped, "worker.json", &a));
        snprintf(want, sizeof want, "%s/worker.json", self->conf);
        ASSERT_STREQ(want, a);
        /* Another name is still the shipped one: files are replaced one by one. */
        ASSERT_OK(policy_file_find(self->conf, self->shipped, "egress.json", &b));
        snprintf(want, sizeof want, "%s/egress.json", self->shipped);
        ASSERT_STREQ(want, b);
}

TEST_F(dirs, dangling_symlink_is_the_operators_and_fails_to_read) {
        _cleanup_free_ char *p = NULL;
        char link[160], want[160];
        Policy *pol = NULL;
        _cleanup_free_ char *err = NULL;

        snprintf(link, sizeof link, "%s/profiles.json", self->conf);
        ASSERT_OK(symlink("/nonexistent/pond/profiles.json", link));
        ASSERT_OK(policy_file_find(self->conf, self->shipped, "profiles.json", &p));
        snprintf(want, sizeof want, "%s/profiles.json", self->conf);
        ASSERT_STREQ(want, p);
        /* Through the reader: the worker's policy fails closed, it does not fall back to the shipped file
         * (and the readers open no symlink at all: O_NOFOLLOW, ELOOP). */
        ASSERT_OK(setenv("POND_CONFDIR", self->conf, 1));
        ASSERT_OK(setenv("POND_POLICYDIR", POND_SOURCE_ROOT "/policy", 1));
        ASSERT_ERROR(ELOOP, policy_load(NULL, &pol, &err));
        ASSERT_CONTAINS(link, err);
        ASSERT_OK(unsetenv("POND_CONFDIR"));
        ASSERT_OK(unsetenv("POND_POLICYDIR"));
}

TEST_F(dirs, confdir_that_cannot_be_looked_into_is_an_error) {
        char *p = NULL;
        char notdir[160];

        /* A confdir that is a file: ENOTDIR, not the shipped file. */
        snprintf(notdir, sizeof notdir, "%s/file", self->root);
        ASSERT_OK(write_file(self->root, "file", ""));
        ASSERT_ERROR(ENOTDIR, policy_file_find(notdir, self->shipped, "profiles.json", &p));
        ASSERT_TRUE(p == NULL);
}

TEST_F(dirs, no_confdir_and_bad_names) {
        _cleanup_free_ char *p = NULL;
        char *q = NULL;
        char want[160];

        ASSERT_OK(write_file(self->conf, "x.json", "{}"));
        ASSERT_OK(policy_file_find(NULL, self->shipped, "x.json", &p));
        snprintf(want, sizeof want, "%s/x.json", self->shipped);
        ASSERT_STREQ(want, p);
        ASSERT_ERROR(EINVAL, policy_file_find(self->conf, self->shipped, "../x.json", &q));
        ASSERT_ERROR(EINVAL, policy_file_find(self->conf, self->shipped, "a/x.json", &q));
        ASSERT_ERROR(EINVAL, policy_file_find(self->conf, self->shipped, "", &q));
        ASSERT_ERROR(EINVAL, policy_file_find(self->conf, self->shipped, "..", &q));
        ASSERT_ERROR(EINVAL, policy_file_find(self->conf, self->shipped, NULL, &q));
        ASSERT_ERROR(EINVAL, policy_file_find(self->conf, NULL, "x.json", &q));
        ASSERT_TRUE(q == NULL);
}

/* The readers go through the lookup: an override in the confdir is what they read, the rest is shipped. */
TEST_F(dirs, readers_take_the_override) {
        Policy *pol = NULL;
        _cleanup_free_ char *err = NULL;
        AdmissionPolicy ap = {};
        char path[160];

        ASSERT_OK(setenv("POND_CONFDIR", self->conf, 1));
        ASSERT_OK(setenv("POND_POLICYDIR", POND_SOURCE_ROOT "/policy", 1));
        /* The shipped policy loads; an overriding profiles.json that is not JSON refuses it, by its path. */
        ASSERT_OK(policy_load(NULL, &pol, &err));
        pol = policy_free(pol);
        ASSERT_OK(write_file(self->conf, "profiles.json", "{"));
        ASSERT_TRUE(policy_load(NULL, &pol, &err) < 0);
        ASSERT_CONTAINS(self->conf, err);
        snprintf(path, sizeof path, "%s/profiles.json", self->conf);
        ASSERT_OK(unlink(path));
        free(err);
        err = NULL;
        ASSERT_OK(write_file(self->conf, "worker.json", "{\"max_jobs\": 3}"));
        ASSERT_OK(admission_policy_load(NULL, &ap, &err));
        ASSERT_EQ(3, (int) ap.max_jobs);
        ASSERT_OK(unsetenv("POND_CONFDIR"));
        ASSERT_OK(unsetenv("POND_POLICYDIR"));
}
