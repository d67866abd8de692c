/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* files.c: pond-init's copy modes, `pondctl cp` inside the job (docs/job-spec.md, "Copying files"). The
 * supervisor asks the init for an exec of /dev/.pond-init --put or --get, which the init's fork runs itself
 * (serve.c), so the copy runs with the payload's posture (its uid, no capabilities, seccomp, Landlock,
 * namespaces, cgroup) and touches only what the payload could. The path is resolved beneath the root the
 * supervisor chose, never through a symbolic link nor across a mount (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, or a component walk refusing the same where the job's filter
 * answers openat2 with ENOSYS or EPERM): a link the payload planted leads nowhere. put writes a temporary
 * file beside the target and renames it over, so the target is the old file or the whole new one; get
 * reads a regular file of at most the maximum to stdout. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "console/names.h"
#include "files.h"

#define EXIT_FAILED 1

#ifndef RESOLVE_NO_XDEV
#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#endif

struct open_how_v0 {
        uint64_t flags, mode, resolve;
};

typedef struct FilesArgs {
        bool put;
        const char *path, *root;
        unsigned long long size;        /* put: the bytes that must arrive; get: the most it sends */
        unsigned mode;                  /* put: the file's permission bits */
} FilesArgs;

static int fail(const FilesArgs *a, const char *what, int err) {
        if (err)
                fprintf(stderr, "pond-init: %s: %s: %s\n", a->path, what, strerror(err));
        else
                fprintf(stderr, "pond-init: %s: %s\n", a->path, what);
        return EXIT_FAILED;
}

bool files_path_ok(const char *path, const char *root) {
        size_t n = strlen(root);

        if (path[0] != '/' || root[0] != '/' || strlen(path) >= PATH_MAX)
                return false;
        if (!path_normalized(path))
                return false;
        if (n == 1)
                return path[1] != 0;
        return strncmp(path, root, n) == 0 && path[n] == '/' && path[n + 1] != 0;
}

static int parse_ull(const char *s, unsigned long long max, int base, unsigned long long *ret) {
        char *end;
        unsigned long long v;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, base);
        if (errno || *end || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* --put PATH --beneath ROOT --size N --mode OCTAL | --get PATH --beneath ROOT --max N, in that order. */
static int parse(int argc, char **argv, FilesArgs *ret) {
        FilesArgs a = { .put = strcmp(argv[1], "--put") == 0 };
        unsigned long long mode = 0;

        if (argc != (a.put ? 9 : 7) || strcmp(argv[3], "--beneath") != 0 ||
            strcmp(argv[5], a.put ? "--size" : "--max") != 0 || (a.put && strcmp(argv[7], "--mode") != 0))
                return -EINVAL;
        a.path = argv[2];
        a.root = argv[4];
        if (parse_ull(argv[6], FILES_SIZE_MAX, 10, &a.size) < 0 ||
            (a.put && parse_ull(argv[8], 0777, 8, &mode) < 0) || !files_path_ok(a.path, a.root) ||
            !files_path_ok(a.root, "/"))
                return -EINVAL;
        a.mode = (unsigned) mode;
        *ret = a;
        return 0;
}

/* The directory rel names beneath rootfd ("" is rootfd itself), as an O_PATH fd. */
static int open_dir_beneath(int rootfd, char *rel) {
        struct open_how_v0 how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        struct stat root_st, st;
        int fd;

        fd = (int) syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof how);
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
                return fd < 0 ? -errno : fd;
        /* the walk: each component a directory, no link, on the root's file system */
        if (fstat(rootfd, &root_st) < 0)
                return -errno;
        fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
        for (char *c = rel, *e; fd >= 0 && *c; c = e) {
                int next;

                e = strchrnul(c, '/');
                if (*e)
                        *e++ = 0;
                next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0 || fstat(next, &st) < 0 || st.st_dev != root_st.st_dev) {
                        int r = next < 0 ? -errno : -EXDEV;

                        if (next >= 0)
                                close(next);
                        close(fd);
                        return r == -ENOTDIR ? -ELOOP : r;
                }
                close(fd);
                fd = next;
        }
        return fd < 0 ? -errno : fd;
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* stdin, exactly a->size bytes, into tfd. */
static int receive(const FilesArgs *a, int tfd) {
        static char buf[64 * 1024];
        unsigned long long got = 0;

        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
                int r;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return fail(a, "reading the bytes", errno);
                if (n == 0)
                        break;
                got += (unsigned long long) n;
                if (got > a->size)
                        return fail(a, "more bytes arrived than announced: not written", 0);
                r = write_all(tfd, buf, (size_t) n);
                if (r < 0)
                        return fail(a, "writing", -r);
        }
        if (got != a->size)
                return fail(a, "the bytes ended early (the caller went away?): not written", 0);
        return 0;
}

