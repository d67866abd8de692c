/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-cp.c: `pondctl cp [--mode MODE] LOCAL ID:PATH` and `pondctl cp ID:PATH LOCAL` (docs/job-spec.md, "Copying
 * files"): one regular file into or out of a running job over its console socket (copy.h). A put reads the
 * local file whole first (at most CONSOLE_COPY_MAX bytes), announces its size, waits for the supervisor's
 * go and sends it; a get writes a temporary file beside LOCAL and renames it over only once the job's side
 * said it sent all of it. "-" is stdin or stdout. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "console/console.h"
#include "console/copy.h"
#include "ctl-escape.h"
#include "ctl.h"

#define CP_USAGE "Usage: pondctl cp [--mode MODE] LOCAL|- ID:PATH\n       pondctl cp ID:PATH LOCAL|-"
/* What of the job's side's reason is kept to print. */
#define CP_REASON_MAX 4096

typedef struct CpArgs {
        bool put;
        char id[65];
        const char *path;       /* in the job */
        const char *local;      /* "-": stdin or stdout */
        long mode;              /* --mode, or -1: the local file's */
} CpArgs;

/* "ID:/PATH" -> id and path; anything else is a local path. */
static bool remote_split(const char *s, char id[static 65], const char **ret_path) {
        const char *colon = strchr(s, ':');

        if (!colon || colon == s || colon - s > 64 || colon[1] != '/')
                return false;
        memcpy(id, s, (size_t) (colon - s));
        id[colon - s] = 0;
        if (!job_id_is_valid(id))
                return false;
        *ret_path = colon + 1;
        return true;
}

static int cp_options(int argc, char *argv[], CpArgs *ret) {
        static const struct option options[] = { { "mode", required_argument, NULL, 'm' }, {} };
        CpArgs a = { .mode = -1 };
        char other[65];
        const char *p;
        char *end;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "+", options, NULL)) >= 0)
                switch (c) {
                case 'm':
                        errno = 0;
                        a.mode = strtol(optarg, &end, 8);
                        if (errno || *end || !*optarg || a.mode < 0 || a.mode > 0777)
                                return ctl_fail(CTL_EXIT_USAGE, "Invalid --mode '%s': octal permission bits, 0 to "
                                                "0777.", optarg);
                        break;
                default:
                        return ctl_fail(CTL_EXIT_USAGE, CP_USAGE);
                }
        if (argc - optind != 2)
                return ctl_fail(CTL_EXIT_USAGE, CP_USAGE);
        if (remote_split(argv[optind + 1], a.id, &a.path) && !remote_split(argv[optind], other, &p)) {
                a.put = true;
                a.local = argv[optind];
        } else if (remote_split(argv[optind], a.id, &a.path) && !remote_split(argv[optind + 1], other, &p))
                a.local = argv[optind + 1];
        else
                return ctl_fail(CTL_EXIT_USAGE, "pondctl cp: exactly one of the two must be ID:/PATH in a job.\n"
                                CP_USAGE);
        if (!a.put && a.mode >= 0)
                return ctl_fail(CTL_EXIT_USAGE, "pondctl cp: --mode is for a copy into a job.");
        *ret = a;
        return 0;
}

