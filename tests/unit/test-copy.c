/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-copy.c: `pondctl cp`'s request on the console socket packed and unpacked (refusing what the supervisor
 * must not pass on), and the path rule the supervisor applies before the job's init is asked anything:
 * absolute, normalized, strictly below one of the job's writable directories. */
#include <string.h>

#include "basic/macro.h"
#include "console/copy.h"
#include "tests.h"

TEST_MAIN();

TEST(request_round_trip) {
        ConsoleCopyRequest put = { .put = true, .path = (char *) "/workspace/a b", .mode = 0755, .size = 12345 };
        ConsoleCopyRequest get = { .path = (char *) "/tmp/report.xml" };
        _cleanup_free_ char *packed = NULL, *packed2 = NULL;
        ConsoleCopyRequest back = {};
        const char *err = NULL;
        size_t len;

        ASSERT_OK(console_pack_copy(&put, &packed, &len));
        ASSERT_OK(console_unpack_copy(packed, len, &back, &err));
        ASSERT_TRUE(back.put);
        ASSERT_STREQ("/workspace/a b", back.path);
        ASSERT_EQ((uint32_t) 0755, back.mode);
        ASSERT_EQ((uint64_t) 12345, back.size);
        console_copy_request_done(&back);
        ASSERT_OK(console_pack_copy(&get, &packed2, &len));
        ASSERT_OK(console_unpack_copy(packed2, len, &back, &err));
        ASSERT_FALSE(back.put);
        ASSERT_STREQ("/tmp/report.xml", back.path);
        console_copy_request_done(&back);
}

static int unpack(const char *s, size_t len, const char **err) {
        ConsoleCopyRequest r = {};
        int k = console_unpack_copy(s, len, &r, err);

        console_copy_request_done(&r);
        return k;
}

TEST(request_refused) {
        ConsoleCopyRequest big = { .put = true, .path = (char *) "/tmp/x", .size = CONSOLE_COPY_MAX + 1 };
        const char *err = NULL;
        char *packed = NULL;
        size_t len;

        ASSERT_ERROR(E2BIG, console_pack_copy(&big, &packed, &len));
        ASSERT_ERROR(EBADMSG, unpack("", 0, &err));
        ASSERT_ERROR(EBADMSG, unpack("del\0path=/tmp/x", 16, &err));
        ASSERT_ERROR(EBADMSG, unpack("get\0path=tmp/x", 15, &err));
        ASSERT_CONTAINS("absolute", err);
        /* a get takes no mode or size; a put needs both */
        ASSERT_ERROR(EBADMSG, unpack("get\0path=/tmp/x\0mode=644\0size=1", 32, &err));
        ASSERT_ERROR(EBADMSG, unpack("put\0path=/tmp/x", 16, &err));
        ASSERT_ERROR(EBADMSG, unpack("put\0path=/tmp/x\0mode=4755\0size=1", 33, &err));
        ASSERT_CONTAINS("mode", err);
        ASSERT_ERROR(EBADMSG, unpack("put\0path=/tmp/x\0mode=9\0size=1", 30, &err));
        ASSERT_ERROR(EBADMSG, unpack("put\0path=/tmp/x\0mode=644\0size=-1", 33, &err));
        ASSERT_ERROR(E2BIG, unpack("put\0path=/tmp/x\0mode=644\0size=67108865", 39, &err));
        ASSERT_CONTAINS("64 MiB", err);
        ASSERT_OK(unpack("put\0path=/tmp/x\0mode=644\0size=67108864", 39, &err));
}

TEST(path_below_roots) {
        char *roots[] = { (char *) "/workspace", (char *) "/home/job", (char *) "/tmp", NULL };
        const char *root = NULL, *err = NULL;

        ASSERT_OK(copy_path_check("/workspace/x", roots, &root, &err));
        ASSERT_STREQ("/workspace", root);
        ASSERT_OK(copy_path_check("/home/job/.config/tool.json", roots, &root, &err));
        ASSERT_STREQ("/home/job", root);
        ASSERT_OK(copy_path_check("/tmp/a/b/c", roots, &root, &err));
        ASSERT_STREQ("/tmp", root);
        ASSERT_OK(copy_path_check("/workspace/..x/.y/...", roots, &root, &err));
}

TEST(path_refused) {
        char *roots[] = { (char *) "/workspace", (char *) "/tmp", NULL };
        char *no_workspace[] = { (char *) "/home/job", (char *) "/tmp", NULL };
        static const char *const bad[] = {
                "workspace/x", "", "/etc/passwd", "/workspace", "/workspace/", "/workspace/../etc/passwd",
                "/workspace/a/../../etc", "/workspace/./x", "/workspace//x", "/workspace/x/", "/workspace/..",
                "/workspacex/y", "/tmpx", "/tm", "/", "/tmp/.", "/home/job/x",
        };
        const char *root = NULL, *err = NULL;
        char long_path[CONSOLE_COPY_PATH_MAX + 8];

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                root = NULL;
                ASSERT_ERROR(EINVAL, copy_path_check(bad[i], roots, &root, &err));
                ASSERT_TRUE(root == NULL);
        }
        ASSERT_ERROR(EINVAL, copy_path_check("/workspace/../etc", roots, &root, &err));
        ASSERT_CONTAINS("normalized", err);
        ASSERT_ERROR(EINVAL, copy_path_check("/etc/passwd", roots, &root, &err));
        ASSERT_CONTAINS("writable", err);
        /* a read-only workspace is not a root */
        ASSERT_ERROR(EINVAL, copy_path_check("/workspace/x", no_workspace, &root, &err));
        memset(long_path, 'a', sizeof long_path - 1);
        memcpy(long_path, "/tmp/", 5);
        long_path[sizeof long_path - 1] = 0;
        ASSERT_ERROR(EINVAL, copy_path_check(long_path, roots, &root, &err));
        ASSERT_CONTAINS("long", err);
}
