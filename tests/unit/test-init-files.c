/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-init-files.c: pond-init's copy modes (helpers/pond-init/files.c), the binary run as the job's init
 * runs it for `pondctl cp`, in a scratch directory standing for a writable root: a put lands whole with its
 * mode and leaves no temporary file, also when it fails (bytes short or beyond the announced size); a get
 * gives the bytes back; neither follows a symbolic link the payload could plant (at the end or in between),
 * nor touches a directory, a fifo or a file beyond the maximum (controls: the same paths without the link
 * work). The same through pond-init serving a channel, as the job's init does: a put's stdin streamed in
 * INIT_STDIN frames (each taken before the next), one ended short leaving nothing, a get's bytes back as
 * INIT_STDOUT. And the path rule pond-init applies to its own command line. */
#include <dirent.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "console/init-proto.h"
#include "files.h"
#include "policy/landlock.h"
#include "tests.h"

TEST_MAIN();

/* The child answers openat2 with ENOSYS, as a job's filter may: pond-init walks the path instead. */
static bool no_openat2;

static char root[] = "/tmp/test-init-files.XXXXXX", outside[] = "/tmp/test-init-files-out.XXXXXX";

/* pond-init with args, stdin from in[0..in_len), stdout into *out (the file's bytes); returns its status. */
static int run(const char *const *args, const char *in, size_t in_len, char **out, size_t *out_len) {
        char in_path[] = "/tmp/test-init-files-in.XXXXXX", out_path[] = "/tmp/test-init-files-stdout.XXXXXX";
        int ifd = mkstemp(in_path), ofd = mkstemp(out_path), st;
        const char *argv[16] = { getenv("POND_INIT") };
        pid_t pid;

        for (size_t i = 0; args[i] && i < 14; i++)
                argv[i + 1] = args[i];
        if (ifd < 0 || ofd < 0 || write(ifd, in, in_len) != (ssize_t) in_len || lseek(ifd, 0, SEEK_SET) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                scmp_filter_ctx ctx = no_openat2 ? seccomp_init(SCMP_ACT_ALLOW) : NULL;

                if (no_openat2 && (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0) < 0 ||
                                   prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0))
                        _exit(99);
                dup2(ifd, 0);
                dup2(ofd, 1);
                execv(argv[0], (char **) argv);
                _exit(127);
        }
        waitpid(pid, &st, 0);
        close(ifd);
        close(ofd);
        unlink(in_path);
        if (out)
                (void) read_full_file(out_path, 1 << 20, out, out_len);
        unlink(out_path);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int put(const char *path, const char *data, size_t len, const char *size) {
        const char *args[] = { "--put", path, "--beneath", root, "--size", size, "--mode", "0640", NULL };
        return run(args, data, len, NULL, NULL);
}

static int get(const char *path, const char *max, char **out, size_t *out_len) {
        const char *args[] = { "--get", path, "--beneath", root, "--max", max, NULL };
        return run(args, "", 0, out, out_len);
}

/* Entries of dir whose name starts with ".pond-cp." (a temporary file left behind). */
static int leftovers(const char *dir) {
        DIR *d = opendir(dir);
        int n = 0;

        for (struct dirent *e; d && (e = readdir(d)); )
                n += strncmp(e->d_name, ".pond-cp.", 9) == 0;
        if (d)
                closedir(d);
        return n;
}

static char *at(const char *dir, const char *name) {
        static char buf[4][512];
        static int k;

        k = (k + 1) % 4;
        snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
        return buf[k];
}

static void setup(void) {
        int fd;

        if (!mkdtemp(root) || !mkdtemp(outside))
                abort();
        if (mkdir(at(root, "sub"), 0755) < 0 || mkdir(at(root, "dir"), 0755) < 0 ||
            symlink(at(outside, "secret"), at(root, "link")) < 0 || symlink(outside, at(root, "linkdir")) < 0 ||
            mkfifo(at(root, "fifo"), 0644) < 0)
                abort();
        fd = open(at(outside, "secret"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, "secret\n", 7) != 7 || close(fd) < 0)
                abort();
}

static void cleanup(void) {
        char cmd[256];

        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", root, outside);
        (void) system(cmd);
}

