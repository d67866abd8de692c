/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* output.c: file-backed, sequenced, size-capped job output, mirrored to the journal. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "hash/hash.h"
#include "result/output.h"

static const char *const stream_table[_OUTPUT_STREAM_MAX] = {
        [OUTPUT_STDOUT] = "stdout",
        [OUTPUT_STDERR] = "stderr",
};

const char *output_stream_to_string(OutputStream s) {
        return s >= 0 && s < _OUTPUT_STREAM_MAX ? stream_table[s] : NULL;
}

int output_log_open(int log_dirfd, const char *job_id, uint64_t cap, bool forward_to_journal, OutputLog *ret) {
        OutputLog l = { .fds = { -EBADF, -EBADF }, .index_fd = -EBADF, .job_id = job_id, .cap = cap,
                        .forward_to_journal = forward_to_journal };

        for (int s = 0; s < _OUTPUT_STREAM_MAX; s++) {
                l.fds[s] = openat(log_dirfd, stream_table[s], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC |
                                  O_NOFOLLOW, 0644);
                /* 0644 whatever the umask: the job's spool entry is what keeps others out (0700, the
                 * submitter's ACL), and the result's hard links must be readable to the submitter too. */
                if (l.fds[s] < 0 || fchmod(l.fds[s], 0644) < 0)
                        goto fail;
                crypto_hash_sha256_init(&l.sha[s]);
        }
        crypto_hash_sha256_init(&l.index_sha);
        l.index_fd = openat(log_dirfd, "index", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
                            0644);
        if (l.index_fd < 0 || fchmod(l.index_fd, 0644) < 0)
                goto fail;
        *ret = l;
        return 0;
fail:;
        int r = -errno;
        output_log_close(&l);
        return r;
}

static void forward(const OutputLog *l, OutputStream s, const void *buf, size_t n) {
        char *msg = malloc(n + 8);
        char id[96], stream[32];
        struct iovec iov[5];

        if (!msg)
                return;
        memcpy(msg, "MESSAGE=", 8);
        memcpy(msg + 8, buf, n);
        snprintf(id, sizeof id, "POND_JOB_ID=%s", l->job_id);
        snprintf(stream, sizeof stream, "POND_STREAM=%s", stream_table[s]);
        iov[0] = (struct iovec) { msg, n + 8 };
        iov[1] = (struct iovec) { id, strlen(id) };
        iov[2] = (struct iovec) { stream, strlen(stream) };
        iov[3] = (struct iovec) { (char *) "SYSLOG_IDENTIFIER=pond-job", strlen("SYSLOG_IDENTIFIER=pond-job") };
        iov[4] = s == OUTPUT_STDERR ? (struct iovec) { (char *) "PRIORITY=4", 10 }
                                    : (struct iovec) { (char *) "PRIORITY=6", 10 };
        (void) sd_journal_sendv(iov, 5);
        free(msg);
}

int output_log_append(OutputLog *l, OutputStream s, const void *buf, size_t n) {
        uint64_t used = l->kept[OUTPUT_STDOUT] + l->kept[OUTPUT_STDERR];
        size_t keep = used >= l->cap ? 0 : (size_t) (l->cap - used < n ? l->cap - used : n);
        struct timespec ts;
        char line[128];
        int r;

        l->offered[s] += n;
        if (keep == 0)
                return 0;
        r = write_all(l->fds[s], buf, keep);
        if (r < 0)
                return r;
        crypto_hash_sha256_update(&l->sha[s], buf, keep);
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(line, sizeof line, "%llu %s %llu %zu %llu\n", (unsigned long long) ++l->seq, stream_table[s],
                 (unsigned long long) l->kept[s], keep,
                 (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000);
        l->kept[s] += keep;
        r = write_all(l->index_fd, line, strlen(line));
        if (r < 0)
                return r;
        crypto_hash_sha256_update(&l->index_sha, (const uint8_t *) line, strlen(line));
        if (l->forward_to_journal)
                forward(l, s, buf, keep);
        return 0;
}

int output_log_stats(OutputLog *l, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        uint64_t kept = l->kept[0] + l->kept[1], offered = l->offered[0] + l->offered[1];

        if (!o)
                return -ENOMEM;
        for (int s = 0; s < _OUTPUT_STREAM_MAX; s++) {
                crypto_hash_sha256_state copy = l->sha[s];
                uint8_t d[SHA256_SIZE];
                char hex[SHA256_HEX_SIZE], key[32];

                crypto_hash_sha256_final(&copy, d);
                hex_encode(d, sizeof d, hex);
                snprintf(key, sizeof key, "%s_bytes", stream_table[s]);
                json_object_object_add(o, key, json_object_new_uint64(l->offered[s]));
                snprintf(key, sizeof key, "%s_sha256", stream_table[s]);
                json_object_object_add(o, key, json_object_new_string(hex));
        }
        crypto_hash_sha256_state copy = l->index_sha;
        uint8_t d[SHA256_SIZE];
        char hex[SHA256_HEX_SIZE];
        crypto_hash_sha256_final(&copy, d);
        hex_encode(d, sizeof d, hex);
        json_object_object_add(o, "index_sha256", json_object_new_string(hex));
        json_object_object_add(o, "kept_bytes", json_object_new_uint64(kept));
        json_object_object_add(o, "dropped_bytes", json_object_new_uint64(offered - kept));
        json_object_object_add(o, "truncated", json_object_new_boolean(offered > kept));
        json_object_object_add(o, "chunks", json_object_new_uint64(l->seq));
        json_object_object_add(o, "cap_bytes", json_object_new_uint64(l->cap));
        *ret = TAKE_PTR(o);
        return 0;
}

void output_log_close(OutputLog *l) {
        for (int s = 0; s < _OUTPUT_STREAM_MAX; s++) {
                if (l->fds[s] >= 0)
                        (void) fsync(l->fds[s]);
                l->fds[s] = safe_close(l->fds[s]);
        }
        l->index_fd = safe_close(l->index_fd);
}
