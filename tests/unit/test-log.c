/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-log: a line carries its syslog priority ("<3>" for an error) exactly when stderr is the stream
 * JOURNAL_STREAM names, as under a unit whose stderr is the journal; otherwise it is unchanged. Each case
 * runs in a child: the decision is made once per process. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "tests.h"

/* What a child that logs one error and one debug line writes to stderr, with JOURNAL_STREAM set to the
 * identity of its stderr (mode 1), to another file's (2), or unset (0). */
static int logged(int mode, char **ret) {
        char path[] = "/tmp/pond-test-log.XXXXXX";
        _cleanup_close_ int fd = mkostemp(path, O_CLOEXEC);
        PidRef c = PIDREF_NULL;
        siginfo_t si;
        int r;

        if (fd < 0)
                return -errno;
        (void) unlink(path);
        r = safe_fork_full(NULL, (const int[3]) { -EBADF, STDOUT_FILENO, fd }, NULL, 0,
                           FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_REARRANGE_STDIO, &c);
        if (r < 0)
                return r;
        if (r == 0) {
                struct stat st;
                char env[64];

                if (fstat(mode == 1 ? STDERR_FILENO : STDIN_FILENO, &st) < 0)
                        _exit(1);
                snprintf(env, sizeof env, "%llu:%llu", (unsigned long long) st.st_dev,
                         (unsigned long long) st.st_ino);
                if (mode == 0)
                        unsetenv("JOURNAL_STREAM");
                else
                        setenv("JOURNAL_STREAM", env, 1);
                log_set_prefix("pond-test");
                log_set_max_level(LOG_DEBUG);
                log_error("it broke");
                log_debug("details");
                _exit(0);
        }
        r = pidref_wait(&c, 5 * 1000 * 1000, &si);
        if (r < 0)
                return r;
        if (!siginfo_exited_ok(&si))
                return -EIO;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        return read_full_fd(fd, 4096, ret, NULL);
}

TEST(priority_prefix_under_the_journal) {
        _cleanup_free_ char *out = NULL;

        ASSERT_OK(logged(1, &out));
        ASSERT_TRUE(strncmp(out, "<3>pond-test: it broke\n", 23) == 0);
        ASSERT_CONTAINS("\n<7>pond-test: (", out);
        ASSERT_CONTAINS(") details\n", out);
}

TEST(plain_elsewhere) {
        _cleanup_free_ char *unset = NULL, *other = NULL;

        ASSERT_OK(logged(0, &unset));
        ASSERT_TRUE(strncmp(unset, "pond-test: it broke\n", 20) == 0);
        ASSERT_TRUE(strchr(unset, '<') == NULL);
        /* JOURNAL_STREAM inherited from a unit, but stderr is something else now (a pipe, a file). */
        ASSERT_OK(logged(2, &other));
        ASSERT_TRUE(strncmp(other, "pond-test: it broke\n", 20) == 0);
        ASSERT_TRUE(strchr(other, '<') == NULL);
}

TEST_MAIN()
