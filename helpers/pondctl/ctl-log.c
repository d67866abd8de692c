/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-log.c: reading a job's log as the supervisor writes it (output.h): the index says which stream got
 * which bytes in which order, so following the index and copying each chunk from its file replays stdout
 * and stderr interleaved exactly as the job produced them. The index line is written after its bytes, so a
 * complete line always refers to data already on disk. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "ctl.h"
#include "result/result.h"

/* One decimal field ending at a space or at end; no sign, no leading '+', at most 20 digits. */
static int parse_u64(const char **p, const char *end, uint64_t *ret) {
        uint64_t v = 0;
        const char *s = *p;

        if (s >= end || *s < '0' || *s > '9')
                return -EINVAL;
        for (; s < end && *s >= '0' && *s <= '9'; s++) {
                unsigned d = (unsigned) (*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *p = s;
        *ret = v;
        return 0;
}

static int expect_space(const char **p, const char *end) {
        if (*p >= end || **p != ' ')
                return -EINVAL;
        (*p)++;
        return 0;
}

int ctl_index_line_parse(const char *line, size_t len, CtlIndexEntry *ret) {
        const char *p = line, *end = line + len;
        CtlIndexEntry e = {};
        size_t n;
        int r;

        if (len > 0 && line[len - 1] == '\n')
                end--;
        r = parse_u64(&p, end, &e.seq);
        if (r >= 0)
                r = expect_space(&p, end);
        if (r < 0)
                return -EINVAL;
        /* The line is not NUL-terminated: scan only up to end. */
        for (n = 0; p + n < end && p[n] != ' '; n++)
                ;
        e.stream = _OUTPUT_STREAM_MAX;
        for (int s = 0; s < _OUTPUT_STREAM_MAX; s++) {
                const char *name = output_stream_to_string(s);
                if (strlen(name) == n && strncmp(p, name, n) == 0)
                        e.stream = s;
        }
        if (e.stream == _OUTPUT_STREAM_MAX)
                return -EINVAL;
        p += n;
        r = expect_space(&p, end);
        if (r >= 0)
                r = parse_u64(&p, end, &e.offset);
        if (r >= 0)
                r = expect_space(&p, end);
        if (r >= 0)
                r = parse_u64(&p, end, &e.length);
        if (r >= 0)
                r = expect_space(&p, end);
        if (r >= 0)
                r = parse_u64(&p, end, &e.usec);
        if (r < 0 || p != end || e.offset + e.length < e.offset)
                return -EINVAL;
        *ret = e;
        return 0;
}

int ctl_log_follower_init(CtlLogFollower *f, const char *log_dir, int out_fd, int err_fd) {
        *f = (CtlLogFollower) { .index_fd = -EBADF, .fds = { -EBADF, -EBADF }, .out = { out_fd, err_fd } };
        crypto_hash_sha256_init(&f->index_sha);
        f->dir = strdup(log_dir);
        return f->dir ? 0 : -ENOMEM;
}

void ctl_log_follower_done(CtlLogFollower *f) {
        free(f->dir);
        safe_close(f->index_fd);
        for (int s = 0; s < _OUTPUT_STREAM_MAX; s++)
                safe_close(f->fds[s]);
        *f = (CtlLogFollower) { .index_fd = -EBADF, .fds = { -EBADF, -EBADF }, .out = { -EBADF, -EBADF } };
}

static int open_in_dir(const char *dir, const char *name) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        return RET_NERRNO(open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY));
}

static int copy_chunk(CtlLogFollower *f, const CtlIndexEntry *e) {
        uint64_t done = 0;
        char buf[65536];

        if (f->fds[e->stream] < 0) {
                f->fds[e->stream] = open_in_dir(f->dir, output_stream_to_string(e->stream));
                if (f->fds[e->stream] < 0)
                        return f->fds[e->stream];
        }
        while (done < e->length) {
                size_t want = e->length - done < sizeof buf ? (size_t) (e->length - done) : sizeof buf;
                ssize_t n = pread(f->fds[e->stream], buf, want, (off_t) (e->offset + done));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EBADMSG; /* the index names bytes the file does not have */
                /* A reader that went away (EPIPE) stops the copy of that stream, not the wait. */
                if (f->out[e->stream] >= 0 && write_all(f->out[e->stream], buf, (size_t) n) < 0)
                        f->out[e->stream] = -EBADF;
                done += (uint64_t) n;
        }
        return 0;
}

