/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lease-store: the lease store: its exclusive lock keeps a concurrent writer (another process) out
 * until it is dropped, shared locks coexist and keep writers out; records are written whole (replace,
 * create never over an existing lease, no temporary left, a power cut's leftover ignored); listing (a
 * prefix, sorted, records, hidden and unreadable entries); release and sweep remove only what the
 * predicate proves stale. Unprivileged. */
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "lease/lease-store.h"
#include "tests.h"

TEST_MAIN();

FIXTURE(store) {
        char dir[64];
        char leases[96];        /* below dir, not created: LEASE_STORE_CREATE makes it */
};

FIXTURE_SETUP(store) {
        snprintf(self->dir, sizeof self->dir, "/tmp/test-lease-store.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        snprintf(self->leases, sizeof self->leases, "%s/leases", self->dir);
}

FIXTURE_TEARDOWN(store) {
        if (self->dir[0])
                ASSERT_OK(rm_rf_at(AT_FDCWD, self->dir));
}

/* The directory's entries, "." and ".." aside. */
static int entries(const char *dir) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;

        if (!d)
                return -1;
        while ((de = readdir(d)))
                n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
        return n;
}

static int wait_status(pid_t pid) {
        int st;

        if (waitpid(pid, &st, 0) != pid)
                return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST_F(store, open_creates_only_when_asked) {
        LeaseStore s = LEASE_STORE_NULL;
        struct stat st;

        ASSERT_ERROR(ENOENT, lease_store_open(self->leases, 0, &s));
        ASSERT_ERROR(ENOENT, lease_store_open(self->leases, LEASE_STORE_SHARED, &s));
        ASSERT_EQ(0, lease_store_open(self->leases, LEASE_STORE_MISSING_OK, &s)); /* no store, no error */
        ASSERT_EQ(-EBADF, s.dfd); /* untouched */
        ASSERT_EQ(-1, entries(self->leases));
        ASSERT_EQ(1, lease_store_open(self->leases, LEASE_STORE_CREATE, &s));
        ASSERT_EQ(0, stat(self->leases, &st));
        ASSERT_EQ(0700, st.st_mode & 07777);
        lease_store_close(&s);
        ASSERT_EQ(-EBADF, s.dfd);
        lease_store_close(&s); /* twice: fine */
        lease_store_close(NULL);
}

/* A child writes under the lock while the parent holds it: it must wait, and find the parent's record
 * once it gets in. */
TEST_F(store, exclusive_lock_excludes_a_concurrent_writer) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_free_ char *text = NULL;
        int ready[2];
        pid_t pid;
        char c;

        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_CREATE, &s));
        ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                _cleanup_(lease_store_close) LeaseStore t = LEASE_STORE_NULL;
                _cleanup_free_ char *seen = NULL;

                alarm(10);
                /* The inherited descriptor shares the parent's lock: not this process's to hold. */
                lease_store_close(&s);
                (void) write(ready[1], "x", 1);
                if (lease_store_open(self->leases, LEASE_STORE_CREATE, &t) < 0)
                        _exit(2);
                /* In only once the parent is done: its record is there, whole. */
                if (lease_store_read(&t, "parent", 64, &seen) < 0 || !streq(seen, "done\n"))
                        _exit(3);
                _exit(lease_store_write(&t, "child", "mine\n") < 0 ? 4 : 0);
        }
        close(ready[1]);
        ASSERT_EQ(1, read(ready[0], &c, 1));
        close(ready[0]);
        usleep(100 * 1000); /* the child is blocked in flock() by now */
        ASSERT_ERROR(ENOENT, lease_store_read(&s, "child", 64, &text));
        ASSERT_OK(lease_store_write(&s, "parent", "done\n"));
        lease_store_close(&s);
        ASSERT_EQ(0, wait_status(pid));
        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_SHARED, &s));
        ASSERT_OK(lease_store_read(&s, "child", 64, &text));
        ASSERT_STREQ("mine\n", text);
}

/* Readers share: a second shared lock is granted at once; a writer's is not until they are gone. */
TEST_F(store, shared_locks_coexist_and_keep_writers_out) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        pid_t pid;

        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_CREATE | LEASE_STORE_SHARED, &s));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                _cleanup_(lease_store_close) LeaseStore t = LEASE_STORE_NULL;
                _cleanup_close_ int fd = -EBADF;

                alarm(10); /* a shared lock that waited would be killed here */
                if (lease_store_open(self->leases, LEASE_STORE_SHARED, &t) < 0)
                        _exit(2);
                fd = open(self->leases, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
                        _exit(3);
                _exit(0);
        }
        ASSERT_EQ(0, wait_status(pid));
        /* A shared store is for reading: changing it needs the exclusive lock. */
        ASSERT_ERROR(EPERM, lease_store_write(&s, "x", "1"));
        ASSERT_ERROR(EPERM, lease_store_create(&s, "x", "1"));
        ASSERT_ERROR(EPERM, lease_store_remove(&s, "x"));
        ASSERT_EQ(0, entries(self->leases));
}

