/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-admission: worker.json parsed strictly (every key, "auto", the tags and the default ones, refusals
 * naming the field), and the
 * admission directory: admitted up to each ceiling and never past it, queued in order (a later job does
 * not pass an earlier one that waits), a dead waiter skipped, a job too big for the ceiling, the refuse
 * policy, release, and concurrent processes never holding more leases than the ceiling. The setup gate:
 * slots taken up to max_setups, in order, a dead holder's slot and a dead waiter's place freed, and
 * concurrent processes never holding more slots than max_setups. Unprivileged. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admission/admission.h"
#include "admission/setup-gate.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "tests.h"

TEST_MAIN();

static int parse(const char *text, AdmissionPolicy *p, char **err) {
        return admission_policy_parse(text, strlen(text), p, err);
}

TEST(policy) {
        AdmissionPolicy p;

        ASSERT_OK(parse("{}", &p, NULL));
        EXPECT_EQ(0ULL, p.max_jobs);
        EXPECT_EQ(0ULL, p.max_memory_bytes);
        EXPECT_EQ((uint64_t) ADMISSION_MAX_WAIT_S_DEFAULT, p.max_wait_s);
        EXPECT_FALSE(p.refuse_when_full);
        ASSERT_OK(parse("{\"max_jobs\": 4, \"max_memory\": \"8G\", \"max_cpus\": 2.5, \"when_full\": \"refuse\", "
                        "\"max_wait_s\": 0}", &p, NULL));
        EXPECT_EQ(4ULL, p.max_jobs);
        EXPECT_EQ(8ULL << 30, p.max_memory_bytes);
        EXPECT_EQ(2500ULL, p.max_cpus_milli);
        EXPECT_TRUE(p.refuse_when_full);
        EXPECT_EQ(0ULL, p.max_wait_s);
        EXPECT_TRUE(p.max_setups >= (uint64_t) ADMISSION_SETUPS_PER_CPU);
        ASSERT_OK(parse("{\"max_setups\": 3}", &p, NULL));
        EXPECT_EQ(3ULL, p.max_setups);
        ASSERT_OK(parse("{\"max_memory\": \"auto\", \"max_cpus\": \"auto\"}", &p, NULL));
        EXPECT_TRUE(p.max_memory_bytes > 0);
        EXPECT_TRUE(p.max_cpus_milli >= 1000);
}

TEST(policy_refusals) {
        static const struct { const char *text, *want; } bad[] = {
                { "{\"max_job\": 4}", "unknown key 'max_job'" },
                { "{\"max_jobs\": 0}", "max_jobs" },
                { "{\"max_jobs\": \"4\"}", "max_jobs" },
                { "{\"max_memory\": \"lots\"}", "max_memory" },
                { "{\"max_memory\": 0}", "max_memory" },
                { "{\"max_cpus\": -1}", "max_cpus" },
                { "{\"when_full\": \"drop\"}", "when_full" },
                { "{\"max_wait_s\": 86401}", "max_wait_s" },
                { "{\"max_setups\": 0}", "max_setups" },
                { "{\"max_setups\": 1025}", "max_setups" },
                { "[]", "" },
                { "{\"max_jobs\": 4, \"max_jobs\": 5}", "" },
                { "{\"tags\": []}", "tags: must be an array of 1 to 64" },
                { "{\"tags\": \"pool:trusted\"}", "tags: must be an array" },
                { "{\"tags\": [\"pool:trusted\", 1]}", "tags[1]: must be a tag" },
                { "{\"tags\": [\"trusted\"]}", "tags[0]: must be a tag" },
                { "{\"tags\": [\"tenant:a b\"]}", "tags[0]: must be a tag" },
                { "{\"tags\": [\"pool:any\", \"pool:any\"]}", "tags[1]: 'pool:any' is listed twice" },
        };
        AdmissionPolicy p;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *err = NULL;
                EXPECT_ERROR(EINVAL, parse(bad[i].text, &p, &err));
                EXPECT_CONTAINS(bad[i].want, err ?: "");
        }
}

TEST(policy_tags) {
        _cleanup_(admission_policy_done) AdmissionPolicy p = {};
        AdmissionPolicy none;
        char *const *t;

        /* without the key: pond's own pools, never byo */
        ASSERT_OK(parse("{\"max_jobs\": 2}", &none, NULL));
        ASSERT_TRUE(none.tags == NULL);
        t = admission_policy_tags(&none);
        ASSERT_EQ(2, strv_length(t));
        ASSERT_STREQ("pool:trusted", t[0]);
        ASSERT_STREQ("pool:any", t[1]);
        ASSERT_OK(parse("{\"tags\": [\"pool:byo\", \"tenant:acme\", \"zone:eu\"], \"max_jobs\": 1}", &p, NULL));
        t = admission_policy_tags(&p);
        ASSERT_EQ(3, strv_length(t));
        ASSERT_STREQ("pool:byo", t[0]);
        ASSERT_STREQ("tenant:acme", t[1]);
        ASSERT_STREQ("zone:eu", t[2]);
        EXPECT_EQ(1ULL, p.max_jobs);
}

