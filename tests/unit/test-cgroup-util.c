/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cgroup-util: layout names, layout detection on file systems that are not cgroup hierarchies, and
 * where a cgroup lives in a v1 controller's hierarchy and in the v2 hierarchy of each layout. */
#include <fcntl.h>

#include "cgroup.h"
#include "cgroup-util.h"
#include "macro.h"
#include "tests.h"

TEST(layout_names) {
        ASSERT_STREQ("unified", cgroup_layout_to_string(CGROUP_LAYOUT_UNIFIED));
        ASSERT_STREQ("hybrid", cgroup_layout_to_string(CGROUP_LAYOUT_HYBRID));
        ASSERT_STREQ("legacy", cgroup_layout_to_string(CGROUP_LAYOUT_LEGACY));
        ASSERT_STREQ("none", cgroup_layout_to_string(CGROUP_LAYOUT_NONE));
        ASSERT_TRUE(cgroup_layout_to_string(_CGROUP_LAYOUT_MAX) == NULL);
        ASSERT_TRUE(cgroup_layout_to_string(_CGROUP_LAYOUT_INVALID) == NULL);
}

/* procfs is no cgroup layout; a plain directory is one at most if it is a tmpfs (legacy: a tmpfs with no
 * cgroup2 below), never unified or hybrid. */
TEST(detect_not_a_cgroup_fs) {
        char dir[] = "/tmp/pond-test-cgroup.XXXXXX";
        CgroupLayout l;

        ASSERT_EQ(CGROUP_LAYOUT_NONE, cgroup_layout_detect("/proc"));
        ASSERT_EQ(CGROUP_LAYOUT_NONE, cgroup_layout_detect("/nonexistent"));
        ASSERT_TRUE(mkdtemp(dir) != NULL);
        l = cgroup_layout_detect(dir);
        rmdir(dir);
        ASSERT_TRUE(l == CGROUP_LAYOUT_LEGACY || l == CGROUP_LAYOUT_NONE);
        ASSERT_FALSE(cgroup_is_v1_hierarchy("/proc"));
        ASSERT_TRUE(cgroup_layout_has_v1(CGROUP_LAYOUT_HYBRID));
        ASSERT_TRUE(cgroup_layout_has_v1(CGROUP_LAYOUT_LEGACY));
        ASSERT_FALSE(cgroup_layout_has_v1(CGROUP_LAYOUT_UNIFIED));
        ASSERT_FALSE(cgroup_layout_has_v1(CGROUP_LAYOUT_NONE));
}

TEST(paths) {
        _cleanup_free_ char *v1 = NULL, *v1_root = NULL, *unified = NULL, *hybrid = NULL, *none = NULL;

        ASSERT_OK(cgroup_v1_path(CGROUP_ROOT, "memory", "/pond.slice/pond-a.scope", &v1));
        ASSERT_STREQ("/sys/fs/cgroup/memory/pond.slice/pond-a.scope", v1);
        ASSERT_OK(cgroup_v1_path("/r", "blkio", NULL, &v1_root));
        ASSERT_STREQ("/r/blkio", v1_root);
        ASSERT_OK(cgroup_v2_path(CGROUP_ROOT, CGROUP_LAYOUT_UNIFIED, "/pond.slice", &unified));
        ASSERT_STREQ("/sys/fs/cgroup/pond.slice", unified);
        ASSERT_OK(cgroup_v2_path(CGROUP_ROOT, CGROUP_LAYOUT_HYBRID, "/pond.slice", &hybrid));
        ASSERT_STREQ("/sys/fs/cgroup/unified/pond.slice", hybrid);
        ASSERT_ERROR(ENOMEDIUM, cgroup_v2_path(CGROUP_ROOT, CGROUP_LAYOUT_LEGACY, "/pond.slice", &none));
        ASSERT_TRUE(none == NULL);
}

/* A cgroup that does not exist has no counters, on whatever layout this host has. */
TEST(oom_kills_of_a_missing_cgroup) {
        uint64_t n = 42;

        ASSERT_TRUE(cgroup_oom_kills("/pond.slice/pond-test-nonexistent.scope", &n) < 0);
        ASSERT_EQ(42, n);
}

TEST_MAIN()