TEST_F(store, writes_are_whole) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        char path[160];
        struct stat st;
        mode_t old = umask(0777); /* the mode is 0600 whatever the umask */

        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_CREATE, &s));
        ASSERT_OK(lease_store_write(&s, "job-a", "1\n"));
        umask(old);
        ASSERT_OK(lease_store_write(&s, "job-a", "2\n")); /* replaced */
        ASSERT_OK(lease_store_read(&s, "job-a", 64, &a));
        ASSERT_STREQ("2\n", a);
        snprintf(path, sizeof path, "%s/job-a", self->leases);
        ASSERT_EQ(0, stat(path, &st));
        ASSERT_EQ(0600, st.st_mode & 07777);
        /* create: a new lease only, the holder's record untouched */
        ASSERT_OK(lease_store_create(&s, "7", "job-a"));
        ASSERT_ERROR(EEXIST, lease_store_create(&s, "7", "job-b"));
        ASSERT_OK(lease_store_read(&s, "7", 64, &b));
        ASSERT_STREQ("job-a", b);
        ASSERT_EQ(2, entries(self->leases)); /* no temporary file left behind */
        /* A power cut's leftover temporary file neither shows nor stands in the way. */
        ASSERT_OK(write_file_atomic_at(s.dfd, ".8.tmp", "half", 4, 0600));
        ASSERT_OK(write_file_atomic_at(s.dfd, ".job-a.tmp", "ha", 2, 0600));
        ASSERT_OK(lease_store_create(&s, "8", "job-c"));
        ASSERT_OK(lease_store_write(&s, "job-a", "3\n"));
        ASSERT_OK(lease_store_read(&s, "8", 64, &c));
        ASSERT_STREQ("job-c", c);
        ASSERT_EQ(3, entries(self->leases));
        ASSERT_ERROR(EFBIG, lease_store_read(&s, "8", 2, &c));
        ASSERT_ERROR(ENOENT, lease_store_read(&s, "9", 64, &c));
        ASSERT_OK(lease_store_remove(&s, "8"));
        ASSERT_OK(lease_store_remove(&s, "8")); /* twice: fine */
        ASSERT_EQ(2, entries(self->leases));
}

TEST_F(store, names_are_file_names) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_free_ char *text = NULL;
        char longname[300];

        memset(longname, 'a', sizeof longname - 1);
        longname[sizeof longname - 1] = 0;
        EXPECT_TRUE(lease_name_is_valid("job-a"));
        EXPECT_TRUE(lease_name_is_valid("queue-00000000000000000001-j"));
        EXPECT_FALSE(lease_name_is_valid(""));
        EXPECT_FALSE(lease_name_is_valid(NULL));
        EXPECT_FALSE(lease_name_is_valid("."));
        EXPECT_FALSE(lease_name_is_valid(".x.tmp"));
        EXPECT_FALSE(lease_name_is_valid("../x"));
        EXPECT_FALSE(lease_name_is_valid("a/b"));
        EXPECT_FALSE(lease_name_is_valid(longname));
        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_CREATE, &s));
        ASSERT_ERROR(EINVAL, lease_store_write(&s, "../escape", "x"));
        ASSERT_ERROR(EINVAL, lease_store_create(&s, "job-../escape", "x"));
        ASSERT_ERROR(EINVAL, lease_store_read(&s, "../leases/x", 64, &text));
        ASSERT_ERROR(EINVAL, lease_store_remove(&s, ".."));
        ASSERT_EQ(0, entries(self->leases));
        ASSERT_EQ(1, entries(self->dir)); /* nothing beside the store either */
}

TEST_F(store, listing) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_(lease_list_free) LeaseList all = {}, leases = {}, names = {};

        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_CREATE, &s));
        ASSERT_OK(lease_store_list(&s, NULL, 64, &all));
        ASSERT_EQ(0U, all.n);
        ASSERT_OK(lease_store_write(&s, "lease-b", "2 2\n"));
        ASSERT_OK(lease_store_write(&s, "lease-a", "1 1\n"));
        ASSERT_OK(lease_store_write(&s, "queue-1-a", ""));
        ASSERT_OK(lease_store_write(&s, "lease-big", "0123456789"));
        ASSERT_EQ(0, mkdirat(s.dfd, "lease-dir", 0700));
        ASSERT_OK(write_file_atomic_at(s.dfd, ".lease-c.tmp", "half", 4, 0600));
        ASSERT_OK(lease_store_list(&s, NULL, 64, &all));
        ASSERT_EQ(5U, all.n); /* the hidden temporary file is not a lease */
        ASSERT_OK(lease_store_list(&s, "lease-", 8, &leases));
        ASSERT_EQ(4U, leases.n);
        /* sorted by name, each with its record; unreadable (too long, not a file): none */
        ASSERT_STREQ("lease-a", leases.entries[0].name);
        ASSERT_STREQ("1 1\n", leases.entries[0].text);
        ASSERT_STREQ("lease-b", leases.entries[1].name);
        ASSERT_STREQ("2 2\n", leases.entries[1].text);
        ASSERT_STREQ("lease-big", leases.entries[2].name);
        ASSERT_TRUE(leases.entries[2].text == NULL);
        ASSERT_STREQ("lease-dir", leases.entries[3].name);
        ASSERT_TRUE(leases.entries[3].text == NULL);
        /* names only */
        ASSERT_OK(lease_store_list(&s, "queue-", 0, &names));
        ASSERT_EQ(1U, names.n);
        ASSERT_STREQ("queue-1-a", names.entries[0].name);
        ASSERT_TRUE(names.entries[0].text == NULL);
        lease_list_free(&names);
        ASSERT_EQ(0U, names.n);
        lease_list_free(&names); /* twice: fine */
}

