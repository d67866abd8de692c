/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-transcript.c: the exec transcript (result/transcript.h): execs recorded out of order, their streams
 * hashed whole and kept within the job's budget, env values never written, refusals (not UTF-8, too large),
 * an exec given back, execs the job's end overtook; and its verification refusing every tampering: a kept
 * byte, a kept file cut, an index line removed, a line doubled, a file added, a transcript the result does
 * not sign, a signed one that is missing; and through result_verify(), a signed result. */
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "hash/hash.h"
#include "result/collect.h"
#include "result/result.h"
#include "result/transcript.h"
#include "secrets/keys.h"
#include "tests.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

FIXTURE(tr) {
        char dir[64];
        int spool, res;         /* where the supervisor writes it, and the result it is linked into */
        int execs;              /* res/execs */
        Transcript *t;
        json_object *result;    /* {"execs": stats} */
        char *err;
};

FIXTURE_SETUP(tr) {
        snprintf(self->dir, sizeof self->dir, "/tmp/pond-test-transcript-XXXXXX");
        self->spool = self->res = self->execs = -EBADF;
        ASSERT_TRUE(mkdtemp(self->dir) != NULL);
        self->spool = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(self->spool >= 0);
        ASSERT_OK(mkdirat(self->spool, "res", 0755));
        self->res = openat(self->spool, "res", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(self->res >= 0);
}

FIXTURE_TEARDOWN(tr) {
        transcript_free(self->t);
        json_object_put(self->result);
        free(self->err);
        safe_close(self->execs);
        safe_close(self->res);
        safe_close(self->spool);
        if (self->dir[0])
                nftw(self->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *argv_a[] = { "sh", "-c", "cat; echo done", NULL };
static char *argv_b[] = { "false", NULL };
static char *env_a[] = { "TOKEN=s3cret-value", "MODE=fast", NULL };

/* The transcript's stats as result.json would sign them, and its files linked into res/execs. */
static int finish(FIXTURE_DATA(tr) *self) {
        json_object *stats = NULL;
        int r;

        r = transcript_stats(self->t, &stats);
        if (r < 0)
                return r;
        self->result = json_object_new_object();
        json_object_object_add(self->result, TRANSCRIPT_DIR, stats);
        if (mkdirat(self->res, TRANSCRIPT_DIR, 0755) < 0)
                return -errno;
        self->execs = openat(self->res, TRANSCRIPT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (self->execs < 0)
                return -errno;
        return transcript_link(self->t, self->execs);
}

static int verify(FIXTURE_DATA(tr) *self) {
        free(self->err);
        self->err = NULL;
        return transcript_verify(self->res, self->result, &self->err);
}

/* Two execs, the second ending first: exec 1 with stdin, env and cwd, its output on both streams; exec 2
 * failing with rc 3. */
static int record_two(FIXTURE_DATA(tr) *self, uint64_t cap) {
        unsigned a = 0, b = 0;
        int r;

        r = transcript_open(self->spool, cap, &self->t);
        if (r >= 0)
                r = transcript_begin(self->t, &(TranscriptCall) { .via = "init", .uid = 1234, .argv = argv_a,
                                                                  .cwd = "/tmp", .env = env_a,
                                                                  .stdin_data = "hello\n", .stdin_len = 6 }, &a);
        if (r >= 0)
                r = transcript_begin(self->t, &(TranscriptCall) { .via = "runtime", .argv = argv_b }, &b);
        if (r < 0)
                return r;
        if (a != 1 || b != 2)
                return -EINVAL;
        r = transcript_output(self->t, a, TRANSCRIPT_STDOUT, "hello\n", 6);
        if (r >= 0)
                r = transcript_output(self->t, b, TRANSCRIPT_STDERR, "nope\n", 5);
        if (r >= 0)
                r = transcript_end(self->t, b, 3, 0);
        if (r >= 0)
                r = transcript_output(self->t, a, TRANSCRIPT_STDERR, "warn\n", 5);
        if (r >= 0)
                r = transcript_output(self->t, a, TRANSCRIPT_STDOUT, "done\n", 5);
        if (r >= 0)
                r = transcript_end(self->t, a, 0, TRANSCRIPT_TIMED_OUT);
        return r;
}

static int read_index(FIXTURE_DATA(tr) *self, char **ret, size_t *ret_len) {
        return read_full_file_at(self->execs, TRANSCRIPT_INDEX_FILE, TRANSCRIPT_INDEX_MAX, ret, ret_len);
}

/* The index line of exec seq, parsed. */
static json_object *index_line(FIXTURE_DATA(tr) *self, unsigned seq) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;

        if (read_index(self, &buf, &len) < 0)
                return NULL;
        for (char *p = buf, *nl; p < buf + len && (nl = strchr(p, '\n')); p = nl + 1) {
                json_object *o;

                *nl = 0;
                o = json_tokener_parse(p);
                if (o && json_object_get_int64(json_object_object_get(o, "seq")) == seq)
                        return o;
                json_object_put(o);
        }
        return NULL;
}

static const char *stream_field(json_object *line, const char *stream, const char *key) {
        return json_object_get_string(json_object_object_get(json_object_object_get(line, stream), key));
}

static int64_t stream_int(json_object *line, const char *stream, const char *key) {
        return json_object_get_int64(json_object_object_get(json_object_object_get(line, stream), key));
}

TEST_F(tr, records_execs_as_they_end) {
        _cleanup_json_ json_object *one = NULL, *two = NULL;
        _cleanup_free_ char *index = NULL;
        char hex[SHA256_HEX_SIZE];
        size_t len = 0;
        json_object *stats;

        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_EQ(2u, transcript_count(self->t));
        ASSERT_OK(finish(self));
        ASSERT_OK(verify(self));
        stats = json_object_object_get(self->result, TRANSCRIPT_DIR);
        ASSERT_EQ(2, json_object_get_int64(json_object_object_get(stats, "count")));
        ASSERT_EQ(6 + 11 + 5 + 5, json_object_get_int64(json_object_object_get(stats, "kept_bytes")));
        ASSERT_EQ(0, json_object_get_int64(json_object_object_get(stats, "dropped_bytes")));
        ASSERT_EQ(1 << 20, json_object_get_int64(json_object_object_get(stats, "cap_bytes")));

        /* the index: exec 2's line first (it ended first), each a JSON object */
        ASSERT_OK(read_index(self, &index, &len));
        ASSERT_TRUE(strncmp(index, "{\"seq\":2,", 9) == 0);
        sha256_hex(index, len, hex);
        ASSERT_STREQ(hex, json_object_get_string(json_object_object_get(stats, "index_sha256")));
        /* env: the names, never the values */
        ASSERT_TRUE(strstr(index, "s3cret") == NULL);

        one = index_line(self, 1);
        two = index_line(self, 2);
        ASSERT_TRUE(one && two);
        ASSERT_STREQ("init", json_object_get_string(json_object_object_get(one, "via")));
        ASSERT_EQ(1234, json_object_get_int64(json_object_object_get(one, "uid")));
        ASSERT_STREQ("[\"sh\",\"-c\",\"cat; echo done\"]",
                     json_object_to_json_string_ext(json_object_object_get(one, "argv"), JSON_C_TO_STRING_PLAIN));
        ASSERT_STREQ("[\"TOKEN\",\"MODE\"]",
                     json_object_to_json_string_ext(json_object_object_get(one, "env"), JSON_C_TO_STRING_PLAIN));
        ASSERT_STREQ("/tmp", json_object_get_string(json_object_object_get(one, "cwd")));
        ASSERT_EQ(0, json_object_get_int64(json_object_object_get(one, "status")));
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(one, "timed_out")));
        ASSERT_FALSE(json_object_get_boolean(json_object_object_get(one, "init_ended")));
        ASSERT_TRUE(json_object_get_int64(json_object_object_get(one, "ended_us")) >=
                    json_object_get_int64(json_object_object_get(one, "started_us")));
        sha256_hex("hello\ndone\n", 11, hex);
        ASSERT_STREQ(hex, stream_field(one, "stdout", "sha256"));
        ASSERT_STREQ(hex, stream_field(one, "stdout", "kept_sha256"));
        ASSERT_EQ(11, stream_int(one, "stdout", "bytes"));
        sha256_hex("hello\n", 6, hex);
        ASSERT_STREQ(hex, stream_field(one, "stdin", "sha256"));
        ASSERT_EQ(3, json_object_get_int64(json_object_object_get(two, "status")));
        ASSERT_STREQ("runtime", json_object_get_string(json_object_object_get(two, "via")));
        ASSERT_TRUE(json_object_is_type(json_object_object_get(two, "cwd"), json_type_null));
        sha256_hex("", 0, hex);
        ASSERT_STREQ(hex, stream_field(two, "stdin", "sha256"));

        /* the kept files hold what passed */
        _cleanup_free_ char *out = NULL;
        ASSERT_OK(read_full_file_at(self->execs, "1.stdout", 1024, &out, &len));
        ASSERT_EQ(11, len);
        ASSERT_STREQ("hello\ndone\n", out);
}

TEST_F(tr, budget_keeps_a_prefix_and_counts_the_rest) {
        _cleanup_json_ json_object *one = NULL, *two = NULL;
        char hex[SHA256_HEX_SIZE];
        json_object *stats;
        struct stat st;

        /* 10 bytes for the whole job: exec 1's stdin (6) and 4 of stdout's "hello\n"; nothing more after */
        ASSERT_OK(record_two(self, 10));
        ASSERT_OK(finish(self));
        ASSERT_OK(verify(self));
        stats = json_object_object_get(self->result, TRANSCRIPT_DIR);
        ASSERT_EQ(10, json_object_get_int64(json_object_object_get(stats, "kept_bytes")));
        ASSERT_EQ(6 + 11 + 5 + 5 - 10, json_object_get_int64(json_object_object_get(stats, "dropped_bytes")));
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(stats, "truncated")));
        one = index_line(self, 1);
        two = index_line(self, 2);
        ASSERT_TRUE(one && two);
        ASSERT_EQ(4, stream_int(one, "stdout", "kept"));
        ASSERT_EQ(11, stream_int(one, "stdout", "bytes"));
        sha256_hex("hell", 4, hex);
        ASSERT_STREQ(hex, stream_field(one, "stdout", "kept_sha256"));
        sha256_hex("hello\ndone\n", 11, hex);
        ASSERT_STREQ(hex, stream_field(one, "stdout", "sha256")); /* the whole stream's, all the same */
        ASSERT_EQ(0, stream_int(two, "stderr", "kept"));
        ASSERT_OK(fstatat(self->execs, "1.stdout", &st, 0));
        ASSERT_EQ(4, st.st_size);
        ASSERT_OK(fstatat(self->execs, "2.stderr", &st, 0));
        ASSERT_EQ(0, st.st_size);
}

