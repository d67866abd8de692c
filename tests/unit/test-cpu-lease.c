/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cpu-lease: the per-job cpuset allocator: cpu lists, ceil(cpus), the least-loaded choice (spread over
 * the cores, then shared when there are more jobs than cores), leases as files, the same CPUs for the same
 * job, release, concurrent acquisitions, and malformed files ignored. Unprivileged: a temporary directory. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "resview/cpu-lease.h"
#include "tests.h"

TEST_MAIN();

static cpu_set_t cpus(const char *list) {
        cpu_set_t s;
        CPU_ZERO(&s);
        (void) cpu_list_parse(list, &s);
        return s;
}

static char *fmt(cpu_set_t s) {
        char *t = NULL;
        return cpu_list_format(&s, &t) < 0 ? NULL : t;
}

TEST(cpus_ceil) {
        ASSERT_EQ(1U, cpus_ceil(100));
        ASSERT_EQ(1U, cpus_ceil(1000));
        ASSERT_EQ(2U, cpus_ceil(1001));
        ASSERT_EQ(2U, cpus_ceil(1500));
        ASSERT_EQ(64U, cpus_ceil(64000));
        ASSERT_EQ(1U, cpus_ceil(0));
}

TEST(list_round_trip) {
        const char *lists[] = { "0", "0-1", "0,2", "0-3,6,8-9", "1023" };

        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                _cleanup_free_ char *t = fmt(cpus(lists[i]));
                ASSERT_STREQ(lists[i], t);
        }
        cpu_set_t s;
        ASSERT_OK(cpu_list_parse("0-1\n", &s));
        ASSERT_EQ(2, CPU_COUNT(&s));
        ASSERT_ERROR(EINVAL, cpu_list_parse("", &s));
        ASSERT_ERROR(EINVAL, cpu_list_parse("3-1", &s));
        ASSERT_ERROR(EINVAL, cpu_list_parse("1,x", &s));
        ASSERT_ERROR(EINVAL, cpu_list_parse("1024", &s));
        ASSERT_ERROR(EINVAL, cpu_list_parse("-1", &s));
        CPU_ZERO(&s);
        _cleanup_free_ char *none = NULL;
        ASSERT_ERROR(EINVAL, cpu_list_format(&s, &none));
}

TEST(choose_least_loaded) {
        unsigned load[CPU_SETSIZE] = {};
        cpu_set_t host = cpus("0-3"), got;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        ASSERT_OK(cpu_lease_choose(&host, load, 1, &got));
        a = fmt(got);
        ASSERT_STREQ("0", a);
        load[0] = 1;
        load[1] = 1;
        ASSERT_OK(cpu_lease_choose(&host, load, 2, &got));
        b = fmt(got);
        ASSERT_STREQ("2-3", b);
        /* more than the host has: all of it */
        ASSERT_OK(cpu_lease_choose(&host, load, 9, &got));
        c = fmt(got);
        ASSERT_STREQ("0-3", c);
        /* only the host's CPUs, whatever the load elsewhere */
        host = cpus("2,5");
        load[2] = 3;
        ASSERT_OK(cpu_lease_choose(&host, load, 1, &got));
        d = fmt(got);
        ASSERT_STREQ("5", d);
        ASSERT_ERROR(EINVAL, cpu_lease_choose(&host, load, 0, &got));
        CPU_ZERO(&host);
        ASSERT_ERROR(EINVAL, cpu_lease_choose(&host, load, 1, &got));
}

FIXTURE(lease) {
        char dir[64];
        char leases[96];
};

