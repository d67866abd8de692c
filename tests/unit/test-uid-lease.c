/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-uid-lease: the pool of host uid ranges: distinct ranges for distinct jobs, the same range for the
 * same job, release, malformed lease files ignored, and a range with a live process of its uids neither
 * handed out nor given back. Root (setresuid for the live process): skipped otherwise. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "tests.h"
#include "userns/userns.h"

TEST_MAIN();

FIXTURE(pool) {
        char dir[64];
        pid_t squatter;
};

FIXTURE_SETUP(pool) {
        snprintf(self->dir, sizeof self->dir, "/tmp/test-uid-lease.XXXXXX");
        ASSERT_TRUE(mkdtemp(self->dir) != NULL);
}

FIXTURE_TEARDOWN(pool) {
        if (self->squatter > 0) {
                kill(self->squatter, SIGKILL);
                waitpid(self->squatter, NULL, 0);
        }
        (void) rm_rf_at(AT_FDCWD, self->dir);
}

TEST_F(pool, distinct_ranges_same_job_same_range) {
        UidRange a, b, again;

        ASSERT_OK(uid_lease_acquire(self->dir, "job-a", &a));
        ASSERT_OK(uid_lease_acquire(self->dir, "job-b", &b));
        EXPECT_TRUE(a.slot != b.slot);
        EXPECT_EQ(UID_POOL_BASE + a.slot * UID_RANGE_SIZE, a.base);
        EXPECT_TRUE(a.base >= UID_POOL_BASE && b.base >= UID_POOL_BASE);
        ASSERT_OK(uid_lease_acquire(self->dir, "job-a", &again));
        EXPECT_EQ(a.base, again.base);
        ASSERT_OK(uid_lease_find(self->dir, "job-b", &again));
        EXPECT_EQ(b.base, again.base);
        ASSERT_OK(uid_lease_release(self->dir, "job-a"));
        EXPECT_ERROR(ENOENT, uid_lease_find(self->dir, "job-a", &again));
        /* another job never gets a range that is leased (which free one it gets depends on the host's
         * processes: a range with a live process of its uids is skipped) */
        ASSERT_OK(uid_lease_acquire(self->dir, "job-c", &again));
        EXPECT_TRUE(again.slot != b.slot);
        /* no lease, no directory: nothing to give back */
        ASSERT_OK(uid_lease_release(self->dir, "job-none"));
        ASSERT_OK(uid_lease_release("/nonexistent/uids", "job-a"));
        EXPECT_ERROR(EINVAL, uid_lease_acquire(self->dir, "../escape", &again));
}

TEST_F(pool, malformed_leases_hold_nothing) {
        UidRange a;
        int dfd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        ASSERT_TRUE(dfd >= 0);
        ASSERT_OK(write_file_atomic_at(dfd, "job-x", "garbage\n", 8, 0600));
        ASSERT_OK(write_file_atomic_at(dfd, "job-y", "99999\n", 6, 0600));
        close(dfd);
        ASSERT_OK(uid_lease_acquire(self->dir, "job-a", &a));
        EXPECT_TRUE(a.slot < UID_POOL_SLOTS);
        EXPECT_ERROR(EINVAL, uid_lease_find(self->dir, "job-x", &a));
        ASSERT_OK(uid_lease_release(self->dir, "job-x"));
}

/* A process running as a uid of the first free slot (a leftover): that slot is skipped, and a lease on it is
 * not given back while the process lives. Which slot is free depends on the host (a worker's running jobs
 * hold ranges): the test finds it first. */
TEST_F(pool, live_process_keeps_its_range) {
        UidRange first, a;
        int sync_pipe[2];
        char c, slot[16];
        uid_t uid;

        if (geteuid() != 0)
                TEST_SKIP("needs root to run a process as a pool uid");
        ASSERT_OK(uid_lease_acquire(self->dir, "job-probe", &first));
        ASSERT_OK(uid_lease_release(self->dir, "job-probe"));
        uid = first.base + 1000;
        ASSERT_EQ(0, uid_range_in_use(first.base, UID_RANGE_SIZE));
        ASSERT_TRUE(pipe(sync_pipe) == 0);
        self->squatter = fork();
        ASSERT_TRUE(self->squatter >= 0);
        if (self->squatter == 0) {
                if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(1);
                (void) write(sync_pipe[1], "x", 1);
                pause();
                _exit(0);
        }
        close(sync_pipe[1]);
        ASSERT_EQ(1, read(sync_pipe[0], &c, 1));
        close(sync_pipe[0]);
        EXPECT_EQ(1, uid_range_in_use(first.base, UID_RANGE_SIZE));
        ASSERT_OK(uid_lease_acquire(self->dir, "job-a", &a));
        EXPECT_TRUE(a.slot != first.slot);
        /* the squatter's range, leased by hand: kept while it lives */
        int dfd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        snprintf(slot, sizeof slot, "%u\n", first.slot);
        ASSERT_OK(write_file_atomic_at(dfd, "job-old", slot, strlen(slot), 0600));
        close(dfd);
        EXPECT_ERROR(EBUSY, uid_lease_release(self->dir, "job-old"));
        ASSERT_OK(uid_lease_find(self->dir, "job-old", &a));
        kill(self->squatter, SIGKILL);
        waitpid(self->squatter, NULL, 0);
        self->squatter = 0;
        ASSERT_OK(uid_lease_release(self->dir, "job-old"));
        EXPECT_ERROR(ENOENT, uid_lease_find(self->dir, "job-old", &a));
}
