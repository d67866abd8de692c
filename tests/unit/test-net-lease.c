/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-net-lease: the /30 allocator: addresses of a lease, distinct leases until the pool is exhausted,
 * release and reuse, exclusivity between processes, a release that never frees another job's block, and
 * refused pools; the claims on network object names, and two job ids whose names collide set up as root
 * with a real namespace, veth and nftables table: the second is refused and the first's objects stay.
 * Leases are files in a temporary directory; the real objects need root (else SKIP). */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "net/net.h"
#include "tests.h"

TEST_MAIN();

/* Two valid job ids whose network names collide: the first 48 bits of SHA-256 of each are 169d946becb6
 * (found by a birthday search over "collide-N"). */
#define COLLIDE_A "collide-1736521"
#define COLLIDE_B "collide-9235547"

#define POOL "10.203.0.0/16"

FIXTURE(lease) {
        char dir[64];
        char leases[96];        /* below dir, not created: acquire creates it */
        bool net_rundir;        /* dir/run holds a real network set-up of COLLIDE_A's */
};

FIXTURE_SETUP(lease) {
        snprintf(self->dir, sizeof self->dir, "/tmp/test-net-lease.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        snprintf(self->leases, sizeof self->leases, "%s/leases", self->dir);
}

static int job_net_teardown_in(const char *dir, const char *job_id);

FIXTURE_TEARDOWN(lease) {
        if (self->net_rundir)
                (void) job_net_teardown_in(self->dir, COLLIDE_A);
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

/* What a failed test left of a real set-up goes, whatever the failure. */
static int job_net_teardown_in(const char *dir, const char *job_id) {
        char rundir[96];

        snprintf(rundir, sizeof rundir, "%s/run", dir);
        return job_net_teardown(job_id, rundir);
}

TEST(colliding_ids_share_names) {
        JobNet a, b;

        job_net_names(COLLIDE_A, &a);
        job_net_names(COLLIDE_B, &b);
        ASSERT_STREQ("pond_169d946becb6", a.table);
        ASSERT_STREQ(a.table, b.table);
        ASSERT_STREQ(a.host_ifname, b.host_ifname);
        ASSERT_STREQ(a.netns_path, b.netns_path);
}

/* One holder per name: a second job is refused, cannot release it and does not hold it; the holder
 * claims again harmlessly, and once it releases, the name is free for the other. */
TEST_F(lease, name_claim_is_exclusive) {
        _cleanup_free_ char *owner = NULL;

        ASSERT_OK(net_name_claim(self->leases, "pond_169d946becb6", COLLIDE_A));
        owner = read_in(self->leases, "name-pond_169d946becb6");
        ASSERT_STREQ(COLLIDE_A, owner);
        ASSERT_ERROR(EADDRINUSE, net_name_claim(self->leases, "pond_169d946becb6", COLLIDE_B));
        ASSERT_EQ(1, net_name_claimed(self->leases, "pond_169d946becb6", COLLIDE_A));
        ASSERT_EQ(0, net_name_claimed(self->leases, "pond_169d946becb6", COLLIDE_B));
        ASSERT_OK(net_name_release(self->leases, "pond_169d946becb6", COLLIDE_B));
        ASSERT_EQ(1, net_name_claimed(self->leases, "pond_169d946becb6", COLLIDE_A));
        ASSERT_OK(net_name_claim(self->leases, "pond_169d946becb6", COLLIDE_A));
        ASSERT_EQ(1, entries(self->leases));
        ASSERT_OK(net_name_release(self->leases, "pond_169d946becb6", COLLIDE_A));
        ASSERT_EQ(0, entries(self->leases));
        ASSERT_OK(net_name_claim(self->leases, "pond_169d946becb6", COLLIDE_B));
        ASSERT_EQ(0, net_name_claimed(self->leases, "pond_169d946becb6", COLLIDE_A));
        ASSERT_TRUE(net_name_claim(self->leases, "../x", COLLIDE_A) < 0);
}

static bool table_exists(const char *table) {
        struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
        char cmd[96];
        bool found;

        if (!nft)
                return false;
        (void) nft_ctx_buffer_output(nft);
        (void) nft_ctx_buffer_error(nft);
        snprintf(cmd, sizeof cmd, "list table inet %s", table);
        found = nft_run_cmd_from_buffer(nft, cmd) == 0;
        nft_ctx_free(nft);
        return found;
}

static int objects(const JobNet *n) {
        return (access(n->netns_path, F_OK) == 0) + (if_nametoindex(n->host_ifname) > 0) + table_exists(n->table);
}

/* The attack of a chosen colliding id: job A runs with its namespace, veth and table; job B's set-up under
 * the same names is refused and its failure path (the teardown by B's id) leaves A's objects alone; A's
 * own teardown then removes them all. */
TEST_F(lease, colliding_job_cannot_remove_anothers_network) {
        static const uint16_t ports[] = { NET_PROXY_PORT };
        _cleanup_free_ char *err = NULL;
        char rundir[96];
        NetLease la = {}, lb = {};
        JobNet a = {}, b = { .table = "untouched" };
        int r;

        if (geteuid() != 0)
                TEST_SKIP("needs root: real network namespaces, veths and nftables tables");
        job_net_names(COLLIDE_A, &a);
        if (objects(&a) != 0)
                TEST_SKIP("objects named pond_169d946becb6 exist already (another run of this test?)");
        snprintf(rundir, sizeof rundir, "%s/run", self->dir);
        self->net_rundir = true;
        ASSERT_EQ(0, setenv("POND_NET_POOL", "10.251.7.0/28", 1));
        ASSERT_EQ(0, setenv("POND_NFT_TEMPLATE", POND_SOURCE_ROOT "/nft/job.nft", 1));

        ASSERT_OK(job_net_lease(COLLIDE_A, rundir, &la, NULL));
        ASSERT_OK(job_net_setup(COLLIDE_A, rundir, -EBADF, &la, ports, ELEMENTSOF(ports), &a, &err));
        ASSERT_EQ(3, objects(&a));

        ASSERT_OK(job_net_lease(COLLIDE_B, rundir, &lb, NULL));
        ASSERT_TRUE(la.index != lb.index);
        r = job_net_setup(COLLIDE_B, rundir, -EBADF, &lb, ports, ELEMENTSOF(ports), &b, &err);
        /* A's objects are all there, and B's failure path released B's lease only. */
        ASSERT_EQ(3, objects(&a));
        ASSERT_EQ(-EADDRINUSE, r);
        ASSERT_CONTAINS("another running job's", err);
        ASSERT_STREQ("untouched", b.table);
        ASSERT_OK(job_net_teardown(COLLIDE_B, rundir)); /* again, as pond-run --cleanup would */
        ASSERT_EQ(3, objects(&a));
        ASSERT_ERROR(EADDRINUSE, job_net_setup(COLLIDE_B, rundir, -EBADF, NULL, NULL, 0, &b, NULL));
        ASSERT_EQ(3, objects(&a));

        ASSERT_OK(job_net_teardown(COLLIDE_A, rundir));
        ASSERT_EQ(0, objects(&a));
        snprintf(rundir + strlen(rundir), sizeof rundir - strlen(rundir), "/net");
        ASSERT_EQ(0, entries(rundir));
}
