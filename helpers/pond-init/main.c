/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* main.c: pond-init, the first process of every confined job: makes itself non-dumpable (the payload, the
 * same uid, cannot read its fds or memory), applies the Landlock ruleset pond decided (ruleset.c) at exactly
 * the ABI pond recorded where the profile has one, keeps nothing open but stdio and the supervisor's exec
 * channel, and then serves (serve.c: the payload as its child, execs beside it); without a channel it execs
 * the payload itself. Run as an exec with --put or --get, it copies one file in or out (files.c). Static, no
 * pond library: it runs inside the job, bound read-only at /dev/.pond-init.
 * Any failure is the payload not starting: a line on stderr and exit status 126 (127: command not found). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "landlock-uapi.h"
#include "ruleset.h"
#include "serve.h"

#define EXIT_REFUSED 126
#define EXIT_NOT_FOUND 127

static int fail(const char *what, int err) {
        if (err)
                fprintf(stderr, "pond-init: %s: %s\n", what, strerror(err));
        else
                fprintf(stderr, "pond-init: %s\n", what);
        return EXIT_REFUSED;
}

/* Paths absent from this image are skipped: what does not exist can neither be written nor executed. */
static int add_path_rule(int ruleset_fd, const Rule *rule, unsigned abi) {
        struct ll_path_beneath_attr pb = {};
        struct stat st;
        int fd, r = 0;

        fd = open(rule->path, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        pb.allowed_access = ruleset_rule_access(rule->kind, abi, S_ISDIR(st.st_mode));
        pb.parent_fd = fd;
        if (pb.allowed_access != 0 && syscall(SYS_landlock_add_rule, ruleset_fd, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
                r = -errno;
out:
        close(fd);
        return r;
}

static int apply(const Ruleset *rs) {
        struct ll_ruleset_attr attr = {
                .handled_access_fs = ruleset_handled_fs(rs->abi),
                .handled_access_net = rs->connect_any ? 0 : ruleset_handled_net(rs->abi),
                .scoped = ruleset_scoped(rs->abi),
        };
        /* the struct as this ABI knows it: an older kernel refuses fields it does not have (E2BIG) */
        size_t size = rs->abi >= 6 ? sizeof attr : rs->abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
        long kernel_abi;
        int fd, r;

        kernel_abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
        if (kernel_abi < 0)
                return fail("Landlock is not available here", errno);
        if (kernel_abi < (long) rs->abi) {
                fprintf(stderr, "pond-init: the kernel has Landlock ABI %ld, the job was decided at ABI %u\n",
                        kernel_abi, rs->abi);
                return EXIT_REFUSED;
        }
        fd = (int) syscall(SYS_landlock_create_ruleset, &attr, size, 0);
        if (fd < 0)
                return fail("landlock_create_ruleset", errno);
        for (unsigned i = 0; i < rs->n_rules; i++) {
                r = add_path_rule(fd, &rs->rules[i], rs->abi);
                if (r < 0) {
                        fprintf(stderr, "pond-init: landlock rule for %s: %s\n", rs->rules[i].path, strerror(-r));
                        return EXIT_REFUSED;
                }
        }
        for (unsigned i = 0; attr.handled_access_net && i < rs->n_ports; i++) {
                struct ll_net_port_attr np = { .allowed_access = LL_NET_CONNECT_TCP, .port = rs->ports[i] };

                if (syscall(SYS_landlock_add_rule, fd, LL_RULE_NET_PORT, &np, 0) < 0)
                        return fail("landlock rule for a port", errno);
        }
        /* the runtime set it already (noNewPrivileges); Landlock refuses to restrict without it */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return fail("PR_SET_NO_NEW_PRIVS", errno);
        if (syscall(SYS_landlock_restrict_self, fd, 0) < 0)
                return fail("landlock_restrict_self", errno);
        close(fd);
        return 0;
}

/* The channel at a descriptor above stdio, close-on-exec; a channel passed as stdin (runsc passes the
 * init nothing else) leaves /dev/null in its place for the payload. Everything else the runtime left open
 * is closed. */
static int channel_setup(int fd, int *ret) {
        int c, null;

        if (fcntl(fd, F_GETFD) < 0)
                return fail("--channel: not an open descriptor", errno);
        c = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (c < 0)
                return fail("--channel", errno);
        if (fd <= 2) {
                null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, fd) < 0)
                        return fail("/dev/null", errno);
                close(null);
        } else
                close(fd);
        if ((c > 3 && syscall(SYS_close_range, 3U, (unsigned) c - 1, 0U) < 0) ||
            syscall(SYS_close_range, (unsigned) c + 1, (unsigned) INT_MAX, 0U) < 0)
                return fail("close_range", errno);
        *ret = c;
        return 0;
}

int main(int argc, char **argv) {
        const char *err = NULL;
        Ruleset rs;
        int r, channel = -1;

        /* a copy the supervisor asked for, forked by the job's init like any exec (files.c) */
        if (files_wanted(argc, argv))
                return files_main(argc, argv);
        if (ruleset_parse(argc, argv, &rs, &err) < 0)
                return fail(err, 0);
        /* before anything else: /proc/1/fd, mem and environ are then root's (of the job's user namespace) and
         * ptrace_may_access() refuses the payload, which has no CAP_SYS_PTRACE */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return fail("PR_SET_DUMPABLE", errno);
        if (rs.abi > 0) {
                r = apply(&rs);
                if (r != 0)
                        return r;
        }
        if (rs.channel >= 0) {
                r = channel_setup(rs.channel, &channel);
                if (r != 0)
                        return r;
                return serve(rs.argv, channel);
        }
        /* nothing the runtime left open reaches the payload: only stdin, stdout and stderr */
        if (syscall(SYS_close_range, 3U, (unsigned) INT_MAX, 0U) < 0)
                return fail("close_range", errno);
        execvp(rs.argv[0], rs.argv);
        r = errno;
        fprintf(stderr, "pond-init: cannot execute %s: %s\n", rs.argv[0], strerror(r));
        return r == ENOENT ? EXIT_NOT_FOUND : EXIT_REFUSED;
}
