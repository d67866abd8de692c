/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-job-console.c: the supervisor's side of a tty job's hand-over (job-console.c), fail closed: the
 * runtime's console socket is root's alone (0600); a create step that never connected, that connected and
 * sent nothing, or that sent something other than a terminal fails the job as the runtime's failure, with a
 * reason, the socket removed and no fd kept, all without waiting; a real pty master is taken. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "job.h"
#include "tests.h"

TEST_MAIN();

#define SPEC "{\"job_id\":\"console-test\",\"tenant\":\"t\",\"command\":[\"sh\"],\"tty\":true}"

static char rundir_[64];

__attribute__((destructor)) static void remove_rundir(void) {
        if (rundir_[0])
                (void) rm_rf_at(AT_FDCWD, rundir_);
}

/* A Job as far as acceptance leaves it for the console: its spec (tty) and provider, its run directory. */
static int job_setup(Job *j) {
        char *run = NULL;
        int r;

        *j = (Job) JOB_NULL;
        if (!rundir_[0]) {
                strcpy(rundir_, "/tmp/test-job-console-XXXXXX");
                if (!mkdtemp(rundir_))
                        return -errno;
                setenv("POND_RUNDIR", rundir_, 1);
        }
        r = job_init(j, "console-test");
        if (r < 0)
                return r;
        r = job_spec_parse(SPEC, strlen(SPEC), &j->input.spec, NULL);
        if (r < 0)
                return r;
        j->input.provider = &runtime_runc;
        if (asprintf(&run, "%s/jobs/console-test", rundir_) < 0)
                return -ENOMEM;
        r = mkdir_p(run, 0700);
        free(run);
        return r;
}

/* What the runtime's create step does with --console-socket: connect, send fd (or nothing if < 0). */
static int runtime_sends(const char *path, int fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { (void *) "x", 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r = 0;

        strcpy(sa.sun_path, path);
        if (s < 0 || connect(s, (struct sockaddr *) &sa, sizeof sa) < 0)
                r = -errno;
        if (r == 0 && fd >= 0) {
                mh.msg_control = &control;
                mh.msg_controllen = sizeof control;
                CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
                CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
                CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &fd, sizeof fd);
                if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
                        r = -errno;
        }
        if (s >= 0)
                close(s); /* the create step exits */
        return r;
}

/* One hand-over: prepare, what the runtime does, receive. The job's failure reason in *ret_reason. */
static int hand_over(int fd, bool connect, char **ret_reason, bool *ret_master) {
        _cleanup_(job_done) Job j = JOB_NULL;
        struct stat st;
        int stdin_fd, r;

        r = job_setup(&j);
        if (r < 0)
                return r;
        r = job_console_prepare(&j, &stdin_fd);
        if (r < 0)
                return r;
        if (stdin_fd >= 0 || stat(j.paths.console_runtime, &st) < 0 || (st.st_mode & 07777) != 0600 ||
            !S_ISSOCK(st.st_mode))
                return -EBADE;
        if (connect && runtime_sends(j.paths.console_runtime, fd) < 0)
                return -EBADE;
        r = job_console_receive(&j);
        /* whatever happened, the socket is gone */
        if (access(j.paths.console_runtime, F_OK) == 0 || j.console.runtime_listen >= 0)
                return -EBADE;
        *ret_master = j.console.master >= 0 && isatty(j.console.master);
        *ret_reason = j.outcome.reason ? strdup(j.outcome.reason) : NULL;
        if (r < 0 && (!j.outcome.runtime_failed || j.console.master >= 0))
                return -EBADE;
        return r;
}

TEST(no_connection) {
        _cleanup_free_ char *reason = NULL;
        bool master = false;

        ASSERT_ERROR(ENOTCONN, hand_over(-1, false, &reason, &master));
        ASSERT_CONTAINS("no terminal arrived on its console socket", reason);
        ASSERT_FALSE(master);
}

TEST(connected_sent_nothing) {
        _cleanup_free_ char *reason = NULL;
        bool master = false;

        ASSERT_ERROR(EBADMSG, hand_over(-1, true, &reason, &master));
        ASSERT_CONTAINS("runtime failed (runc)", reason);
        ASSERT_FALSE(master);
}

TEST(not_a_terminal) {
        _cleanup_free_ char *reason = NULL;
        bool master = false;
        int p[2];

        ASSERT_OK(pipe2(p, O_CLOEXEC) < 0 ? -errno : 0);
        ASSERT_ERROR(ENOTTY, hand_over(p[0], true, &reason, &master));
        close(p[0]);
        close(p[1]);
        ASSERT_CONTAINS("no terminal arrived", reason);
        ASSERT_FALSE(master);
}

TEST(a_pty_master) {
        _cleanup_free_ char *reason = NULL;
        bool master = false;
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

        if (m < 0)
                TEST_SKIP("no pseudo-terminals here");
        ASSERT_OK(hand_over(m, true, &reason, &master));
        close(m);
        ASSERT_TRUE(master);
        ASSERT_TRUE(reason == NULL);
}