#define NEED_INIT()                                                                             \
        do {                                                                                    \
                if (!getenv("POND_INIT"))                                                       \
                        TEST_SKIP("POND_INIT is not set (meson sets it)");                      \
                setup();                                                                        \
                atexit(cleanup);                                                                \
        } while (0)

TEST(put_and_get) {
        _cleanup_free_ char *back = NULL, *file = NULL;
        struct stat st;
        size_t len;

        NEED_INIT();
        ASSERT_EQ(0, put(at(root, "sub/x"), "hello\n", 6, "6"));
        ASSERT_OK(read_full_file(at(root, "sub/x"), 100, &file, &len));
        ASSERT_STREQ("hello\n", file);
        ASSERT_OK(stat(at(root, "sub/x"), &st));
        ASSERT_EQ((mode_t) 0640, st.st_mode & 07777);
        ASSERT_EQ(0, leftovers(at(root, "sub")));
        /* replaced whole */
        ASSERT_EQ(0, put(at(root, "sub/x"), "bye\n", 4, "4"));
        ASSERT_EQ(0, get(at(root, "sub/x"), "100", &back, &len));
        ASSERT_EQ((size_t) 4, len);
        ASSERT_STREQ("bye\n", back);
        /* directly below the root, and empty */
        ASSERT_EQ(0, put(at(root, "empty"), "", 0, "0"));
        ASSERT_OK(stat(at(root, "empty"), &st));
        ASSERT_EQ((off_t) 0, st.st_size);
}

TEST(put_incomplete_leaves_nothing) {
        struct stat st;

        NEED_INIT();
        ASSERT_EQ(1, put(at(root, "short"), "abc", 3, "10"));
        ASSERT_ERROR(ENOENT, stat(at(root, "short"), &st) < 0 ? -errno : 0);
        ASSERT_EQ(1, put(at(root, "long"), "abcdef", 6, "3"));
        ASSERT_ERROR(ENOENT, stat(at(root, "long"), &st) < 0 ? -errno : 0);
        ASSERT_EQ(0, leftovers(root));
        /* an existing file stays as it was */
        ASSERT_EQ(0, put(at(root, "keep"), "old", 3, "3"));
        ASSERT_EQ(1, put(at(root, "keep"), "new", 3, "4"));
        ASSERT_OK(stat(at(root, "keep"), &st));
        ASSERT_EQ((off_t) 3, st.st_size);
        ASSERT_EQ(0, leftovers(root));
}

TEST(put_refuses_links_and_non_files) {
        _cleanup_free_ char *secret = NULL;
        struct stat st;
        size_t len;

        NEED_INIT();
        ASSERT_EQ(1, put(at(root, "link"), "pwned\n", 6, "6"));
        ASSERT_EQ(1, put(at(root, "linkdir/secret"), "pwned\n", 6, "6"));
        ASSERT_EQ(1, put(at(root, "linkdir/new"), "pwned\n", 6, "6"));
        ASSERT_OK(read_full_file(at(outside, "secret"), 100, &secret, &len));
        ASSERT_STREQ("secret\n", secret);
        ASSERT_ERROR(ENOENT, stat(at(outside, "new"), &st) < 0 ? -errno : 0);
        ASSERT_OK(lstat(at(root, "link"), &st));
        ASSERT_TRUE(S_ISLNK(st.st_mode));
        ASSERT_EQ(1, put(at(root, "dir"), "x", 1, "1"));
        ASSERT_EQ(1, put(at(root, "fifo"), "x", 1, "1"));
        ASSERT_EQ(1, put(at(root, "nodir/x"), "x", 1, "1"));
        ASSERT_EQ(0, leftovers(root));
        /* pond-init's own path rule: outside its root, not normalized */
        ASSERT_EQ(1, put(at(outside, "x"), "x", 1, "1"));
        ASSERT_EQ(1, put(at(root, "sub/../x"), "x", 1, "1"));
        ASSERT_EQ(1, put(at(root, "sub/x"), "x", 1, "67108865"));
        /* control: the same bytes to a plain path */
        ASSERT_EQ(0, put(at(root, "sub/plain"), "pwned\n", 6, "6"));
}

