/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* output.h: the job's stdout/stderr as they arrive: appended to files (a killed job keeps what it printed),
 * indexed as sequenced chunks, capped at output_bytes (the excess counted, not kept), forwarded to the
 * journal. Layout under the log dir: stdout, stderr, index ("seq stream offset length usec" per chunk). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sodium.h>
#include <json-c/json.h>

typedef enum OutputStream {
        OUTPUT_STDOUT,
        OUTPUT_STDERR,
        _OUTPUT_STREAM_MAX,
} OutputStream;

typedef struct OutputLog {
        int fds[_OUTPUT_STREAM_MAX];
        int index_fd;
        const char *job_id;
        uint64_t cap;
        uint64_t seq;
        uint64_t offered[_OUTPUT_STREAM_MAX]; /* bytes the job wrote */
        uint64_t kept[_OUTPUT_STREAM_MAX];    /* bytes kept (within the cap) */
        crypto_hash_sha256_state sha[_OUTPUT_STREAM_MAX];
        crypto_hash_sha256_state index_sha;   /* of the index file as written: signed like the streams */
        bool forward_to_journal;
} OutputLog;

int output_log_open(int log_dirfd, const char *job_id, uint64_t cap, bool forward_to_journal, OutputLog *ret);
int output_log_append(OutputLog *l, OutputStream s, const void *buf, size_t n);
/* {stdout_bytes, stderr_bytes, kept_bytes, dropped_bytes, truncated, chunks, stdout_sha256, stderr_sha256,
 *  index_sha256}: each digest is of the file in the log dir as written. */
int output_log_stats(OutputLog *l, json_object **ret);
void output_log_close(OutputLog *l);
const char *output_stream_to_string(OutputStream s);
