/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-output: the job log keeps chunks in order with their sequence, stops at the cap and records what
 * it dropped, and its hashes cover exactly the kept bytes. */
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "hash/hash.h"
#include "result/output.h"
#include "tests.h"

TEST(chunks_cap_and_stats) {
        char dir[] = "/tmp/pond-test-output.XXXXXX";
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *out = NULL, *err = NULL, *index = NULL;
        _cleanup_json_ json_object *stats = NULL;
        char hex[SHA256_HEX_SIZE];
        OutputLog l;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        ASSERT_OK(output_log_open(dfd, "job-1", 10, false, &l));
        ASSERT_OK(output_log_append(&l, OUTPUT_STDOUT, "hello ", 6));
        ASSERT_OK(output_log_append(&l, OUTPUT_STDERR, "oops", 4));
        ASSERT_OK(output_log_append(&l, OUTPUT_STDOUT, "world", 5)); /* over the cap: nothing kept */
        ASSERT_OK(output_log_stats(&l, &stats));
        output_log_close(&l);

        ASSERT_OK(read_full_file_at(dfd, "stdout", 1024, &out, NULL));
        ASSERT_OK(read_full_file_at(dfd, "stderr", 1024, &err, NULL));
        ASSERT_OK(read_full_file_at(dfd, "index", 1024, &index, NULL));
        ASSERT_STREQ("hello ", out);
        ASSERT_STREQ("oops", err);
        ASSERT_TRUE(strncmp(index, "1 stdout 0 6 ", 13) == 0);
        ASSERT_CONTAINS("\n2 stderr 0 4 ", index);
        ASSERT_TRUE(strstr(index, "\n3 ") == NULL);
        ASSERT_EQ(11, json_object_get_int64(json_get(stats, "stdout_bytes")));
        ASSERT_EQ(4, json_object_get_int64(json_get(stats, "stderr_bytes")));
        ASSERT_EQ(10, json_object_get_int64(json_get(stats, "kept_bytes")));
        ASSERT_EQ(5, json_object_get_int64(json_get(stats, "dropped_bytes")));
        ASSERT_TRUE(json_object_get_boolean(json_get(stats, "truncated")));
        ASSERT_EQ(2, json_object_get_int64(json_get(stats, "chunks")));
        sha256_hex("hello ", 6, hex);
        ASSERT_STREQ(hex, json_object_get_string(json_get(stats, "stdout_sha256")));
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

TEST(partial_chunk_at_the_cap) {
        char dir[] = "/tmp/pond-test-output.XXXXXX";
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *out = NULL;
        _cleanup_json_ json_object *stats = NULL;
        OutputLog l;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_OK(output_log_open(dfd, "job-2", 4, false, &l));
        ASSERT_OK(output_log_append(&l, OUTPUT_STDOUT, "abcdefgh", 8));
        ASSERT_OK(output_log_stats(&l, &stats));
        output_log_close(&l);
        ASSERT_OK(read_full_file_at(dfd, "stdout", 1024, &out, NULL));
        ASSERT_STREQ("abcd", out);
        ASSERT_EQ(4, json_object_get_int64(json_get(stats, "dropped_bytes")));
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

TEST_MAIN()
