/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cgroup-util: layout names, layout detection on file systems that are not cgroup hierarchies,
 * where a cgroup lives in a v1 controller's hierarchy and in the v2 hierarchy of each layout, and the OOM kill
 * count read from fixtures in each layout's format (v1 memory.oom_control, v2 memory.events and
 * memory.events.local as kernels 5.2 to 6.x write them). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "cgroup/cgroup-util.h"
#include "scope/cgroup.h"
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

static void put(const char *root, const char *dir, const char *file, const char *text) {
        _cleanup_free_ char *d = NULL;
        _cleanup_close_ int fd = -EBADF;

        ASSERT_TRUE(asprintf(&d, "%s%s", root, dir) > 0);
        ASSERT_OK(mkdir_p(d, 0755));
        fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(write_file_atomic_at(fd, file, text, strlen(text), 0644));
}

#define CG "/pond.slice/pond-j.scope"
/* As a 6.1 kernel writes them; oom_group_kill (5.16 on) must not be read as oom_kill. */
#define V2_EVENTS(kills) "low 0\nhigh 0\nmax 12\noom 3\noom_kill " kills "\noom_group_kill 7\n"
#define V1_OOM_CONTROL(kills) "oom_kill_disable 0\nunder_oom 0\noom_kill " kills "\n"

/* Unified: memory.events.local summed over the scope and the cgroups the runtime made below it (a kill
 * counts where its victim was). Here the hierarchy is mounted with memory_localevents, so the scope's
 * memory.events is local too and says 0: reading it alone (as pond did) missed the payload's kills. */
TEST(oom_kills_unified_local_events) {
        char root[] = "/tmp/pond-test-oom.XXXXXX";
        uint64_t n = 0;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        put(root, CG, "memory.events", V2_EVENTS("0"));
        put(root, CG, "memory.events.local", V2_EVENTS("0"));
        put(root, CG "/payload", "memory.events", V2_EVENTS("2"));
        put(root, CG "/payload", "memory.events.local", V2_EVENTS("2"));
        put(root, CG "/payload/sub", "memory.events.local", V2_EVENTS("1"));
        ASSERT_OK(cgroup_oom_kills_at(root, CGROUP_LAYOUT_UNIFIED, CG, &n));
        ASSERT_EQ(3, n);
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

/* Unified on a kernel before 5.2 (no memory.events.local): the scope's memory.events, hierarchical. */
TEST(oom_kills_unified_without_local_events) {
        char root[] = "/tmp/pond-test-oom.XXXXXX";
        uint64_t n = 0;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        put(root, CG, "memory.events", V2_EVENTS("4"));
        put(root, CG "/payload", "memory.events", V2_EVENTS("4"));
        ASSERT_OK(cgroup_oom_kills_at(root, CGROUP_LAYOUT_UNIFIED, CG, &n));
        ASSERT_EQ(4, n);
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

/* No OOM: zero, not an error; the v1-looking directories of a unified root are never read. */
TEST(oom_kills_unified_none) {
        char root[] = "/tmp/pond-test-oom.XXXXXX";
        uint64_t n = 42;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        put(root, CG, "memory.events.local", V2_EVENTS("0"));
        put(root, "/memory" CG, "memory.oom_control", V1_OOM_CONTROL("9"));
        ASSERT_OK(cgroup_oom_kills_at(root, CGROUP_LAYOUT_UNIFIED, CG, &n));
        ASSERT_EQ(0, n);
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

/* Hybrid: the v1 memcgs where they are, summed; the v2 hierarchy (root/unified) only where v1 has no memory
 * hierarchy for the cgroup. */
TEST(oom_kills_hybrid) {
        char root[] = "/tmp/pond-test-oom.XXXXXX";
        uint64_t n = 0;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        put(root, "/unified" CG, "memory.events", V2_EVENTS("9"));
        put(root, "/memory" CG, "memory.oom_control", V1_OOM_CONTROL("1"));
        put(root, "/memory" CG "/payload", "memory.oom_control", V1_OOM_CONTROL("2"));
        ASSERT_OK(cgroup_oom_kills_at(root, CGROUP_LAYOUT_HYBRID, CG, &n));
        ASSERT_EQ(3, n);
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

TEST(oom_kills_hybrid_without_v1_memcg) {
        char root[] = "/tmp/pond-test-oom.XXXXXX";
        uint64_t n = 0;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        put(root, "/unified" CG, "memory.events", V2_EVENTS("5"));
        ASSERT_OK(cgroup_oom_kills_at(root, CGROUP_LAYOUT_HYBRID, CG, &n));
        ASSERT_EQ(5, n);
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

/* A missing cgroup is an error on every layout (the caller keeps what it knew). */
TEST(oom_kills_missing) {
        char root[] = "/tmp/pond-test-oom.XXXXXX";
        uint64_t n = 42;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        ASSERT_ERROR(ENOENT, cgroup_oom_kills_at(root, CGROUP_LAYOUT_UNIFIED, CG, &n));
        ASSERT_ERROR(ENOENT, cgroup_oom_kills_at(root, CGROUP_LAYOUT_HYBRID, CG, &n));
        ASSERT_ERROR(ENOENT, cgroup_oom_kills_at(root, CGROUP_LAYOUT_LEGACY, CG, &n));
        ASSERT_EQ(42, n);
        ASSERT_OK(rmdir(root));
}

/* pond's leaves below the scope: only on a unified layout (elsewhere nothing is touched), made when missing,
 * the pid written to their cgroup.procs; a leaf name is one component. */
TEST(v2_leaf_attach) {
        char root[] = "/tmp/pond-test-leaf.XXXXXX";
        _cleanup_free_ char *leaf = NULL, *procs = NULL, *text = NULL;
        struct stat st;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        ASSERT_TRUE(asprintf(&leaf, "%s" CG "/" CGROUP_LEAF_PIN, root) > 0);
        ASSERT_TRUE(asprintf(&procs, "%s/cgroup.procs", leaf) > 0);
        put(root, CG, "cgroup.procs", "");
        ASSERT_ERROR(ENOENT, cgroup_v2_attach_leaf_at(root, CGROUP_LAYOUT_HYBRID, CG, CGROUP_LEAF_PIN, 1234));
        ASSERT_ERROR(ENOENT, cgroup_v2_attach_leaf_at(root, CGROUP_LAYOUT_LEGACY, CG, CGROUP_LEAF_PIN, 1234));
        ASSERT_TRUE(stat(leaf, &st) < 0 && errno == ENOENT);
        ASSERT_ERROR(EINVAL, cgroup_v2_attach_leaf_at(root, CGROUP_LAYOUT_UNIFIED, CG, "../x", 1234));
        ASSERT_ERROR(EINVAL, cgroup_v2_attach_leaf_at(root, CGROUP_LAYOUT_UNIFIED, CG, CGROUP_LEAF_PIN, 0));
        /* a plain directory has no cgroup.procs of its own: the kernel's would be there */
        ASSERT_ERROR(ENOENT, cgroup_v2_attach_leaf_at(root, CGROUP_LAYOUT_UNIFIED, CG, CGROUP_LEAF_PIN, 1234));
        ASSERT_OK(stat(leaf, &st));
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        put(root, CG "/" CGROUP_LEAF_PIN, "cgroup.procs", "");
        ASSERT_OK(cgroup_v2_attach_leaf_at(root, CGROUP_LAYOUT_UNIFIED, CG, CGROUP_LEAF_PIN, 1234));
        ASSERT_OK(read_full_file(procs, 64, &text, NULL));
        ASSERT_STREQ("1234", text);
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

TEST_MAIN()