TEST(get_refuses_links_and_non_files) {
        _cleanup_free_ char *out = NULL, *out2 = NULL;
        size_t len;

        NEED_INIT();
        ASSERT_EQ(1, get(at(root, "link"), "100", &out, &len));
        ASSERT_EQ((size_t) 0, len);
        free(out);
        out = NULL;
        ASSERT_EQ(1, get(at(root, "linkdir/secret"), "100", &out, &len));
        ASSERT_EQ((size_t) 0, len);
        ASSERT_EQ(1, get(at(root, "dir"), "100", NULL, NULL));
        ASSERT_EQ(1, get(at(root, "fifo"), "100", NULL, NULL)); /* and it does not hang */
        ASSERT_EQ(1, get(at(root, "missing"), "100", NULL, NULL));
        ASSERT_EQ(0, put(at(root, "big"), "0123456789", 10, "10"));
        ASSERT_EQ(1, get(at(root, "big"), "9", NULL, NULL));
        ASSERT_EQ(0, get(at(root, "big"), "10", &out2, &len));
        ASSERT_EQ((size_t) 10, len);
}

TEST(walk_without_openat2) {
        _cleanup_free_ char *out = NULL, *secret = NULL;
        struct stat st;
        size_t len;

        NEED_INIT();
        no_openat2 = true;
        ASSERT_EQ(1, put(at(root, "linkdir/secret"), "pwned\n", 6, "6"));
        ASSERT_EQ(1, put(at(root, "linkdir/new"), "pwned\n", 6, "6"));
        ASSERT_EQ(1, get(at(root, "linkdir/secret"), "100", NULL, NULL));
        ASSERT_EQ(1, put(at(root, "link"), "pwned\n", 6, "6"));
        ASSERT_OK(read_full_file(at(outside, "secret"), 100, &secret, &len));
        ASSERT_STREQ("secret\n", secret);
        ASSERT_ERROR(ENOENT, stat(at(outside, "new"), &st) < 0 ? -errno : 0);
        /* controls: through real directories it works */
        ASSERT_EQ(0, put(at(root, "sub/walked"), "walked\n", 7, "7"));
        ASSERT_EQ(0, get(at(root, "sub/walked"), "100", &out, &len));
        ASSERT_STREQ("walked\n", out);
        ASSERT_EQ(0, leftovers(at(root, "sub")));
}

static int frame_send(int fd, unsigned slot, int type, const void *a, size_t alen, const void *b, size_t blen) {
        InitFrame h = { .len = (uint32_t) (alen + blen), .slot = (uint16_t) slot, .type = (uint8_t) type };

        if (write_all(fd, &h, sizeof h) < 0 || (alen && write_all(fd, a, alen) < 0) ||
            (blen && write_all(fd, b, blen) < 0))
                return -EIO;
        return 0;
}

/* The next frame from the init (its bytes in buf, at most INIT_CHUNK_MAX). */
static int frame_recv(int fd, InitFrame *h, char *buf) {
        if (loop_read(fd, h, sizeof *h) != (ssize_t) sizeof *h || h->len > INIT_CHUNK_MAX ||
            (h->len && loop_read(fd, buf, h->len) != (ssize_t) h->len))
                return -EIO;
        return 0;
}

/* An exec of argv (with a streamed stdin when stream) on slot 0. */
static int exec_send(int fd, const char *const *argv, bool stream) {
        InitExecHeader h = { .output_max = 1 << 20, .flags = stream ? INIT_EXEC_STDIN_STREAM : 0 };
        char strings[4096] = "/";
        size_t len = 2;

        for (const char *const *a = argv; *a; a++, h.n_argv++)
                len += (size_t) snprintf(strings + len, sizeof strings - len, "%s", *a) + 1;
        return frame_send(fd, 0, INIT_EXEC, &h, sizeof h, strings, len);
}

/* Frames until slot 0's INIT_EXIT (every INIT_STDOUT acknowledged and kept in out); its status. */
static int exec_wait(int fd, char *out, size_t *out_len) {
        static char buf[INIT_CHUNK_MAX];
        InitFrame h;
        InitExit x;

        for (;;) {
                if (frame_recv(fd, &h, buf) < 0)
                        return -EIO;
                if (h.type == INIT_STDOUT && out) {
                        memcpy(out + *out_len, buf, h.len);
                        *out_len += h.len;
                }
                if ((h.type == INIT_STDOUT || h.type == INIT_STDERR) &&
                    frame_send(fd, 0, INIT_ACK, NULL, 0, NULL, 0) < 0)
                        return -EIO;
                if (h.type == INIT_EXIT) {
                        memcpy(&x, buf, sizeof x);
                        return x.status;
                }
        }
}