static const AdmissionClaim ONE = { 1ULL << 30, 1000 };

static AdmissionVerdict try(const char *dir, const char *id, const AdmissionPolicy *p, int *qfd) {
        AdmissionState s;
        AdmissionVerdict v = (AdmissionVerdict) -1;
        int r = admission_try(dir, id, p, &ONE, qfd, &s, &v);
        return r < 0 ? (AdmissionVerdict) r : v;
}

TEST(ceiling_and_order) {
        char dir[] = "/tmp/pond-test-admission.XXXXXX";
        AdmissionPolicy p = { .max_jobs = 2, .max_memory_bytes = 3ULL << 30 };
        int qa = -EBADF, qb = -EBADF, qc = -EBADF, none = -EBADF;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "a", &p, &none));
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "a", &p, &none)); /* its lease: admitted again, no second one */
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "b", &p, &none));
        EXPECT_EQ(ADMISSION_QUEUED, try(dir, "c", &p, &qc));      /* 3 jobs > max_jobs 2 */
        EXPECT_TRUE(qc >= 0);
        EXPECT_EQ(ADMISSION_QUEUED, try(dir, "d", &p, &qa));
        ASSERT_OK(admission_release(dir, "a"));
        /* d queued after c: it waits even though there is room for one now */
        EXPECT_EQ(ADMISSION_QUEUED, try(dir, "d", &p, &qa));
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "c", &p, &qc));
        EXPECT_TRUE(qc < 0); /* its queue file is gone */
        EXPECT_EQ(ADMISSION_QUEUED, try(dir, "d", &p, &qa));
        ASSERT_OK(admission_release(dir, "b"));
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "d", &p, &qa));
        /* memory: d holds 1 GiB of 3; e and f fit, g (4 GiB) waits */
        ASSERT_OK(admission_release(dir, "c"));
        p.max_jobs = 0;
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "e", &p, &none));
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "f", &p, &none));
        EXPECT_EQ(ADMISSION_QUEUED, try(dir, "g", &p, &qb));
        /* a waiter that died (its queue file's flock gone) is skipped: h passes g's stale entry */
        qb = safe_close(qb);
        ASSERT_OK(admission_release(dir, "e"));
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "h", &p, &none));
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

TEST(too_big_and_refuse) {
        char dir[] = "/tmp/pond-test-admission.XXXXXX";
        AdmissionPolicy p = { .max_jobs = 1, .max_cpus_milli = 500 };
        int q = -EBADF;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        EXPECT_EQ(ADMISSION_TOO_BIG, try(dir, "big", &p, &q));
        p.max_cpus_milli = 0;
        p.refuse_when_full = true;
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "a", &p, &q));
        EXPECT_EQ(ADMISSION_FULL, try(dir, "b", &p, &q));
        EXPECT_TRUE(q < 0);
        ASSERT_OK(admission_release(dir, "a"));
        ASSERT_OK(admission_release(dir, "a"));
        ASSERT_OK(admission_release(dir, "never"));
        EXPECT_EQ(ADMISSION_ADMITTED, try(dir, "b", &p, &q));
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
        ASSERT_OK(admission_release(dir, "b")); /* no directory: nothing to release */
}