static int consume_line(CtlLogFollower *f) {
        CtlIndexEntry e;
        int r;

        r = ctl_index_line_parse(f->line, f->line_len, &e);
        f->line_len = 0;
        if (r < 0)
                return -EBADMSG;
        f->chunks++;
        return copy_chunk(f, &e);
}

int ctl_log_follower_drain(CtlLogFollower *f) {
        char buf[16384];
        int r;

        if (f->index_fd < 0) {
                f->index_fd = open_in_dir(f->dir, "index");
                if (f->index_fd == -ENOENT)
                        return 0; /* not launched yet, or nothing was ever printed */
                if (f->index_fd < 0)
                        return f->index_fd;
        }
        for (;;) {
                ssize_t n = read(f->index_fd, buf, sizeof buf);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                f->index_read += (uint64_t) n;
                crypto_hash_sha256_update(&f->index_sha, (const unsigned char *) buf, (size_t) n);
                for (ssize_t i = 0; i < n; i++) {
                        if (f->line_len >= sizeof f->line)
                                return -EBADMSG;
                        f->line[f->line_len++] = buf[i];
                        if (buf[i] != '\n')
                                continue;
                        r = consume_line(f);
                        if (r < 0)
                                return r;
                }
        }
}

int ctl_log_follower_switch(CtlLogFollower *f, const char *log_dir) {
        unsigned char want[crypto_hash_sha256_BYTES], got[crypto_hash_sha256_BYTES];
        crypto_hash_sha256_state copy = f->index_sha, sha;
        _cleanup_close_ int fd = -EBADF;
        uint64_t done = 0;
        char buf[16384], *dir;

        if (f->index_read > 0) {
                fd = open_in_dir(log_dir, "index");
                if (fd < 0)
                        return fd == -ENOENT ? -EBADMSG : fd;
                crypto_hash_sha256_init(&sha);
                while (done < f->index_read) {
                        size_t want_n = f->index_read - done < sizeof buf ? (size_t) (f->index_read - done) :
                                                                             sizeof buf;
                        ssize_t n = read(fd, buf, want_n);

                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return -errno;
                        if (n == 0)
                                return -EBADMSG; /* shorter than what was already shown */
                        crypto_hash_sha256_update(&sha, (const unsigned char *) buf, (size_t) n);
                        done += (uint64_t) n;
                }
                crypto_hash_sha256_final(&copy, want);
                crypto_hash_sha256_final(&sha, got);
                if (sodium_memcmp(want, got, sizeof want) != 0)
                        return -EBADMSG;
        }
        dir = strdup(log_dir);
        if (!dir)
                return -ENOMEM;
        free(f->dir);
        f->dir = dir;
        safe_close(f->index_fd);
        f->index_fd = TAKE_FD(fd); /* -EBADF if nothing was read yet: opened by the next drain */
        for (int s = 0; s < _OUTPUT_STREAM_MAX; s++)
                f->fds[s] = safe_close(f->fds[s]);
        return 0;
}

int ctl_job_log_dir(const JobPaths *p, const char *job_id, char **ret) {
        char *d;

        if (asprintf(&d, "%s/log", p->spool) < 0)
                return -ENOMEM;
        if (access(d, F_OK) >= 0) {
                *ret = d;
                return 0;
        }
        free(d);
        if (asprintf(&d, "%s/%s/%s", p->results, job_id, RESULT_LOG_DIR) < 0)
                return -ENOMEM;
        *ret = d;
        return 0;
}
