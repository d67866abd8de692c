/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-net-lease: the /30 allocator: addresses of a lease, distinct leases until the pool is exhausted,
 * release and reuse, exclusivity between processes, a release that never frees another job's block, and
 * refused pools. Unprivileged: leases are files in a temporary directory. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "net/net.h"
#include "tests.h"

TEST_MAIN();

#define POOL "10.203.0.0/16"

FIXTURE(lease) {
        char dir[64];
        char leases[96];        /* below dir, not created: acquire creates it */
};

FIXTURE_SETUP(lease) {
        snprintf(self->dir, sizeof self->dir, "/tmp/test-net-lease.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        snprintf(self->leases, sizeof self->leases, "%s/leases", self->dir);
}

FIXTURE_TEARDOWN(lease) {
        if (self->dir[0])
                ASSERT_OK(rm_rf_at(AT_FDCWD, self->dir));
}

static uint32_t host_order(struct in_addr a) {
        return ntohl(a.s_addr);
}

static uint32_t addr(const char *text) {
        struct in_addr a = {};
        inet_pton(AF_INET, text, &a);
        return host_order(a);
}

/* The lease dir's entries, "." and ".." aside (-1 if it cannot be read). */
static int entries(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;

        if (!d)
                return -1;
        while ((de = readdir(d)))
                n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
        closedir(d);
        return n;
}

static char *read_in(const char *dir, const char *name) {
        char p[256], *text = NULL;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        return read_full_file(p, 4096, &text, NULL) < 0 ? NULL : text;
}

TEST_F(lease, addresses_and_files) {
        _cleanup_free_ char *owner = NULL, *reverse = NULL;
        struct stat st;
        NetLease l = {};
        char name[16];

        ASSERT_OK(net_lease_acquire(self->leases, POOL, "job-a", &l));
        ASSERT_TRUE(l.index < (1U << 14)); /* a /16 holds 2^14 blocks of 4 */
        ASSERT_EQ(addr("10.203.0.0") + l.index * 4 + 1, host_order(l.host_addr));
        ASSERT_EQ(addr("10.203.0.0") + l.index * 4 + 2, host_order(l.job_addr));
        /* The lease dir was created, private; the block's file names its owner, and the reverse index the
         * block. */
        ASSERT_EQ(0, stat(self->leases, &st));
        ASSERT_EQ(0700, st.st_mode & 07777);
        snprintf(name, sizeof name, "%u", l.index);
        owner = read_in(self->leases, name);
        ASSERT_STREQ("job-a", owner);
        reverse = read_in(self->leases, "job-job-a");
        ASSERT_STREQ(name, reverse);
        ASSERT_EQ(2, entries(self->leases));
}

/* The start of the search is a hash of the job id: the same job finds the same block again. */
TEST_F(lease, same_job_same_block_after_release) {
        NetLease a = {}, b = {};

        ASSERT_OK(net_lease_acquire(self->leases, POOL, "job-again", &a));
        ASSERT_OK(net_lease_release(self->leases, "job-again"));
        ASSERT_EQ(0, entries(self->leases));
        ASSERT_OK(net_lease_acquire(self->leases, POOL, "job-again", &b));
        ASSERT_EQ(a.index, b.index);
}

/* Host bits in the pool's address are ignored: the pool is the network. */
TEST_F(lease, pool_base_is_masked) {
        NetLease l = {};

        ASSERT_OK(net_lease_acquire(self->leases, "10.203.77.5/16", "job-m", &l));
        ASSERT_EQ(addr("10.203.0.0") + l.index * 4 + 1, host_order(l.host_addr));
        ASSERT_EQ(addr("10.203.0.0") + l.index * 4 + 2, host_order(l.job_addr));
}

TEST_F(lease, smallest_pool_has_one_block) {
        NetLease l = {};

        ASSERT_OK(net_lease_acquire(self->leases, "192.168.7.4/30", "job-1", &l));
        ASSERT_EQ(0, l.index);
        ASSERT_EQ(addr("192.168.7.5"), host_order(l.host_addr));
        ASSERT_EQ(addr("192.168.7.6"), host_order(l.job_addr));
        ASSERT_ERROR(EADDRINUSE, net_lease_acquire(self->leases, "192.168.7.4/30", "job-2", &l));
}

/* A /28 holds four blocks: four jobs get all four, a fifth is refused, and leaves nothing behind. */
TEST_F(lease, exhaustion) {
        const char *jobs[] = { "j0", "j1", "j2", "j3" };
        NetLease l[4] = {}, fifth = { .index = 77 };
        unsigned seen = 0;

        for (size_t i = 0; i < ELEMENTSOF(jobs); i++) {
                ASSERT_OK(net_lease_acquire(self->leases, "10.9.8.16/28", jobs[i], &l[i]));
                ASSERT_TRUE(l[i].index < 4);
                ASSERT_EQ(addr("10.9.8.16") + l[i].index * 4 + 1, host_order(l[i].host_addr));
                seen |= 1U << l[i].index;
        }
        ASSERT_EQ(0xf, seen);
        ASSERT_ERROR(EADDRINUSE, net_lease_acquire(self->leases, "10.9.8.16/28", "j4", &fifth));
        ASSERT_EQ(77, fifth.index); /* untouched on failure */
        ASSERT_EQ(8, entries(self->leases));
}

TEST_F(lease, release_makes_the_block_reusable) {
        const char *jobs[] = { "r0", "r1", "r2", "r3" };
        NetLease l[4] = {}, next = {};

        for (size_t i = 0; i < ELEMENTSOF(jobs); i++)
                ASSERT_OK(net_lease_acquire(self->leases, "10.9.8.0/28", jobs[i], &l[i]));
        ASSERT_OK(net_lease_release(self->leases, "r2"));
        ASSERT_EQ(6, entries(self->leases));
        ASSERT_OK(net_lease_acquire(self->leases, "10.9.8.0/28", "r4", &next));
        ASSERT_EQ(l[2].index, next.index);
        ASSERT_ERROR(EADDRINUSE, net_lease_acquire(self->leases, "10.9.8.0/28", "r5", &next));
}

/* Release is idempotent and harmless without a lease: cleanup calls it for jobs that never got one. */
TEST_F(lease, release_without_a_lease) {
        NetLease l = {};

        ASSERT_OK(net_lease_release(self->leases, "never")); /* the lease dir does not even exist */
        ASSERT_OK(net_lease_acquire(self->leases, POOL, "once", &l));
        ASSERT_OK(net_lease_release(self->leases, "other"));
        ASSERT_EQ(2, entries(self->leases));
        ASSERT_OK(net_lease_release(self->leases, "once"));
        ASSERT_OK(net_lease_release(self->leases, "once"));
        ASSERT_EQ(0, entries(self->leases));
}

/* A reverse index that points at another job's block (stale or forged) frees only itself. */
TEST_F(lease, release_never_frees_another_jobs_block) {
        _cleanup_free_ char *owner = NULL;
        char p[160], name[16];
        NetLease a = {};
        int fd;

        ASSERT_OK(net_lease_acquire(self->leases, POOL, "owner", &a));
        snprintf(name, sizeof name, "%u", a.index);
        snprintf(p, sizeof p, "%s/job-intruder", self->leases);
        fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(write_all(fd, name, strlen(name)));
        close(fd);
        ASSERT_OK(net_lease_release(self->leases, "intruder"));
        owner = read_in(self->leases, name);
        ASSERT_STREQ("owner", owner);
        ASSERT_EQ(2, entries(self->leases));
}

/* Leases are exclusive between processes (O_EXCL), not only within one: eight at once from a pool of
 * eight blocks all differ. */
TEST_F(lease, exclusive_across_processes) {
        enum { N = 8 };
        int fds[2];
        unsigned seen = 0;
        pid_t pids[N];

        ASSERT_EQ(0, pipe2(fds, O_CLOEXEC));
        for (int i = 0; i < N; i++) {
                pids[i] = fork();
                ASSERT_TRUE(pids[i] >= 0);
                if (pids[i] == 0) {
                        char job[16];
                        NetLease l;
                        unsigned char c;

                        snprintf(job, sizeof job, "par-%d", i);
                        c = net_lease_acquire(self->leases, "10.50.0.0/27", job, &l) < 0 ? 0xff :
                                                                                           (unsigned char) l.index;
                        _exit(write(fds[1], &c, 1) == 1 ? 0 : 1);
                }
        }
        close(fds[1]);
        for (int i = 0; i < N; i++) {
                unsigned char c;
                int status;

                ASSERT_EQ(1, read(fds[0], &c, 1));
                ASSERT_TRUE(c < N);
                ASSERT_FALSE(seen & (1U << c));
                seen |= 1U << c;
                ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
        }
        close(fds[0]);
        ASSERT_EQ(0xff, seen);
}

TEST_F(lease, bad_pools_refused) {
        static const char *const bad[] = {
                "10.203.0.0",           /* no prefix length */
                "10.203.0.0/",
                "10.203.0.0/abc",
                "10.203.0.0/31",        /* smaller than one /30 */
                "10.203.0.0/32",
                "10.0.0.0/7",           /* larger than the allocator's bound */
                "0.0.0.0/0",
                "10.203.0.0/-1",
                "bogus/16",
                "10.203.0.300/16",
                "/16",
                "::1/64",               /* IPv4 only */
                "10.203.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0/16", /* longer than any address */
        };
        NetLease l = { .index = 77 };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = net_lease_acquire(self->leases, bad[i], "job-bad", &l);
                if (r != -EINVAL)
                        TEST_LOG("pool '%s' was not refused", bad[i]);
                EXPECT_EQ(-EINVAL, r);
        }
        ASSERT_EQ(77, l.index);
        /* Refused before anything was created. */
        ASSERT_EQ(-1, entries(self->leases));
}

/* A job id that is not a file name (the callers validate ids; the allocator must still not write
 * elsewhere or keep a half-made lease). */
TEST_F(lease, job_id_with_a_slash_leaves_nothing) {
        char outside[160];
        NetLease l = {};

        ASSERT_TRUE(net_lease_acquire(self->leases, "10.9.8.0/28", "../escape", &l) < 0);
        ASSERT_EQ(0, entries(self->leases));
        snprintf(outside, sizeof outside, "%s/escape", self->dir);
        ASSERT_TRUE(access(outside, F_OK) < 0);
}