static void raise_max(int *max, int now) {
        int m = __atomic_load_n(max, __ATOMIC_SEQ_CST);

        while (now > m && !__atomic_compare_exchange_n(max, &m, now, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                ;
}

/* 12 processes, a ceiling of 4: each takes its turn (queued until admitted), holds its lease while it
 * counts itself into a shared counter, and releases. The counter's maximum never passes 4. */
TEST(concurrent) {
        char dir[] = "/tmp/pond-test-admission.XXXXXX";
        AdmissionPolicy p = { .max_jobs = 4 };
        int *shared;
        pid_t pids[12];

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        shared = mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_TRUE(shared != MAP_FAILED);
        shared[0] = shared[1] = 0;
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                pids[i] = fork();
                ASSERT_TRUE(pids[i] >= 0);
                if (pids[i] == 0) {
                        char id[16];
                        int q = -EBADF, now;
                        AdmissionVerdict v;

                        snprintf(id, sizeof id, "j%zu", i);
                        while ((v = try(dir, id, &p, &q)) == ADMISSION_QUEUED)
                                usleep(1000);
                        if (v != ADMISSION_ADMITTED)
                                _exit(1);
                        now = __atomic_add_fetch(&shared[0], 1, __ATOMIC_SEQ_CST);
                        raise_max(&shared[1], now);
                        usleep(20000);
                        __atomic_sub_fetch(&shared[0], 1, __ATOMIC_SEQ_CST);
                        _exit(admission_release(dir, id) < 0);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                int st;
                ASSERT_EQ(pids[i], waitpid(pids[i], &st, 0));
                EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        TEST_LOG("at most %d of 12 held a lease at once (ceiling 4)", shared[1]);
        EXPECT_TRUE(shared[1] >= 1 && shared[1] <= 4);
        munmap(shared, 2 * sizeof(int));
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

/* 1: a slot taken, 0: waits; -errno */
static int gate(const char *dir, const char *id, unsigned slots, int *slot, int *q) {
        SetupGateState s;
        return setup_gate_try(dir, id, slots, slot, q, &s);
}

TEST(setup_gate) {
        char dir[] = "/tmp/pond-test-setup.XXXXXX";
        int sa = -EBADF, sb = -EBADF, sc = -EBADF, sd = -EBADF, se = -EBADF;
        int qc = -EBADF, qd = -EBADF, qe = -EBADF, none = -EBADF;
        pid_t pid;
        int st;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        EXPECT_EQ(1, gate(dir, "a", 2, &sa, &none));
        EXPECT_EQ(1, gate(dir, "b", 2, &sb, &none));
        EXPECT_EQ(0, gate(dir, "c", 2, &sc, &qc));      /* both slots held */
        EXPECT_TRUE(qc >= 0 && sc < 0);
        EXPECT_EQ(0, gate(dir, "d", 2, &sd, &qd));
        sa = safe_close(sa);                            /* a's payload started */
        EXPECT_EQ(0, gate(dir, "d", 2, &sd, &qd));      /* d queued after c: it waits */
        EXPECT_EQ(1, gate(dir, "c", 2, &sc, &qc));
        EXPECT_TRUE(qc < 0);                            /* its queue file is gone */
        /* a holder that dies frees its slot with its fd: b's, taken in a child that exits */
        sb = safe_close(sb);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                int s = -EBADF, q = -EBADF;
                _exit(gate(dir, "child", 2, &s, &q) == 1 ? 0 : 1); /* d waits in the queue: child does too */
        }
        ASSERT_EQ(pid, waitpid(pid, &st, 0));
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1);
        EXPECT_EQ(1, gate(dir, "d", 2, &sd, &qd));      /* the child's dead queue entry is behind d anyway */
        /* a dead waiter ahead is skipped: e waits behind nobody once c is gone and f's place died */
        EXPECT_EQ(0, gate(dir, "f", 2, &se, &qe));
        qe = safe_close(qe);
        sc = safe_close(sc);
        EXPECT_EQ(1, gate(dir, "e", 2, &se, &none));
        ASSERT_OK(setup_gate_leave(dir, "f"));
        ASSERT_OK(setup_gate_leave(dir, "never"));
        safe_close(sd);
        safe_close(se);
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
        ASSERT_OK(setup_gate_leave(dir, "e"));          /* no directory: nothing to leave */
}

/* 12 processes, 3 slots: each waits its turn, counts itself into a shared counter while it holds its slot,
 * and gives it back by closing it. The counter's maximum never passes 3. */
TEST(setup_gate_concurrent) {
        char dir[] = "/tmp/pond-test-setup.XXXXXX";
        int *shared;
        pid_t pids[12];

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        shared = mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_TRUE(shared != MAP_FAILED);
        shared[0] = shared[1] = 0;
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                pids[i] = fork();
                ASSERT_TRUE(pids[i] >= 0);
                if (pids[i] == 0) {
                        char id[16];
                        int slot = -EBADF, q = -EBADF, now, r;

                        snprintf(id, sizeof id, "j%zu", i);
                        while ((r = gate(dir, id, 3, &slot, &q)) == 0)
                                usleep(1000);
                        if (r != 1)
                                _exit(1);
                        now = __atomic_add_fetch(&shared[0], 1, __ATOMIC_SEQ_CST);
                        raise_max(&shared[1], now);
                        usleep(20000);
                        __atomic_sub_fetch(&shared[0], 1, __ATOMIC_SEQ_CST);
                        safe_close(slot);
                        _exit(0);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                int st;
                ASSERT_EQ(pids[i], waitpid(pids[i], &st, 0));
                EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        TEST_LOG("at most %d of 12 held a setup slot at once (max_setups 3)", shared[1]);
        EXPECT_TRUE(shared[1] >= 1 && shared[1] <= 3);
        munmap(shared, 2 * sizeof(int));
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}
