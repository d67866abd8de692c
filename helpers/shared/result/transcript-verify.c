/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* transcript-verify.c: a result's exec transcript checked against what result.json signs (its "execs"):
 * the index by its digest, each kept file by the digest its index line gives, nothing unsigned beside
 * them. result.json's signature is verified before this runs; the index is read only once its digest
 * matched, so every line parsed here is signed. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "hash/hash.h"
#include "result/transcript.h"

#define refuse error_set

typedef struct Totals {
        uint64_t kept, dropped;
} Totals;

static bool is_hex_digest(const char *s) {
        return s && strlen(s) == SHA256_HEX_SIZE - 1 && strspn(s, "0123456789abcdef") == SHA256_HEX_SIZE - 1;
}

/* The kept file of one stream: a regular file of exactly its line's kept bytes, hashing to kept_sha256. */
static int verify_stream(int execs_fd, unsigned seq, TranscriptStream s, json_object *line, Totals *totals,
                         char **ret_error) {
        const char *name = transcript_stream_to_string(s);
        json_object *o = json_get(line, name);
        uint64_t bytes, kept, n;
        uint8_t digest[SHA256_SIZE];
        char file[32], hex[SHA256_HEX_SIZE];
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        const char *sha = json_get_str(o, "sha256"), *kept_sha = json_get_str(o, "kept_sha256");
        if (json_get_u64(o, NULL, "bytes", 0, UINT64_MAX, &bytes, NULL) <= 0 ||
            json_get_u64(o, NULL, "kept", 0, bytes, &kept, NULL) <= 0 || !is_hex_digest(sha) ||
            !is_hex_digest(kept_sha))
                return refuse(ret_error, -EBADMSG, "%s/%s: exec %u has no valid %s (bytes, sha256, kept, "
                              "kept_sha256)", TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE, seq, name);
        if (kept == bytes && !streq(sha, kept_sha))
                return refuse(ret_error, -EBADMSG, "%s/%s: exec %u keeps all of its %s, but its two digests differ",
                              TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE, seq, name);
        snprintf(file, sizeof file, "%u.%s", seq, name);
        fd = openat_beneath(execs_fd, file, O_RDONLY, 0);
        if (fd < 0)
                return refuse(ret_error, -EBADMSG, "%s/%s cannot be opened: %s", TRANSCRIPT_DIR, file, strerror(-fd));
        if (fstat(fd, &st) < 0)
                return refuse(ret_error, -errno, "%s/%s: %m", TRANSCRIPT_DIR, file);
        if (!S_ISREG(st.st_mode))
                return refuse(ret_error, -EBADMSG, "%s/%s is not a regular file", TRANSCRIPT_DIR, file);
        r = hash_fd(fd, -EBADF, kept, digest, &n);
        if (r < 0 && r != -EFBIG)
                return refuse(ret_error, r, "%s/%s cannot be read: %s", TRANSCRIPT_DIR, file, strerror(-r));
        if (r == -EFBIG || n != kept)
                return refuse(ret_error, -EBADMSG, "%s/%s size mismatch: the index says %llu bytes were kept",
                              TRANSCRIPT_DIR, file, (unsigned long long) kept);
        hex_encode(digest, sizeof digest, hex);
        if (!streq(hex, kept_sha))
                return refuse(ret_error, -EBADMSG, "%s/%s sha256 mismatch: the kept output is not what was signed",
                              TRANSCRIPT_DIR, file);
        totals->kept += kept;
        totals->dropped += bytes - kept;
        return 0;
}