FIXTURE_SETUP(lease) {
        snprintf(self->dir, sizeof self->dir, "/tmp/test-cpu-lease.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        snprintf(self->leases, sizeof self->leases, "%s/cpus", self->dir);
}

FIXTURE_TEARDOWN(lease) {
        if (self->dir[0])
                ASSERT_OK(rm_rf_at(AT_FDCWD, self->dir));
}

static char *lease_text(const char *dir, const char *job) {
        char p[256], *t = NULL;
        snprintf(p, sizeof p, "%s/%s", dir, job);
        return read_full_file(p, 4096, &t, NULL) < 0 ? NULL : t;
}

/* Two cores, one-CPU jobs: the first two get a core each, the next ones share the least-loaded. */
TEST_F(lease, spread_then_share) {
        cpu_set_t host = cpus("0-1"), got[4];
        const char *jobs[] = { "j0", "j1", "j2", "j3" };
        unsigned per_cpu[2] = {};

        for (size_t i = 0; i < ELEMENTSOF(jobs); i++) {
                ASSERT_OK(cpu_lease_acquire(self->leases, jobs[i], &host, 1, &got[i]));
                ASSERT_EQ(1, CPU_COUNT(&got[i]));
                per_cpu[CPU_ISSET(1, &got[i])]++;
        }
        ASSERT_EQ(2U, per_cpu[0]);
        ASSERT_EQ(2U, per_cpu[1]);
        ASSERT_FALSE(CPU_EQUAL(&got[0], &got[1]));
        _cleanup_free_ char *t = lease_text(self->leases, "j0"), *t1 = fmt(got[0]);
        ASSERT_STREQ(t1, t);
        struct stat st;
        ASSERT_EQ(0, stat(self->leases, &st));
        ASSERT_EQ(0700, st.st_mode & 07777);
}

TEST_F(lease, same_job_same_cpus_and_release) {
        cpu_set_t host = cpus("0-7"), a, b, c;

        ASSERT_OK(cpu_lease_acquire(self->leases, "busy", &host, 4, &a));
        ASSERT_OK(cpu_lease_acquire(self->leases, "job", &host, 2, &b));
        ASSERT_OK(cpu_lease_acquire(self->leases, "job", &host, 2, &c));
        ASSERT_TRUE(CPU_EQUAL(&b, &c));
        CPU_AND(&c, &a, &b);
        ASSERT_EQ(0, CPU_COUNT(&c)); /* free cores first */
        ASSERT_OK(cpu_lease_release(self->leases, "job"));
        ASSERT_OK(cpu_lease_release(self->leases, "job")); /* twice: fine */
        ASSERT_OK(cpu_lease_release(self->leases, "never"));
        ASSERT_TRUE(lease_text(self->leases, "job") == NULL);
        ASSERT_ERROR(EINVAL, cpu_lease_release(self->leases, "../x"));
        ASSERT_ERROR(EINVAL, cpu_lease_acquire(self->leases, "a/b", &host, 1, &a));
        /* no directory at all: nothing to release */
        ASSERT_OK(cpu_lease_release("/tmp/test-cpu-lease-does-not-exist", "job"));
}

/* Garbage in the directory counts for nothing (and does not stop the choice). */
TEST_F(lease, malformed_files_ignored) {
        cpu_set_t host = cpus("0-1"), got;
        _cleanup_close_ int dfd = -EBADF;

        ASSERT_OK(mkdir_p(self->leases, 0700));
        dfd = open(self->leases, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        ASSERT_OK(write_file_atomic_at(dfd, "junk", "zzz", 3, 0600));
        ASSERT_OK(write_file_atomic_at(dfd, ".hidden", "0", 1, 0600));
        ASSERT_OK(cpu_lease_acquire(self->leases, "j", &host, 1, &got));
        ASSERT_TRUE(CPU_ISSET(0, &got));
}

/* Eight processes at once on two cores: the flock makes them see each other, four per core. */
TEST_F(lease, concurrent) {
        cpu_set_t host = cpus("0-1");
        unsigned per_cpu[2] = {};

        for (int i = 0; i < 8; i++) {
                pid_t pid = fork();
                ASSERT_TRUE(pid >= 0);
                if (pid == 0) {
                        char id[16];
                        cpu_set_t got;
                        snprintf(id, sizeof id, "c%d", i);
                        _exit(cpu_lease_acquire(self->leases, id, &host, 1, &got) < 0);
                }
        }
        for (int i = 0; i < 8; i++) {
                int st;
                ASSERT_TRUE(wait(&st) > 0);
                ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        for (int i = 0; i < 8; i++) {
                char id[16];
                snprintf(id, sizeof id, "c%d", i);
                _cleanup_free_ char *t = lease_text(self->leases, id);
                ASSERT_TRUE(t != NULL);
                per_cpu[t[0] == '1']++;
        }
        ASSERT_EQ(4U, per_cpu[0]);
        ASSERT_EQ(4U, per_cpu[1]);
}