TEST_F(tr, refusals_and_an_exec_given_back) {
        _cleanup_json_ json_object *line = NULL;
        _cleanup_free_ char *big = NULL;
        char bad[] = { 'a', (char) 0xff, 0 };
        char *argv_bad[] = { bad, NULL }, *argv_big[] = { NULL, NULL };
        unsigned seq = 0, other = 0;
        struct stat st;

        ASSERT_OK(transcript_open(self->spool, 1024, &self->t));
        ASSERT_ERROR(EILSEQ, transcript_begin(self->t, &(TranscriptCall) { .argv = argv_bad }, &seq));
        ASSERT_ERROR(EILSEQ, transcript_begin(self->t, &(TranscriptCall) { .argv = argv_b, .cwd = bad }, &seq));
        big = malloc(TRANSCRIPT_LINE_MAX);
        ASSERT_TRUE(big != NULL);
        memset(big, 'x', TRANSCRIPT_LINE_MAX - 1);
        big[TRANSCRIPT_LINE_MAX - 1] = 0;
        argv_big[0] = big;
        ASSERT_ERROR(ENOSPC, transcript_begin(self->t, &(TranscriptCall) { .argv = argv_big }, &seq));

        /* begun, never let go: its number is given back and its files go */
        ASSERT_OK(transcript_begin(self->t, &(TranscriptCall) { .argv = argv_b, .stdin_data = "abc",
                                                               .stdin_len = 3 }, &seq));
        ASSERT_EQ(1u, seq);
        ASSERT_OK(transcript_abort(self->t, seq));
        ASSERT_TRUE(fstatat(self->spool, TRANSCRIPT_DIR "/1.stdin", &st, 0) < 0 && errno == ENOENT);
        ASSERT_OK(transcript_begin(self->t, &(TranscriptCall) { .argv = argv_b }, &seq));
        ASSERT_EQ(1u, seq);
        /* one that is not the last begun is recorded as not started instead */
        ASSERT_OK(transcript_begin(self->t, &(TranscriptCall) { .argv = argv_b }, &other));
        ASSERT_EQ(2u, other);
        ASSERT_ERROR(EBUSY, transcript_abort(self->t, seq));
        ASSERT_ERROR(ENOENT, transcript_output(self->t, seq, TRANSCRIPT_STDOUT, "x", 1));
        ASSERT_ERROR(ENOENT, transcript_end(self->t, seq, 0, 0));
        /* the job's end overtakes exec 2: ended without a status */
        ASSERT_TRUE(transcript_running(self->t, other));
        ASSERT_ERROR(EBUSY, transcript_stats(self->t, &line));
        ASSERT_OK(transcript_end_all(self->t, TRANSCRIPT_INIT_ENDED));
        ASSERT_FALSE(transcript_running(self->t, other));
        ASSERT_OK(finish(self));
        ASSERT_OK(verify(self));
        line = index_line(self, 1);
        ASSERT_TRUE(line != NULL);
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(line, "not_started")));
        json_object_put(line);
        line = index_line(self, 2);
        ASSERT_TRUE(line != NULL);
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(line, "init_ended")));
        ASSERT_TRUE(json_object_is_type(json_object_object_get(line, "status"), json_type_null));
}