/* A put of data (size announced) streamed in chunks of 40000 bytes, each taken before the next. */
static int put_streamed(int fd, const char *path, const char *data, size_t len, const char *size) {
        const char *argv[] = { FILES_SELF, "--put", path, "--beneath", root, "--size", size, "--mode", "0600", NULL };
        static char buf[INIT_CHUNK_MAX];
        InitFrame h;

        if (exec_send(fd, argv, true) < 0)
                return -EIO;
        for (size_t off = 0; off < len; off += 40000) {
                if (frame_send(fd, 0, INIT_STDIN, data + off, MIN((size_t) 40000, len - off), NULL, 0) < 0)
                        return -EIO;
                do
                        if (frame_recv(fd, &h, buf) < 0)
                                return -EIO;
                while (h.type != INIT_STDIN_TAKEN);
        }
        if (frame_send(fd, 0, INIT_STDIN, NULL, 0, NULL, 0) < 0)
                return -EIO;
        return exec_wait(fd, NULL, NULL);
}

TEST(through_the_channel) {
        static char data[100000], back[200000];
        const char *get_argv[] = { FILES_SELF, "--get", NULL, "--beneath", root, "--max", "100000", NULL };
        _cleanup_free_ char *file = NULL;
        const char *init = getenv("POND_INIT");
        int sv[2], st;
        size_t len = 0;
        struct stat sb;
        pid_t pid;

        NEED_INIT();
        for (size_t i = 0; i < sizeof data; i++)
                data[i] = (char) (i * 7 + i / 251);
        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ? -errno : 0);
        pid = fork();
        if (pid == 0) {
                if (dup2(sv[1], 3) < 0)
                        _exit(99);
                execl(init, init, "--channel", "3", "--", "sleep", "30", (char *) NULL);
                _exit(127);
        }
        close(sv[1]);
        ASSERT_EQ(0, put_streamed(sv[0], at(root, "sub/streamed"), data, sizeof data, "100000"));
        ASSERT_OK(read_full_file(at(root, "sub/streamed"), sizeof back, &file, &len));
        ASSERT_EQ(sizeof data, len);
        ASSERT_TRUE(memcmp(data, file, len) == 0);
        /* ended short (its caller went away): nothing is left */
        ASSERT_EQ(1, put_streamed(sv[0], at(root, "sub/short"), data, 50000, "100000"));
        ASSERT_ERROR(ENOENT, stat(at(root, "sub/short"), &sb) < 0 ? -errno : 0);
        ASSERT_EQ(0, leftovers(at(root, "sub")));
        /* the bytes back, in acknowledged chunks */
        get_argv[2] = at(root, "sub/streamed");
        len = 0;
        ASSERT_OK(exec_send(sv[0], get_argv, false));
        ASSERT_EQ(0, exec_wait(sv[0], back, &len));
        ASSERT_EQ(sizeof data, len);
        ASSERT_TRUE(memcmp(data, back, len) == 0);
        kill(pid, SIGTERM);
        waitpid(pid, &st, 0);
        close(sv[0]);
}

TEST(path_rule) {
        /* the supervisor names pond-init by the path it binds it at */
        ASSERT_STREQ(LANDLOCK_INIT_PATH, FILES_SELF);
        ASSERT_TRUE(files_path_ok("/workspace/x", "/workspace"));
        ASSERT_TRUE(files_path_ok("/workspace/a/b", "/workspace"));
        ASSERT_TRUE(files_path_ok("/workspace", "/"));
        ASSERT_FALSE(files_path_ok("/workspace", "/workspace"));
        ASSERT_FALSE(files_path_ok("/workspace/", "/workspace"));
        ASSERT_FALSE(files_path_ok("/workspacex", "/workspace"));
        ASSERT_FALSE(files_path_ok("/workspace/../etc", "/workspace"));
        ASSERT_FALSE(files_path_ok("/workspace/./x", "/workspace"));
        ASSERT_FALSE(files_path_ok("/workspace//x", "/workspace"));
        ASSERT_FALSE(files_path_ok("workspace/x", "/workspace"));
        ASSERT_FALSE(files_path_ok("/etc/passwd", "/tmp"));
        ASSERT_FALSE(files_path_ok("/", "/"));
}