/* A test predicate: the holder named in the record is gone if it says "gone"; "?" cannot be told. */
static int holder_gone(const LeaseStore *s _unused_, const char *name _unused_, const char *text, void *userdata) {
        unsigned *calls = userdata;

        (*calls)++;
        if (!text)
                return 1;
        if (streq(text, "?"))
                return -EIO;
        return streq(text, "gone");
}

TEST_F(store, release_only_what_is_proven_stale) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_free_ char *text = NULL;
        unsigned calls = 0;

        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_CREATE, &s));
        ASSERT_OK(lease_store_write(&s, "live", "alive"));
        ASSERT_OK(lease_store_write(&s, "dead", "gone"));
        ASSERT_OK(lease_store_write(&s, "unsure", "?"));
        ASSERT_OK(lease_store_write(&s, "huge", "far too long for the bound"));
        ASSERT_ERROR(EBUSY, lease_store_release(&s, "live", 16, holder_gone, &calls));
        ASSERT_OK(lease_store_read(&s, "live", 16, &text));
        ASSERT_ERROR(EIO, lease_store_release(&s, "unsure", 16, holder_gone, &calls));
        ASSERT_OK(lease_store_release(&s, "dead", 16, holder_gone, &calls));
        ASSERT_OK(lease_store_release(&s, "huge", 16, holder_gone, &calls)); /* unreadable: the predicate says */
        ASSERT_EQ(4U, calls);
        ASSERT_OK(lease_store_release(&s, "dead", 16, holder_gone, &calls)); /* none: fine, nothing to judge */
        ASSERT_EQ(4U, calls);
        ASSERT_EQ(2, entries(self->leases));
        ASSERT_OK(lease_store_release(&s, "live", 0, NULL, NULL)); /* no predicate: the holder gives it back */
        ASSERT_EQ(1, entries(self->leases));
        /* in one call, which takes the lock itself */
        lease_store_close(&s);
        ASSERT_ERROR(EIO, lease_release(self->leases, "unsure", 16, holder_gone, &calls));
        ASSERT_OK(lease_store_open(self->leases, 0, &s));
        ASSERT_OK(lease_store_write(&s, "unsure", "gone"));
        lease_store_close(&s);
        ASSERT_OK(lease_release(self->leases, "unsure", 16, holder_gone, &calls));
        ASSERT_EQ(0, entries(self->leases));
        ASSERT_OK(lease_release(self->leases, "unsure", 16, holder_gone, &calls));
        ASSERT_OK(lease_release("/tmp/test-lease-store-does-not-exist/leases", "x", 0, NULL, NULL));
}

TEST_F(store, sweep_removes_the_stale_of_its_prefix) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        _cleanup_(lease_list_free) LeaseList left = {};
        unsigned calls = 0;

        ASSERT_OK(lease_store_open(self->leases, LEASE_STORE_CREATE, &s));
        ASSERT_OK(lease_store_write(&s, "queue-1", "gone"));
        ASSERT_OK(lease_store_write(&s, "queue-2", "alive"));
        ASSERT_OK(lease_store_write(&s, "queue-3", "gone"));
        ASSERT_OK(lease_store_write(&s, "queue-4", "?"));
        ASSERT_OK(lease_store_write(&s, "lease-1", "gone")); /* another prefix: not judged */
        ASSERT_EQ(2, lease_store_sweep(&s, "queue-", 16, holder_gone, &calls));
        ASSERT_EQ(4U, calls);
        ASSERT_OK(lease_store_list(&s, NULL, 16, &left));
        ASSERT_EQ(3U, left.n);
        ASSERT_STREQ("lease-1", left.entries[0].name);
        ASSERT_STREQ("queue-2", left.entries[1].name);
        ASSERT_STREQ("queue-4", left.entries[2].name);
        ASSERT_EQ(0, lease_store_sweep(&s, "queue-", 16, holder_gone, &calls));
}