/* Rewrites res/execs/index without its first line, or with it twice. */
static int edit_index(FIXTURE_DATA(tr) *self, bool twice) {
        _cleanup_free_ char *buf = NULL, *edited = NULL;
        size_t len = 0, first, n;
        int r;

        r = read_index(self, &buf, &len);
        if (r < 0)
                return r;
        first = (size_t) (strchr(buf, '\n') - buf) + 1;
        edited = malloc(len + first);
        if (!edited)
                return -ENOMEM;
        if (twice) {
                memcpy(edited, buf, len);
                memcpy(edited + len, buf, first);
                n = len + first;
        } else {
                memcpy(edited, buf + first, len - first);
                n = len - first;
        }
        if (unlinkat(self->execs, TRANSCRIPT_INDEX_FILE, 0) < 0)
                return -errno;
        return write_file_atomic_at(self->execs, TRANSCRIPT_INDEX_FILE, edited, n, 0644);
}

/* Makes result's index_sha256 the edited index's, as a worker that signed such an index would. */
static int resign_index(FIXTURE_DATA(tr) *self) {
        _cleanup_free_ char *buf = NULL;
        char hex[SHA256_HEX_SIZE];
        size_t len = 0;
        int r;

        r = read_index(self, &buf, &len);
        if (r < 0)
                return r;
        sha256_hex(buf, len, hex);
        json_object_object_add(json_object_object_get(self->result, TRANSCRIPT_DIR), "index_sha256",
                               json_object_new_string(hex));
        return 0;
}