static int verify_line(int execs_fd, const char *text, size_t len, size_t lineno, unsigned count, bool *seen,
                       Totals *totals, char **ret_error) {
        _cleanup_json_ json_object *line = NULL;
        _cleanup_free_ char *err = NULL;
        uint64_t seq;
        int r;

        r = json_parse_strict(text, len, TRANSCRIPT_LINE_MAX, 4, &line, &err);
        if (r < 0 || !json_object_is_type(line, json_type_object))
                return refuse(ret_error, -EBADMSG, "%s/%s line %zu is not one JSON object: %s", TRANSCRIPT_DIR,
                              TRANSCRIPT_INDEX_FILE, lineno, err ?: "not an object");
        if (json_get_u64(line, NULL, "seq", 1, count, &seq, NULL) <= 0)
                return refuse(ret_error, -EBADMSG, "%s/%s line %zu: seq is not between 1 and execs.count (%u)",
                              TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE, lineno, count);
        if (seen[seq - 1])
                return refuse(ret_error, -EBADMSG, "%s/%s line %zu: exec %llu is recorded twice", TRANSCRIPT_DIR,
                              TRANSCRIPT_INDEX_FILE, lineno, (unsigned long long) seq);
        seen[seq - 1] = true;
        if (!json_object_is_type(json_get(line, "argv"), json_type_array))
                return refuse(ret_error, -EBADMSG, "%s/%s line %zu: exec %llu has no argv", TRANSCRIPT_DIR,
                              TRANSCRIPT_INDEX_FILE, lineno, (unsigned long long) seq);
        for (TranscriptStream s = 0; s < _TRANSCRIPT_STREAM_MAX; s++) {
                r = verify_stream(execs_fd, (unsigned) seq, s, line, totals, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every line: its exec's files checked; the lines' sequence numbers are 1..count, each once. */
static int verify_lines(int execs_fd, const char *buf, size_t len, unsigned count, Totals *totals,
                        char **ret_error) {
        _cleanup_free_ bool *seen = calloc(count ?: 1, sizeof(bool));
        size_t lineno = 0;
        int r;

        if (!seen)
                return -ENOMEM;
        for (const char *p = buf, *end = buf + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));

                if (!nl)
                        return refuse(ret_error, -EBADMSG, "%s/%s does not end with a newline", TRANSCRIPT_DIR,
                                      TRANSCRIPT_INDEX_FILE);
                if (++lineno > count)
                        return refuse(ret_error, -EBADMSG, "%s/%s has more lines than execs.count (%u)",
                                      TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE, count);
                r = verify_line(execs_fd, p, (size_t) (nl - p), lineno, count, seen, totals, ret_error);
                if (r < 0)
                        return r;
                p = nl + 1;
        }
        if (lineno != count)
                return refuse(ret_error, -EBADMSG, "%s/%s has %zu lines, execs.count is %u: sequence numbers are "
                              "not 1..%u", TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE, lineno, count, count);
        return 0;
}

/* The directory holds regular files alone, exactly the index and three per exec (each of which was opened
 * above: equal counts mean nothing else is there). */
static int verify_entries(int execs_fd, unsigned count, char **ret_error) {
        _cleanup_closedir_ DIR *d = NULL;
        uint64_t n = 0;
        int r;

        r = opendir_fd(execs_fd, &d);
        if (r < 0)
                return refuse(ret_error, r, "cannot list %s/: %s", TRANSCRIPT_DIR, strerror(-r));
        for (struct dirent *de; (errno = 0, de = readdir(d));) {
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(execs_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return refuse(ret_error, -errno, "%s/: %m", TRANSCRIPT_DIR);
                if (!S_ISREG(st.st_mode) || ++n > 3ULL * count + 1)
                        return refuse(ret_error, -EBADMSG, "%s/ holds files not covered by the signature",
                                      TRANSCRIPT_DIR);
        }
        if (errno > 0)
                return refuse(ret_error, -errno, "cannot list %s/: %m", TRANSCRIPT_DIR);
        return 0;
}

static int read_index(int execs_fd, const char *want_sha, char **ret, size_t *ret_len, char **ret_error) {
        _cleanup_close_ int fd = openat_beneath(execs_fd, TRANSCRIPT_INDEX_FILE, O_RDONLY, 0);
        _cleanup_free_ char *buf = NULL;
        char hex[SHA256_HEX_SIZE];
        struct stat st;
        size_t len = 0;
        int r;

        if (fd < 0)
                return refuse(ret_error, -EBADMSG, "%s/%s cannot be opened: %s", TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE,
                              strerror(-fd));
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return refuse(ret_error, -EBADMSG, "%s/%s is not a regular file", TRANSCRIPT_DIR,
                              TRANSCRIPT_INDEX_FILE);
        r = read_full_fd(fd, TRANSCRIPT_INDEX_MAX, &buf, &len);
        if (r < 0)
                return refuse(ret_error, r == -EFBIG ? -EBADMSG : r, "%s/%s cannot be read: %s", TRANSCRIPT_DIR,
                              TRANSCRIPT_INDEX_FILE, strerror(-r));
        sha256_hex(buf, len, hex);
        if (!streq(hex, want_sha))
                return refuse(ret_error, -EBADMSG, "%s/%s sha256 mismatch: the transcript is not what was signed",
                              TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE);
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int transcript_verify(int dirfd, json_object *result, char **ret_error) {
        _cleanup_close_ int execs_fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        json_object *execs = json_get(result, TRANSCRIPT_DIR);
        uint64_t count, kept, dropped;
        Totals totals = {};
        size_t len = 0;
        int r;

        execs_fd = openat_beneath(dirfd, TRANSCRIPT_DIR, O_RDONLY | O_DIRECTORY, 0);
        if (execs_fd < 0 && execs_fd != -ENOENT)
                return refuse(ret_error, -EBADMSG, "cannot open %s/: %s", TRANSCRIPT_DIR, strerror(-execs_fd));
        if (!execs) {
                if (execs_fd >= 0)
                        return refuse(ret_error, -EBADMSG, "%s/ is present but the result signs no exec transcript",
                                      TRANSCRIPT_DIR);
                return 0;
        }
        const char *index_sha = json_get_str(execs, "index_sha256");
        if (!json_object_is_type(execs, json_type_object) ||
            json_get_u64(execs, NULL, "count", 1, TRANSCRIPT_EXECS_MAX, &count, NULL) <= 0 ||
            json_get_u64(execs, NULL, "kept_bytes", 0, UINT64_MAX, &kept, NULL) <= 0 ||
            json_get_u64(execs, NULL, "dropped_bytes", 0, UINT64_MAX, &dropped, NULL) <= 0 ||
            !is_hex_digest(index_sha))
                return refuse(ret_error, -EBADMSG, "%s is not an object with count (1..%u), index_sha256, kept_bytes "
                              "and dropped_bytes", TRANSCRIPT_DIR, TRANSCRIPT_EXECS_MAX);
        if (execs_fd < 0)
                return refuse(ret_error, -EBADMSG, "%s/ is missing", TRANSCRIPT_DIR);
        r = read_index(execs_fd, index_sha, &buf, &len, ret_error);
        if (r >= 0)
                r = verify_lines(execs_fd, buf, len, (unsigned) count, &totals, ret_error);
        if (r >= 0)
                r = verify_entries(execs_fd, (unsigned) count, ret_error);
        if (r < 0)
                return r;
        if (totals.kept != kept || totals.dropped != dropped)
                return refuse(ret_error, -EBADMSG, "%s: kept_bytes and dropped_bytes are not the sums of the index's "
                              "streams", TRANSCRIPT_DIR);
        return 0;
}
