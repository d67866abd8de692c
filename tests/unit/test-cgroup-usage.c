/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cgroup-usage: the kernel's usage files parsed (cpu.stat, io.stat, blkio's service bytes, one-number
 * files), malformed text refused, and each figure read from the right file of a hybrid, legacy and unified
 * tree (a temporary directory laid out as one), unknown where the tree lacks it. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "cgroup/cgroup-usage.h"
#include "tests.h"

TEST_MAIN();

TEST(parse_u64) {
        uint64_t v = 0;

        ASSERT_OK(cgroup_parse_u64("209715200\n", &v));
        ASSERT_EQ(209715200ULL, v);
        ASSERT_OK(cgroup_parse_u64("0", &v));
        ASSERT_EQ(0ULL, v);
        EXPECT_ERROR(EINVAL, cgroup_parse_u64("max\n", &v));
        EXPECT_ERROR(EINVAL, cgroup_parse_u64("", &v));
        EXPECT_ERROR(EINVAL, cgroup_parse_u64("12 34\n", &v));
        EXPECT_ERROR(EINVAL, cgroup_parse_u64("-1\n", &v));
        EXPECT_ERROR(EINVAL, cgroup_parse_u64("99999999999999999999999\n", &v));
}

TEST(parse_cpu_stat) {
        const char *text = "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nnr_periods 0\n"
                           "nr_throttled 0\nthrottled_usec 0\n";
        uint64_t u = 0, s = 0;

        ASSERT_OK(cgroup_parse_cpu_stat(text, &u, &s));
        ASSERT_EQ(1000000ULL, u);
        ASSERT_EQ(500000ULL, s);
        /* the key must be the whole word: "core_sched.force_idle_usec" is no "user_usec" */
        EXPECT_ERROR(EINVAL, cgroup_parse_cpu_stat("usage_usec 1\nxuser_usec 2\nsystem_usec 3\n", &u, &s));
        EXPECT_ERROR(EINVAL, cgroup_parse_cpu_stat("user_usec x\nsystem_usec 3\n", &u, &s));
        EXPECT_ERROR(EINVAL, cgroup_parse_cpu_stat("", &u, &s));
}

TEST(parse_io_stat) {
        const char *text = "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
                           "253:1 rbytes=100 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n";
        uint64_t rd = 1, wr = 1;

        ASSERT_OK(cgroup_parse_io_stat(text, &rd, &wr));
        ASSERT_EQ(4196ULL, rd);
        ASSERT_EQ(8192ULL, wr);
        ASSERT_OK(cgroup_parse_io_stat("", &rd, &wr));
        ASSERT_EQ(0ULL, rd);
        ASSERT_EQ(0ULL, wr);
        EXPECT_ERROR(EINVAL, cgroup_parse_io_stat("rbytes=1\n", &rd, &wr));
        EXPECT_ERROR(EINVAL, cgroup_parse_io_stat("8:0 rbytes=x\n", &rd, &wr));
        EXPECT_ERROR(EINVAL, cgroup_parse_io_stat("8:0 rbytes=18446744073709551615\n8:1 rbytes=1\n", &rd, &wr));
}

