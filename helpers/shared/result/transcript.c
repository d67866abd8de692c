/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* transcript.c: writing the job's exec transcript as the execs run: each exec's stdin, stdout and stderr
 * hashed whole as they pass and kept (a prefix) while the job's budget lasts, its index line written at its
 * end. Everything goes to files at once (no exec's output is held in memory) and with plain writes to
 * regular files: nothing here waits for a reader. The format is docs/result-format.md's, "The exec
 * transcript": a change to it is a format change. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/json-util.h"
#include "basic/string-util.h"
#include "hash/hash.h"
#include "result/transcript.h"

/* What an index line adds at the exec's end, beyond the call as serialized at its start: the times, status,
 * flags and three streams' sizes and digests. Reserved at the start, so that the index never outgrows
 * TRANSCRIPT_INDEX_MAX. */
#define TRANSCRIPT_END_FIELDS_MAX 1024U

static const char *const stream_table[_TRANSCRIPT_STREAM_MAX] = {
        [TRANSCRIPT_STDIN] = "stdin",
        [TRANSCRIPT_STDOUT] = "stdout",
        [TRANSCRIPT_STDERR] = "stderr",
};

const char *transcript_stream_to_string(TranscriptStream s) {
        return s >= 0 && s < _TRANSCRIPT_STREAM_MAX ? stream_table[s] : NULL;
}

typedef struct Running {
        unsigned seq;
        json_object *line;              /* seq .. started_us; completed at the end */
        size_t reserved;                /* index bytes its line may take */
        uint64_t started_mono;
        int fds[_TRANSCRIPT_STREAM_MAX]; /* -EBADF once nothing more is kept */
        bool stdin_stream;              /* its stdin is still to come (TranscriptCall.stdin_stream) */
        Sha256 *whole[_TRANSCRIPT_STREAM_MAX], *kept_sha[_TRANSCRIPT_STREAM_MAX];
        uint64_t bytes[_TRANSCRIPT_STREAM_MAX], kept[_TRANSCRIPT_STREAM_MAX];
        struct Running *next;
} Running;

struct Transcript {
        int dirfd;
        int index_fd;
        Sha256 *index_sha;
        uint64_t cap, kept, dropped;
        uint64_t index_bytes, reserved;
        unsigned begun, ended;
        int broken;                     /* the index could not be written: < 0, and nothing more is */
        Running *running;
};

static Running *running_free(Running *e) {
        if (!e)
                return NULL;
        json_object_put(e->line);
        for (int s = 0; s < _TRANSCRIPT_STREAM_MAX; s++) {
                safe_close(e->fds[s]);
                sha256_free(e->whole[s]);
                sha256_free(e->kept_sha[s]);
        }
        free(e);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Running *, running_free);

static Running *running_find(const Transcript *t, unsigned seq) {
        for (Running *e = t->running; e; e = e->next)
                if (e->seq == seq)
                        return e;
        return NULL;
}

static void running_unlink(Transcript *t, Running *e) {
        for (Running **p = &t->running; *p; p = &(*p)->next)
                if (*p == e) {
                        *p = e->next;
                        return;
                }
}

static int file_name(unsigned seq, TranscriptStream s, char ret[32]) {
        return snprintf(ret, 32, "%u.%s", seq, stream_table[s]) < 32 ? 0 : -ENAMETOOLONG;
}

/* 0644 whatever the umask: the spool entry and the result above it are what keep others out (as the log). */
static int create_file(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);

        if (fd < 0)
                return -errno;
        if (fchmod(fd, 0644) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

int transcript_open(int parent_dirfd, uint64_t cap, Transcript **ret) {
        _cleanup_(transcript_freep) Transcript *t = calloc(1, sizeof *t);
        int r;

        if (!t)
                return -ENOMEM;
        t->dirfd = t->index_fd = -EBADF;
        t->cap = cap;
        r = rm_rf_at(parent_dirfd, TRANSCRIPT_DIR);
        if (r < 0)
                return r;
        if (mkdirat(parent_dirfd, TRANSCRIPT_DIR, 0755) < 0)
                return -errno;
        t->dirfd = openat(parent_dirfd, TRANSCRIPT_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (t->dirfd < 0 || fchmod(t->dirfd, 0755) < 0)
                return -errno;
        t->index_fd = create_file(t->dirfd, TRANSCRIPT_INDEX_FILE);
        if (t->index_fd < 0)
                return t->index_fd;
        r = sha256_new(&t->index_sha);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(t);
        return 0;
}

static json_object *strv_to_json(char **l, bool names_only) {
        _cleanup_json_ json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (; l && *l; l++) {
                const char *eq = names_only ? strchr(*l, '=') : NULL;
                json_object *s = eq ? json_object_new_string_len(*l, (int) (eq - *l)) : json_object_new_string(*l);
                if (!s || json_object_array_add(a, s) < 0)
                        return NULL;
        }
        return TAKE_PTR(a);
}

/* The call's part of the index line, serialized once now to know what its line will take. */
static int call_json(const Transcript *t, const TranscriptCall *call, unsigned seq, uint64_t now,
                     json_object **ret, size_t *ret_len) {
        _cleanup_json_ json_object *o = json_object_new_object();
        const char *s;
        size_t len = 0;
        int r = 0;

        if (!o || !call->argv || !call->argv[0])
                return o ? -EINVAL : -ENOMEM;
        for (char **a = call->argv; *a; a++)
                if (!utf8_is_valid(*a))
                        return -EILSEQ;
        if (call->cwd && !utf8_is_valid(call->cwd))
                return -EILSEQ;
        r = json_add(o, "seq", json_object_new_uint64(seq));
        if (r >= 0)
                r = json_add(o, "via", json_object_new_string(call->via ?: "init"));
        if (r >= 0)
                r = json_add(o, "uid", json_object_new_uint64(call->uid));
        if (r >= 0)
                r = json_add(o, "argv", strv_to_json(call->argv, false));
        if (r >= 0)
                r = json_object_object_add(o, "cwd", call->cwd ? json_object_new_string(call->cwd) : NULL) < 0 ?
                    -ENOMEM : 0;
        if (r >= 0)
                r = json_add(o, "env", strv_to_json(call->env, true));
        if (r >= 0)
                r = json_add(o, "started_us", json_object_new_uint64(now));
        if (r < 0)
                return r;
        s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        if (!s)
                return -ENOMEM;
        len += TRANSCRIPT_END_FIELDS_MAX;
        if (len > TRANSCRIPT_LINE_MAX || t->index_bytes + t->reserved + len > TRANSCRIPT_INDEX_MAX)
                return -ENOSPC;
        *ret = TAKE_PTR(o);
        *ret_len = len;
        return 0;
}

/* Hashed whole; kept while the budget lasts. A write that fails keeps nothing more of the stream: its file
 * is cut back to what was counted, and the rest is counted as dropped. */
static void stream_add(Transcript *t, Running *e, TranscriptStream s, const void *buf, size_t n) {
        uint64_t room = t->kept >= t->cap ? 0 : t->cap - t->kept;
        size_t keep = e->fds[s] < 0 ? 0 : room < n ? (size_t) room : n;

        sha256_feed(e->whole[s], buf, n);
        e->bytes[s] += n;
        if (keep == 0)
                return;
        if (write_all(e->fds[s], buf, keep) < 0) {
                (void) ftruncate(e->fds[s], (off_t) e->kept[s]);
                e->fds[s] = safe_close(e->fds[s]);
                return;
        }
        sha256_feed(e->kept_sha[s], buf, keep);
        e->kept[s] += keep;
        t->kept += keep;
}

static int running_new(Transcript *t, unsigned seq, Running **ret) {
        _cleanup_(running_freep) Running *e = calloc(1, sizeof *e);
        int r;

        if (!e)
                return -ENOMEM;
        e->seq = seq;
        for (int s = 0; s < _TRANSCRIPT_STREAM_MAX; s++)
                e->fds[s] = -EBADF;
        for (TranscriptStream s = 0; s < _TRANSCRIPT_STREAM_MAX; s++) {
                char name[32];

                r = file_name(seq, s, name);
                if (r >= 0)
                        r = sha256_new(&e->whole[s]);
                if (r >= 0)
                        r = sha256_new(&e->kept_sha[s]);
                if (r < 0)
                        return r;
                e->fds[s] = create_file(t->dirfd, name);
                if (e->fds[s] < 0)
                        return e->fds[s];
        }
        *ret = TAKE_PTR(e);
        return 0;
}

static void remove_files(Transcript *t, unsigned seq) {
        for (TranscriptStream s = 0; s < _TRANSCRIPT_STREAM_MAX; s++) {
                char name[32];
                if (file_name(seq, s, name) >= 0)
                        (void) unlinkat(t->dirfd, name, 0);
        }
}

int transcript_begin(Transcript *t, const TranscriptCall *call, unsigned *ret_seq) {
        _cleanup_(running_freep) Running *e = NULL;
        _cleanup_json_ json_object *line = NULL;
        unsigned seq = t->begun + 1;
        size_t reserve = 0;
        int r;

        if (t->broken < 0)
                return t->broken;
        if (t->begun >= TRANSCRIPT_EXECS_MAX)
                return -ENOSPC;
        r = call_json(t, call, seq, clock_usec(CLOCK_REALTIME), &line, &reserve);
        if (r < 0)
                return r;
        r = running_new(t, seq, &e);
        if (r < 0) {
                remove_files(t, seq);
                return r;
        }
        e->line = TAKE_PTR(line);
        e->reserved = reserve;
        e->started_mono = clock_usec(CLOCK_MONOTONIC);
        if (call->stdin_len > 0)
                stream_add(t, e, TRANSCRIPT_STDIN, call->stdin_data, call->stdin_len);
        e->stdin_stream = call->stdin_stream;
        if (!e->stdin_stream)
                e->fds[TRANSCRIPT_STDIN] = safe_close(e->fds[TRANSCRIPT_STDIN]);
        t->reserved += reserve;
        t->begun = seq;
        e->next = t->running;
        t->running = TAKE_PTR(e);
        *ret_seq = seq;
        return 0;
}

bool transcript_running(const Transcript *t, unsigned seq) {
        return t && running_find(t, seq);
}

int transcript_output(Transcript *t, unsigned seq, TranscriptStream s, const void *buf, size_t n) {
        Running *e = running_find(t, seq);

        if (!e)
                return -ENOENT;
        if (s != TRANSCRIPT_STDOUT && s != TRANSCRIPT_STDERR && !(s == TRANSCRIPT_STDIN && e->stdin_stream))
                return -EINVAL;
        stream_add(t, e, s, buf, n);
        return 0;
}

static json_object *stream_json(const Running *e, TranscriptStream s) {
        _cleanup_json_ json_object *o = json_object_new_object();
        char whole[SHA256_HEX_SIZE], kept[SHA256_HEX_SIZE];

        if (!o || sha256_digest_hex(e->whole[s], whole) < 0 || sha256_digest_hex(e->kept_sha[s], kept) < 0)
                return NULL;
        if (json_add(o, "bytes", json_object_new_uint64(e->bytes[s])) < 0 ||
            json_add(o, "sha256", json_object_new_string(whole)) < 0 ||
            json_add(o, "kept", json_object_new_uint64(e->kept[s])) < 0 ||
            json_add(o, "kept_sha256", json_object_new_string(kept)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static int line_complete(const Running *e, int status, uint32_t flags) {
        static const struct { const char *key; uint32_t flag; } flag_keys[] = {
                { "timed_out", TRANSCRIPT_TIMED_OUT },
                { "truncated", TRANSCRIPT_TRUNCATED },
                { "not_started", TRANSCRIPT_NOT_STARTED },
                { "init_ended", TRANSCRIPT_INIT_ENDED },
        };
        uint64_t now = clock_usec(CLOCK_MONOTONIC);
        json_object *o = e->line;
        int r;

        r = json_add(o, "ended_us", json_object_new_uint64(clock_usec(CLOCK_REALTIME)));
        if (r >= 0)
                r = json_add(o, "duration_us", json_object_new_uint64(now - e->started_mono));
        if (r >= 0)
                r = json_object_object_add(o, "status", status >= 0 ? json_object_new_int(status) : NULL) < 0 ?
                    -ENOMEM : 0;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(flag_keys); i++)
                r = json_add(o, flag_keys[i].key, json_object_new_boolean(!!(flags & flag_keys[i].flag)));
        for (TranscriptStream s = 0; r >= 0 && s < _TRANSCRIPT_STREAM_MAX; s++)
                r = json_add(o, stream_table[s], stream_json(e, s));
        return r;
}

/* The index line, written whole or not at all (a short write is cut back off the file). */
static int index_append(Transcript *t, const char *s, size_t len) {
        int r;

        if (t->broken < 0)
                return t->broken;
        r = write_all(t->index_fd, s, len);
        if (r < 0) {
                (void) ftruncate(t->index_fd, (off_t) t->index_bytes);
                t->broken = r;
                return r;
        }
        sha256_feed(t->index_sha, s, len);
        t->index_bytes += len;
        return 0;
}

int transcript_end(Transcript *t, unsigned seq, int status, uint32_t flags) {
        _cleanup_(running_freep) Running *e = running_find(t, seq);
        _cleanup_free_ char *text = NULL;
        const char *s;
        size_t len = 0;
        int r;

        if (!e)
                return -ENOENT;
        running_unlink(t, e);
        t->reserved -= e->reserved;
        for (int i = 0; i < _TRANSCRIPT_STREAM_MAX; i++)
                t->dropped += e->bytes[i] - e->kept[i];
        r = line_complete(e, status, flags);
        if (r < 0) {
                t->broken = r;
                return r;
        }
        s = json_object_to_json_string_length(e->line, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                              &len);
        if (!s || !(text = malloc(len + 1))) {
                t->broken = -ENOMEM;
                return -ENOMEM;
        }
        memcpy(text, s, len);
        text[len++] = '\n';
        r = index_append(t, text, len);
        if (r < 0)
                return r;
        t->ended++;
        return 0;
}

int transcript_abort(Transcript *t, unsigned seq) {
        Running *e = running_find(t, seq);

        if (!e)
                return -ENOENT;
        if (seq != t->begun)
                return transcript_end(t, seq, -1, TRANSCRIPT_NOT_STARTED) < 0 ? -EIO : -EBUSY;
        running_unlink(t, e);
        t->reserved -= e->reserved;
        for (int s = 0; s < _TRANSCRIPT_STREAM_MAX; s++)
                t->kept -= e->kept[s];
        running_free(e);
        remove_files(t, seq);
        t->begun--;
        return 0;
}

int transcript_end_all(Transcript *t, uint32_t flags) {
        int r = 0;

        /* in the order they started */
        for (unsigned seq = 1; t && t->running && seq <= t->begun; seq++)
                if (running_find(t, seq)) {
                        int k = transcript_end(t, seq, -1, flags);
                        if (k < 0 && r >= 0)
                                r = k;
                }
        return r;
}

unsigned transcript_count(const Transcript *t) {
        return t ? t->ended : 0;
}

int transcript_stats(const Transcript *t, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        char hex[SHA256_HEX_SIZE];
        int r;

        if (!o)
                return -ENOMEM;
        if (t->broken < 0)
                return t->broken;
        if (t->running)
                return -EBUSY;
        r = sha256_digest_hex(t->index_sha, hex);
        if (r >= 0)
                r = json_add(o, "count", json_object_new_uint64(t->ended));
        if (r >= 0)
                r = json_add(o, "index_sha256", json_object_new_string(hex));
        if (r >= 0)
                r = json_add(o, "kept_bytes", json_object_new_uint64(t->kept));
        if (r >= 0)
                r = json_add(o, "dropped_bytes", json_object_new_uint64(t->dropped));
        if (r >= 0)
                r = json_add(o, "truncated", json_object_new_boolean(t->dropped > 0));
        if (r >= 0)
                r = json_add(o, "cap_bytes", json_object_new_uint64(t->cap));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int transcript_link(const Transcript *t, int dst_dirfd) {
        if (t->broken < 0)
                return t->broken;
        if (t->running)
                return -EBUSY;
        if (linkat(t->dirfd, TRANSCRIPT_INDEX_FILE, dst_dirfd, TRANSCRIPT_INDEX_FILE, 0) < 0)
                return -errno;
        for (unsigned seq = 1; seq <= t->ended; seq++)
                for (TranscriptStream s = 0; s < _TRANSCRIPT_STREAM_MAX; s++) {
                        char name[32];
                        int r = file_name(seq, s, name);
                        if (r < 0)
                                return r;
                        if (linkat(t->dirfd, name, dst_dirfd, name, 0) < 0)
                                return -errno;
                }
        return 0;
}

Transcript *transcript_free(Transcript *t) {
        if (!t)
                return NULL;
        while (t->running) {
                Running *e = t->running;
                t->running = e->next;
                running_free(e);
        }
        if (t->index_fd >= 0)
                (void) fsync(t->index_fd);
        safe_close(t->index_fd);
        safe_close(t->dirfd);
        sha256_free(t->index_sha);
        free(t);
        return NULL;
}
