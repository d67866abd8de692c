/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* transcript.h: the job's exec transcript (docs/result-format.md, "The exec transcript"): every `pondctl exec`
 * into the job, recorded by the supervisor as it runs: a directory holding "index" (one JSON object per
 * line, written as each exec ends) and, per exec N, N.stdin, N.stdout and N.stderr: the bytes kept of each
 * stream, a prefix, within one budget for the whole job (the rest hashed and counted, not kept). The result
 * signs the index's digest; the index signs each stream's digest and each kept file's. Written here,
 * checked here (transcript_verify(), which result_verify() calls). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "basic/macro.h"

#define TRANSCRIPT_DIR "execs"
#define TRANSCRIPT_INDEX_FILE "index"
/* Execs one job records at most: one more is refused (an exec that would not be recorded does not run). */
#define TRANSCRIPT_EXECS_MAX 50000U
/* One index line at most (an exec's argv, cwd and env names are bounded far below: console/init-proto.h),
 * and the index at most. */
#define TRANSCRIPT_LINE_MAX (1024U * 1024)
#define TRANSCRIPT_INDEX_MAX (64U << 20)

typedef enum TranscriptStream {
        TRANSCRIPT_STDIN,
        TRANSCRIPT_STDOUT,
        TRANSCRIPT_STDERR,
        _TRANSCRIPT_STREAM_MAX,
        _TRANSCRIPT_STREAM_INVALID = -EINVAL,
} TranscriptStream;

const char *transcript_stream_to_string(TranscriptStream s) _pure_;

/* How an exec ended, besides its status. */
#define TRANSCRIPT_TIMED_OUT   (1u << 0) /* its timeout killed its process group */
#define TRANSCRIPT_TRUNCATED   (1u << 1) /* its output beyond its own cap (--max-output) was dropped before
                                          * it reached the supervisor */
#define TRANSCRIPT_NOT_STARTED (1u << 2) /* it could not be started (status 126) */
#define TRANSCRIPT_INIT_ENDED  (1u << 3) /* the job's init ended before its status came: none is recorded */

/* One exec as it was asked for. */
typedef struct TranscriptCall {
        const char *via;                /* "init" or "runtime": which path ran it */
        uid_t uid;                      /* the caller's */
        char **argv;                    /* valid UTF-8, each */
        const char *cwd;                /* NULL: the payload's */
        char **env;                     /* NAME=VALUE each: the names are recorded, the values are not */
        const void *stdin_data;
        size_t stdin_len;
        bool stdin_stream;              /* its stdin comes later, through transcript_output(TRANSCRIPT_STDIN) */
} TranscriptCall;

typedef struct Transcript Transcript;

/* Makes parent_dirfd/TRANSCRIPT_DIR afresh (an old one removed) with an empty index; cap is the bytes kept
 * of all streams of all execs together. */
int transcript_open(int parent_dirfd, uint64_t cap, Transcript **ret);
/* Records the start of an exec: its number (1, 2, ...: in the order they started) in *ret_seq, its files
 * made, its stdin hashed and kept. -EILSEQ: argv or cwd is not valid UTF-8; -ENOSPC: the transcript is full
 * (TRANSCRIPT_EXECS_MAX, TRANSCRIPT_INDEX_MAX). */
int transcript_begin(Transcript *t, const TranscriptCall *call, unsigned *ret_seq);
/* Output of exec seq as it passes (or its stdin, where the call streams it): hashed whole, kept while the
 * budget lasts. -ENOENT: seq is not running. */
int transcript_output(Transcript *t, unsigned seq, TranscriptStream s, const void *buf, size_t n);
/* Its end: status (rc, or 128 + N for signal N; < 0: none) and TRANSCRIPT_* flags; its index line written. */
int transcript_end(Transcript *t, unsigned seq, int status, uint32_t flags);
/* seq, the last begun, never ran after all: forgotten, its number given back (-EBUSY if another began
 * after it: it is then ended as not started). */
int transcript_abort(Transcript *t, unsigned seq);
/* Every exec still running ended with flags and no status. */
int transcript_end_all(Transcript *t, uint32_t flags);
bool transcript_running(const Transcript *t, unsigned seq);
/* How many execs the index holds. */
unsigned transcript_count(const Transcript *t);
/* {count, index_sha256, kept_bytes, dropped_bytes, truncated, cap_bytes}: what result.json's "execs" signs. */
int transcript_stats(const Transcript *t, json_object **ret);
/* Hard links of the index and every exec's files into dst_dirfd (the result's TRANSCRIPT_DIR). */
int transcript_link(const Transcript *t, int dst_dirfd);
/* Its files closed (the index flushed to disk); execs still running are forgotten, not ended: the caller
 * ends them first (transcript_end_all()). */
Transcript *transcript_free(Transcript *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Transcript *, transcript_free);

/* Checks dirfd/TRANSCRIPT_DIR against result's "execs" (result.json, parsed after its signature verified):
 * the index hashes to execs.index_sha256 and has execs.count lines, sequence numbers 1..count each once,
 * every kept file hashes to its line's kept_sha256 and has its size, nothing else is there, and the totals
 * add up. A result without "execs" must have no TRANSCRIPT_DIR. -EBADMSG (or another -errno) with a reason. */
int transcript_verify(int dirfd, json_object *result, char **ret_error);