/* XORs one byte of res/execs/name (a hard link of the spool's: a copy is made first). */
static int flip(FIXTURE_DATA(tr) *self, const char *name) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r;

        r = read_full_file_at(self->execs, name, 1 << 20, &buf, &len);
        if (r < 0)
                return r;
        if (len == 0)
                return -ENODATA;
        buf[0] ^= 1;
        if (unlinkat(self->execs, name, 0) < 0)
                return -errno;
        return write_file_atomic_at(self->execs, name, buf, len, 0644);
}

TEST_F(tr, verify_refuses_a_changed_byte) {
        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_OK(finish(self));
        ASSERT_OK(flip(self, "1.stdout"));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("execs/1.stdout sha256 mismatch", self->err);
}

TEST_F(tr, verify_refuses_a_cut_file) {
        _cleanup_close_ int fd = -EBADF;

        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_OK(finish(self));
        ASSERT_OK(unlinkat(self->execs, "2.stderr", 0));
        fd = openat(self->execs, "2.stderr", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(4, write(fd, "nope", 4));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("execs/2.stderr size mismatch", self->err);
}

TEST_F(tr, verify_refuses_a_removed_line) {
        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_OK(finish(self));
        ASSERT_OK(edit_index(self, false));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("execs/index sha256 mismatch", self->err);
        /* even were the index's digest to match, the count does not */
        ASSERT_OK(resign_index(self));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("has 1 lines, execs.count is 2", self->err);
}

TEST_F(tr, verify_refuses_a_doubled_line) {
        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_OK(finish(self));
        ASSERT_OK(edit_index(self, true));
        ASSERT_OK(resign_index(self));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("more lines than execs.count", self->err);
        /* two lines, one exec twice */
        ASSERT_OK(edit_index(self, false));
        ASSERT_OK(edit_index(self, false));
        ASSERT_OK(edit_index(self, true));
        ASSERT_OK(resign_index(self));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("is recorded twice", self->err);
}

TEST_F(tr, verify_refuses_an_added_file) {
        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_OK(finish(self));
        ASSERT_OK(write_file_atomic_at(self->execs, "3.stdout", "x", 1, 0644));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("execs/ holds files not covered by the signature", self->err);
        ASSERT_OK(unlinkat(self->execs, "3.stdout", 0));
        ASSERT_OK(mkdirat(self->execs, "sub", 0755));
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("execs/ holds files not covered by the signature", self->err);
}

TEST_F(tr, verify_wants_the_directory_and_the_object_together) {
        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_OK(finish(self));
        json_object_object_del(self->result, TRANSCRIPT_DIR);
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("execs/ is present but the result signs no exec transcript", self->err);
        /* neither: fine (a job nobody exec'd into) */
        ASSERT_OK(rm_rf_at(self->res, TRANSCRIPT_DIR));
        ASSERT_OK(verify(self));
        /* the object without the directory */
        json_object_object_add(self->result, TRANSCRIPT_DIR, json_object_new_object());
        ASSERT_ERROR(EBADMSG, verify(self));
        ASSERT_CONTAINS("execs is not an object with count", self->err);
}

/* Through result_verify(): a signed result with a transcript verifies, and a changed kept byte does not. */
TEST_F(tr, signed_result) {
        _cleanup_secret_ uint8_t *sk = NULL;
        _cleanup_json_ json_object *r = json_object_new_object();
        _cleanup_free_ char *err = NULL, *keydir = NULL, *results = NULL, *resdir = NULL;
        _cleanup_close_ int results_fd = -EBADF, staged = -EBADF, execs = -EBADF;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        char sha[SHA256_HEX_SIZE];
        json_object *stats = NULL;

        ASSERT_TRUE(asprintf(&keydir, "%s/keys", self->dir) > 0 && asprintf(&results, "%s/results", self->dir) > 0 &&
                    asprintf(&resdir, "%s/job-1", results) > 0);
        ASSERT_OK(keys_generate(keydir));
        ASSERT_OK(keys_load_sign_secret(keydir, &sk));
        ASSERT_OK(keys_load_sign_public(keydir, pk));
        ASSERT_OK(mkdir(results, 0755));
        results_fd = open(results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(results_fd >= 0);
        ASSERT_OK(result_stage_open(results_fd, "job-1", &staged));
        ASSERT_OK(record_two(self, 1 << 20));
        ASSERT_OK(transcript_stats(self->t, &stats));
        ASSERT_OK(mkdirat(staged, TRANSCRIPT_DIR, 0755));
        execs = openat(staged, TRANSCRIPT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_OK(transcript_link(self->t, execs));
        json_object_object_add(r, "version", json_object_new_int(RESULT_VERSION));
        json_object_object_add(r, "job_id", json_object_new_string("job-1"));
        json_object_object_add(r, "input_sha", NULL);
        json_object_object_add(r, "artifacts", json_object_new_array());
        ASSERT_OK(manifest_json_sha(json_object_object_get(r, "artifacts"), sha));
        json_object_object_add(r, "output_sha", json_object_new_string(sha));
        json_object_object_add(r, TRANSCRIPT_DIR, stats);
        ASSERT_OK(result_write_signed(results_fd, "job-1", r, sk, staged));
        ASSERT_OK(result_verify(resdir, pk, "job-1", NULL, NULL, &err));

        /* the spool's files are the result's (hard links): a copy is edited, as a verifier's would be */
        safe_close(execs);
        execs = openat(results_fd, "job-1/" TRANSCRIPT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(execs >= 0);
        safe_close(self->execs);
        self->execs = TAKE_FD(execs);
        ASSERT_OK(flip(self, "2.stderr"));
        ASSERT_ERROR(EBADMSG, result_verify(resdir, pk, "job-1", NULL, NULL, &err));
        ASSERT_CONTAINS("execs/2.stderr sha256 mismatch", err);
}

TEST_MAIN();
