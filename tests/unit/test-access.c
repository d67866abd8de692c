/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-access: who may use pond besides root (access.c): policy/access.json parsed strictly, the default
 * (confined profiles only) and an explicit list, root as a submitter and an unknown uid refused; and the ACL
 * that gives a submitter read access to a directory of root's (acl-util.c), read back from the kernel. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "access/access.h"
#include "access/acl-util.h"
#include "basic/fileio.h"
#include "tests.h"

TEST_MAIN();

static int parse(const char *text, AccessPolicy *p, char **err) {
        return access_policy_parse(text, strlen(text), p, err);
}

TEST(default_is_confined_profiles_only) {
        AccessPolicy p = {};

        ASSERT_TRUE(access_profile_allowed(&p, "untrusted-code-read", true));
        ASSERT_FALSE(access_profile_allowed(&p, "none", false));
}

TEST(list_decides) {
        _cleanup_(access_policy_done) AccessPolicy p = {};

        ASSERT_OK(parse("{\"group_profiles\": [\"none\", \"untrusted-code-read\"]}", &p, NULL));
        ASSERT_TRUE(access_profile_allowed(&p, "none", false));
        ASSERT_TRUE(access_profile_allowed(&p, "untrusted-code-read", true));
        ASSERT_FALSE(access_profile_allowed(&p, "untrusted-code-write", true));
}

TEST(empty_list_allows_nothing) {
        _cleanup_(access_policy_done) AccessPolicy p = {};

        ASSERT_OK(parse("{\"group_profiles\": []}", &p, NULL));
        ASSERT_FALSE(access_profile_allowed(&p, "untrusted-code-read", true));
}

TEST(empty_object_is_the_default) {
        _cleanup_(access_policy_done) AccessPolicy p = {};

        ASSERT_OK(parse("{}", &p, NULL));
        ASSERT_TRUE(p.profiles == NULL);
}

TEST(refusals_name_the_field) {
        AccessPolicy p = {};
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL;

        ASSERT_ERROR(EINVAL, parse("{\"group\": \"wheel\"}", &p, &e1));
        ASSERT_CONTAINS("group", e1);
        ASSERT_ERROR(EINVAL, parse("{\"group_profiles\": \"none\"}", &p, &e2));
        ASSERT_CONTAINS("group_profiles", e2);
        ASSERT_ERROR(EINVAL, parse("{\"group_profiles\": [1]}", &p, &e3));
        ASSERT_CONTAINS("group_profiles[0]", e3);
}

TEST(missing_file_is_the_default) {
        char dir[] = "/tmp/test-access.XXXXXX";
        AccessPolicy p = { .profiles = (char **) 1 };

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        ASSERT_OK(access_policy_load(dir, &p, NULL));
        ASSERT_TRUE(p.profiles == NULL);
        ASSERT_OK(rmdir(dir));
}

TEST(root_is_a_submitter) {
        Submitter s;

        ASSERT_OK(access_submitter_lookup(0, &s, NULL));
        ASSERT_EQ(0, s.uid);
        ASSERT_STREQ("root", s.user);
}

TEST(unknown_uid_is_refused) {
        _cleanup_free_ char *err = NULL;
        Submitter s;

        /* Far above any account; a uid of a job's range (pond's own, 0x70000000+) is no user either. */
        ASSERT_ERROR(EPERM, access_submitter_lookup(0x7ffffff0, &s, &err));
        ASSERT_CONTAINS("no user", err);
}

TEST(acl_gives_one_user_read_and_search) {
        char dir[] = "/tmp/test-access-acl.XXXXXX";
        uint8_t buf[64];
        struct stat st;
        ssize_t n;
        int fd, r;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        ASSERT_OK(chmod(dir, 0700));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        r = acl_grant_user_rx(fd, 4242);
        if (r == -EOPNOTSUPP) {
                close(fd);
                rmdir(dir);
                TEST_SKIP("/tmp has no POSIX ACLs");
        }
        ASSERT_OK(r);
        n = fgetxattr(fd, "system.posix_acl_access", buf, sizeof buf);
        ASSERT_EQ(44, n);
        /* version 2; then USER_OBJ rwx, USER 4242 r-x, GROUP_OBJ ---, MASK r-x, OTHER --- (little-endian) */
        ASSERT_EQ(2, buf[0]);
        ASSERT_EQ(0x01, buf[4]);
        ASSERT_EQ(7, buf[6]);
        ASSERT_EQ(0x02, buf[12]);
        ASSERT_EQ(5, buf[14]);
        ASSERT_EQ(4242, buf[16] | buf[17] << 8);
        ASSERT_EQ(0x04, buf[20]);
        ASSERT_EQ(0, buf[22]);
        ASSERT_EQ(0x10, buf[28]);
        ASSERT_EQ(5, buf[30]);
        ASSERT_EQ(0x20, buf[36]);
        ASSERT_EQ(0, buf[38]);
        /* The mode's group bits show the mask, as setfacl leaves them. */
        ASSERT_OK(fstat(fd, &st));
        ASSERT_EQ(0750, st.st_mode & 07777);
        close(fd);
        ASSERT_OK(rmdir(dir));
}