TEST(parse_blkio) {
        const char *text = "8:0 Read 4096\n8:0 Write 12288\n8:0 Sync 16384\n8:0 Async 0\n8:0 Discard 0\n"
                           "8:0 Total 16384\n8:16 Read 10\n8:16 Write 0\nTotal 16394\n";
        uint64_t rd = 0, wr = 0;

        ASSERT_OK(cgroup_parse_blkio_bytes(text, &rd, &wr));
        ASSERT_EQ(4106ULL, rd);
        ASSERT_EQ(12288ULL, wr);
        ASSERT_OK(cgroup_parse_blkio_bytes("Total 0\n", &rd, &wr));
        ASSERT_EQ(0ULL, rd);
        EXPECT_ERROR(EINVAL, cgroup_parse_blkio_bytes("8:0 Read\n", &rd, &wr));
        EXPECT_ERROR(EINVAL, cgroup_parse_blkio_bytes("garbage\n", &rd, &wr));
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

/* v1 where the layout has the controller; the v2 hierarchy (cpu.stat, which it keeps without controllers)
 * where v1 lacks a file. */
TEST(read_hybrid) {
        char root[] = "/tmp/pond-test-usage.XXXXXX";
        _cleanup_free_ char *cpuacct = NULL;
        CgroupUsage u;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        put(root, "/cpuacct" CG, "cpuacct.usage_user", "2000000000\n");
        put(root, "/cpuacct" CG, "cpuacct.usage_sys", "300000000\n");
        put(root, "/memory" CG, "memory.max_usage_in_bytes", "268435456\n");
        put(root, "/blkio" CG, "blkio.throttle.io_service_bytes_recursive", "8:0 Read 1\n8:0 Write 2\nTotal 3\n");
        put(root, "/unified" CG, "cpu.stat", "usage_usec 9\nuser_usec 7\nsystem_usec 2\n");
        ASSERT_OK(cgroup_usage_read_at(root, CGROUP_LAYOUT_HYBRID, CG, &u));
        EXPECT_EQ(2000000ULL, u.cpu_user_usec);
        EXPECT_EQ(300000ULL, u.cpu_system_usec);
        EXPECT_EQ(268435456ULL, u.memory_peak_bytes);
        EXPECT_EQ(1ULL, u.io_read_bytes);
        EXPECT_EQ(2ULL, u.io_write_bytes);
        EXPECT_EQ(CGROUP_USAGE_UNKNOWN, u.tasks_peak); /* no pids.peak: an older kernel */
        /* without cpuacct, the unified hierarchy's cpu.stat */
        put(root, "/pids" CG, "pids.peak", "17\n");
        ASSERT_TRUE(asprintf(&cpuacct, "%s/cpuacct", root) > 0);
        ASSERT_OK(rm_rf_at(AT_FDCWD, cpuacct));
        ASSERT_OK(cgroup_usage_read_at(root, CGROUP_LAYOUT_HYBRID, CG, &u));
        EXPECT_EQ(7ULL, u.cpu_user_usec);
        EXPECT_EQ(2ULL, u.cpu_system_usec);
        EXPECT_EQ(17ULL, u.tasks_peak);
        /* legacy: no v2 hierarchy to fall back on */
        ASSERT_OK(cgroup_usage_read_at(root, CGROUP_LAYOUT_LEGACY, CG, &u));
        EXPECT_EQ(CGROUP_USAGE_UNKNOWN, u.cpu_user_usec);
        EXPECT_EQ(268435456ULL, u.memory_peak_bytes);
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

TEST(read_unified) {
        char root[] = "/tmp/pond-test-usage.XXXXXX";
        _cleanup_json_ json_object *o = NULL;
        CgroupUsage u;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        put(root, CG, "cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
        put(root, CG, "memory.peak", "4096\n");
        put(root, CG, "io.stat", "8:0 rbytes=10 wbytes=20 rios=1 wios=1 dbytes=0 dios=0\n");
        put(root, CG, "pids.peak", "3\n");
        /* v1-looking directories are not read on a unified layout */
        put(root, "/memory" CG, "memory.max_usage_in_bytes", "1\n");
        ASSERT_OK(cgroup_usage_read_at(root, CGROUP_LAYOUT_UNIFIED, CG, &u));
        EXPECT_EQ(1000ULL, u.cpu_user_usec);
        EXPECT_EQ(500ULL, u.cpu_system_usec);
        EXPECT_EQ(4096ULL, u.memory_peak_bytes);
        EXPECT_EQ(10ULL, u.io_read_bytes);
        EXPECT_EQ(20ULL, u.io_write_bytes);
        EXPECT_EQ(3ULL, u.tasks_peak);
        o = cgroup_usage_to_json(&u);
        ASSERT_TRUE(o != NULL);
        EXPECT_STREQ("{ \"cpu_user_ms\": 1, \"cpu_system_ms\": 0, \"memory_peak_bytes\": 4096, \"io_read_bytes\": 10, "
                     "\"io_write_bytes\": 20, \"tasks_peak\": 3 }", json_object_to_json_string(o));
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}

TEST(read_missing) {
        char root[] = "/tmp/pond-test-usage.XXXXXX";
        _cleanup_json_ json_object *o = NULL;
        CgroupUsage u = CGROUP_USAGE_NULL;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        EXPECT_ERROR(ENOENT, cgroup_usage_read_at(root, CGROUP_LAYOUT_HYBRID, CG, &u));
        EXPECT_ERROR(EINVAL, cgroup_usage_read_at(root, CGROUP_LAYOUT_HYBRID, "/a/../../etc", &u));
        EXPECT_ERROR(EINVAL, cgroup_usage_read_at(root, CGROUP_LAYOUT_HYBRID, "relative", &u));
        o = cgroup_usage_to_json(&u);
        EXPECT_STREQ("{ \"cpu_user_ms\": null, \"cpu_system_ms\": null, \"memory_peak_bytes\": null, "
                     "\"io_read_bytes\": null, \"io_write_bytes\": null, \"tasks_peak\": null }",
                     json_object_to_json_string(o));
        ASSERT_OK(rm_rf_at(AT_FDCWD, root));
}
