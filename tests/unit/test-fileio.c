/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fileio.c: whole reads of an fd: read_full_fd() takes regular files only, read_full_stream() any fd
 * (a pipe as pondctl's stdin is); both stop at max bytes and NUL-terminate what they return. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "tests.h"

TEST_MAIN();

/* A pipe with text written into it and its writing end closed: what a reader sees of `echo text |`. */
static int pipe_with(const char *text, size_t len, int *ret) {
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        if (write_all(p[1], text, len) < 0) {
                close(p[0]);
                close(p[1]);
                return -EIO;
        }
        close(p[1]);
        *ret = p[0];
        return 0;
}

TEST(stream_reads_a_pipe_whole) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;

        ASSERT_OK(pipe_with("a spec\n", 7, &fd));
        ASSERT_OK(read_full_stream(fd, 7, &buf, &len));
        EXPECT_EQ(7, len);
        EXPECT_STREQ("a spec\n", buf);
}

TEST(stream_empty) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len = 1;

        ASSERT_OK(pipe_with("", 0, &fd));
        ASSERT_OK(read_full_stream(fd, 16, &buf, &len));
        EXPECT_EQ(0, len);
        EXPECT_STREQ("", buf);
}

/* One byte past max is refused, and nothing is returned. */
TEST(stream_bounded) {
        _cleanup_close_ int fd = -EBADF;
        char *buf = NULL;

        ASSERT_OK(pipe_with("12345678", 8, &fd));
        EXPECT_ERROR(EFBIG, read_full_stream(fd, 7, &buf, NULL));
        EXPECT_TRUE(buf == NULL);
}

/* More than one buffer's worth: the buffer grows, still bounded by max. */
TEST(stream_large) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL, *text = NULL;
        size_t len = 0, n = 60000; /* below a pipe's 64 KiB, so that the write does not block */
        int p[2];

        ASSERT_TRUE((text = malloc(n)) != NULL);
        memset(text, 'x', n);
        ASSERT_OK(pipe2(p, O_CLOEXEC));
        fd = p[0];
        ASSERT_OK(write_all(p[1], text, n));
        close(p[1]);
        ASSERT_OK(read_full_stream(fd, n, &buf, &len));
        EXPECT_EQ(n, len);
        EXPECT_EQ(n, strspn(buf, "x"));
        EXPECT_EQ(0, buf[n]);
}

/* A regular file reads the same way from its offset; read_full_fd() refuses anything else. */
TEST(fd_regular_only) {
        char path[] = "/tmp/pond-test-fileio.XXXXXX";
        _cleanup_close_ int fd = -EBADF, pfd = -EBADF;
        _cleanup_free_ char *a = NULL, *b = NULL;
        char *c = NULL;

        fd = mkostemp(path, O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        (void) unlink(path);
        ASSERT_OK(write_all(fd, "hello", 5));
        ASSERT_OK(lseek(fd, 0, SEEK_SET));
        ASSERT_OK(read_full_fd(fd, 5, &a, NULL));
        EXPECT_STREQ("hello", a);
        ASSERT_OK(lseek(fd, 1, SEEK_SET));
        ASSERT_OK(read_full_stream(fd, 5, &b, NULL));
        EXPECT_STREQ("ello", b);

        ASSERT_OK(pipe_with("x", 1, &pfd));
        EXPECT_ERROR(EBADFD, read_full_fd(pfd, 5, &c, NULL));
        EXPECT_TRUE(c == NULL);
}