static int put(const FilesArgs *a, int dirfd, const char *name) {
        char tmp[32];
        uint64_t rnd;
        struct stat st;
        int tfd, r;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && !S_ISREG(st.st_mode))
                return fail(a, S_ISDIR(st.st_mode) ? "is a directory: cp copies regular files only" :
                               S_ISLNK(st.st_mode) ? "is a symbolic link: not replaced" :
                               "is not a regular file: not replaced", 0);
        if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
                return fail(a, "getrandom", errno);
        snprintf(tmp, sizeof tmp, ".pond-cp.%016llx", (unsigned long long) rnd);
        tfd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (tfd < 0)
                return fail(a, "creating a temporary file beside it", errno);
        r = receive(a, tfd);
        if (r == 0 && fchmod(tfd, a->mode) < 0)
                r = fail(a, "fchmod", errno);
        if (close(tfd) < 0 && r == 0)
                r = fail(a, "writing", errno);
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = fail(a, errno == EISDIR ? "became a directory: not replaced" : "renaming into place", errno);
        if (r != 0)
                (void) unlinkat(dirfd, tmp, 0);
        return r;
}

static int get(const FilesArgs *a, int dirfd, const char *name) {
        static char buf[64 * 1024];
        unsigned long long sent = 0;
        struct stat st;
        int fd, r;

        /* O_NONBLOCK: a fifo the payload planted does not hold the call (it is refused below) */
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return fail(a, errno == ELOOP ? "is a symbolic link: not followed" : "cannot open it",
                            errno == ELOOP ? 0 : errno);
        if (fstat(fd, &st) < 0)
                return fail(a, "fstat", errno);
        if (!S_ISREG(st.st_mode))
                return fail(a, S_ISDIR(st.st_mode) ? "is a directory: cp copies regular files only" :
                               "is not a regular file", 0);
        if ((unsigned long long) st.st_size > a->size) {
                fprintf(stderr, "pond-init: %s: %lld bytes, beyond the %llu a copy takes at most\n", a->path,
                        (long long) st.st_size, a->size);
                return EXIT_FAILED;
        }
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return fail(a, "reading", errno);
                if (n == 0)
                        return 0;
                sent += (unsigned long long) n;
                if (sent > a->size)
                        return fail(a, "grew beyond the most a copy takes while it was read", 0);
                r = write_all(STDOUT_FILENO, buf, (size_t) n);
                if (r < 0)
                        return fail(a, "sending", -r);
        }
}

bool files_self(char **argv) {
        return strcmp(argv[0], FILES_SELF) == 0 && argv[1] &&
               (strcmp(argv[1], "--put") == 0 || strcmp(argv[1], "--get") == 0);
}

bool files_wanted(int argc, char **argv) {
        return argc > 1 && (strcmp(argv[1], "--put") == 0 || strcmp(argv[1], "--get") == 0);
}

int files_main(int argc, char **argv) {
        char dir[PATH_MAX];
        const char *name, *below;
        FilesArgs a;
        int rootfd, dirfd, r;

        if (parse(argc, argv, &a) < 0) {
                fprintf(stderr, "pond-init: usage: --put PATH --beneath ROOT --size N --mode OCTAL | "
                                "--get PATH --beneath ROOT --max N (PATH absolute, normalized, below ROOT)\n");
                return EXIT_FAILED;
        }
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        rootfd = open(a.root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rootfd < 0)
                return fail(&a, "cannot open the writable root it is below", errno);
        /* below the root: the directory part (dir, "" for the root itself) and the last component */
        below = a.path + (strcmp(a.root, "/") == 0 ? 1 : strlen(a.root) + 1);
        name = strrchr(a.path, '/') + 1;
        snprintf(dir, sizeof dir, "%.*s", name > below ? (int) (name - below - 1) : 0, below);
        dirfd = open_dir_beneath(rootfd, dir);
        if (dirfd < 0) {
                close(rootfd);
                return fail(&a, dirfd == -ELOOP ? "its directory is reached through a symbolic link: refused" :
                                dirfd == -EXDEV ? "its directory is on another mount: refused" :
                                "cannot open its directory", dirfd == -ELOOP || dirfd == -EXDEV ? 0 : -dirfd);
        }
        r = a.put ? put(&a, dirfd, name) : get(&a, dirfd, name);
        close(dirfd);
        close(rootfd);
        return r;
}