/* The local file, whole: a regular file (or stdin), at most CONSOLE_COPY_MAX bytes. */
static int put_read(const CpArgs *a, char **ret, size_t *ret_len, uint32_t *ret_mode) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st = { .st_mode = S_IFREG | 0644 };
        int r;

        if (!streq(a->local, "-")) {
                fd = open(a->local, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot open %s: %m", a->local);
                if (fstat(fd, &st) < 0)
                        return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot stat %s: %m", a->local);
                if (!S_ISREG(st.st_mode))
                        return ctl_fail(CTL_EXIT_USAGE, "%s is %s: pondctl cp copies regular files only.", a->local,
                                        S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
        }
        r = read_full_stream(fd >= 0 ? fd : STDIN_FILENO, CONSOLE_COPY_MAX, ret, ret_len);
        if (r == -EFBIG)
                return ctl_fail(CTL_EXIT_REFUSED, "%s is beyond the %llu bytes (64 MiB) a copy takes at most.",
                                a->local, (unsigned long long) CONSOLE_COPY_MAX);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot read %s: %m", a->local);
        *ret_mode = a->mode >= 0 ? (uint32_t) a->mode : (uint32_t) (st.st_mode & 0777);
        return 0;
}

/* One packet from the supervisor, NUL-terminated; 0 at the connection's end. */
static ssize_t recv_packet(int sock, char *buf, size_t size) {
        ssize_t n;

        do
                n = recv(sock, buf, size - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n > 0)
                buf[n] = 0;
        return n < 0 ? -errno : n;
}

/* The copy's answer: a get's bytes to out as they come, the reason of a failure kept, then its status: the
 * verb's exit status. */
static int cp_relay(int sock, const CpArgs *a, int out) {
        char buf[CONSOLE_PACKET_MAX + 1], reason[CP_REASON_MAX] = "";
        size_t reason_len = 0;

        for (;;) {
                ssize_t n = recv_packet(sock, buf, sizeof buf);
                int32_t status;

                if (n <= 0)
                        return ctl_fail(CTL_EXIT_FAILED, "Job %s ended during the copy: %s not copied.", a->id,
                                        a->path);
                switch (buf[0]) {
                case CONSOLE_STDOUT:
                        if (!a->put && write_all(out, buf + 1, (size_t) n - 1) < 0)
                                return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot write %s: %m", a->local);
                        break;
                case CONSOLE_STDERR:
                        if (reason_len + (size_t) n - 1 < sizeof reason) {
                                memcpy(reason + reason_len, buf + 1, (size_t) n - 1);
                                reason_len += (size_t) n - 1;
                                reason[reason_len] = 0;
                        }
                        break;
                case CONSOLE_EXIT:
                        if (n - 1 < (ssize_t) sizeof status)
                                return CTL_EXIT_FAILED;
                        memcpy(&status, buf + 1, sizeof status);
                        if (status == 0)
                                return CTL_EXIT_OK;
                        while (reason_len > 0 && reason[reason_len - 1] == '\n')
                                reason[--reason_len] = 0;
                        return ctl_fail_untrusted(CTL_EXIT_ERROR, "Copy %s %s:%s failed: %s", a->put ? "into" : "from",
                                                  a->id, a->path, reason_len ? reason : "no reason given");
                case CONSOLE_ERROR:
                        return ctl_fail_untrusted(CTL_EXIT_REFUSED, "Copy refused: %s", buf + 1);
                default:
                        break;
                }
        }
}

/* A put: the go (or a refusal), the bytes, their end; then the answer. */
static int cp_put(int sock, const CpArgs *a, const char *data, size_t len) {
        char buf[CONSOLE_PACKET_MAX + 1];
        ssize_t n = recv_packet(sock, buf, sizeof buf);
        int r = 0;

        if (n > 0 && buf[0] == CONSOLE_ERROR)
                return ctl_fail_untrusted(CTL_EXIT_REFUSED, "Copy refused: %s", buf + 1);
        if (n != 2 || buf[0] != CONSOLE_MODE || buf[1] != 'p')
                return ctl_fail(CTL_EXIT_FAILED, "Job %s did not take the copy.", a->id);
        for (size_t off = 0; r >= 0 && off < len; off += CONSOLE_DATA_MAX)
                r = console_send(sock, CONSOLE_INPUT, data + off, MIN((size_t) CONSOLE_DATA_MAX, len - off), false);
        if (r >= 0)
                r = console_send(sock, CONSOLE_EOF, NULL, 0, false);
        if (r < 0 && r != -EPIPE && r != -ECONNRESET)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot send %s to job %s: %m", a->local, a->id);
        /* a copy that failed early has said why before the connection went */
        return cp_relay(sock, a, -EBADF);
}

/* A get into LOCAL: a temporary file beside it, renamed over on success, removed otherwise. */
static int cp_get_file(int sock, const CpArgs *a) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        mode_t mask;
        int r;

        if (stat(a->local, &st) >= 0 && S_ISDIR(st.st_mode))
                return ctl_fail(CTL_EXIT_USAGE, "%s is a directory: pondctl cp writes a file, name it.", a->local);
        if (asprintf(&tmp, "%s.pond-cp-XXXXXX", a->local) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot create %s: %m", tmp);
        mask = umask(0);
        umask(mask);
        r = cp_relay(sock, a, fd);
        if (r == CTL_EXIT_OK && (fchmod(fd, 0666 & ~mask) < 0 || close(TAKE_FD(fd)) < 0 || rename(tmp, a->local) < 0))
                r = ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot write %s: %m", a->local);
        if (r != CTL_EXIT_OK)
                (void) unlink(tmp);
        return r;
}

int ctl_verb_cp(int argc, char *argv[]) {
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *packed = NULL, *data = NULL;
        _cleanup_close_ int sock = -EBADF;
        ConsoleCopyRequest req = {};
        size_t len, data_len = 0;
        CpArgs a;
        int r;

        r = cp_options(argc, argv, &a);
        if (r != 0)
                return r;
        if (job_paths_init(&paths, a.id) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        if (!ctl_job_known(&paths, a.id))
                return ctl_fail(CTL_EXIT_NOT_FOUND, "No job %s.", a.id);
        if (a.put) {
                r = put_read(&a, &data, &data_len, &req.mode);
                if (r != 0)
                        return r;
        }
        req.put = a.put;
        req.path = (char *) a.path;
        req.size = data_len;
        r = console_pack_copy(&req, &packed, &len);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_USAGE, r, "The path %s is too long: %m", a.path);
        r = console_connect(paths.console, &sock);
        if (r == -ENOENT || r == -ECONNREFUSED)
                return ctl_fail(CTL_EXIT_REFUSED, "Job %s is not running: cp refused.", a.id);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot connect to the console of job %s: %m", a.id);
        (void) signal(SIGPIPE, SIG_IGN);
        r = console_send(sock, CONSOLE_COPY, packed, len, false);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot ask job %s for the copy: %m", a.id);
        if (a.put)
                return cp_put(sock, &a, data, data_len);
        if (streq(a.local, "-"))
                return cp_relay(sock, &a, STDOUT_FILENO);
        return cp_get_file(sock, &a);
}
