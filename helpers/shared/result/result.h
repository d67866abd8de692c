/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* result.h: the signed result directory results/ID/{result.json,result.sig,artifacts/,log/,execs/}: staged as
 * results/.ID.tmp, made durable, then renamed into place in one step; and its verification (signature, job,
 * input, and every artifact, log and exec transcript byte against the signed digests). Format:
 * docs/result-format.md. */
#pragma once

#include <stdint.h>
#include <json-c/json.h>

#include "hash/hash.h"

#define RESULT_VERSION 1
#define RESULT_JSON_FILE "result.json"
#define RESULT_SIG_FILE "result.sig"
#define RESULT_ARTIFACTS_DIR "artifacts"
#define RESULT_LOG_DIR "log"
#define RESULT_JSON_MAX (64U << 20)
#define RESULT_SIG_MAX 256U
#define RESULT_JSON_FLAGS (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Creates the empty staging dir results_dirfd/.ID.tmp (0755) after removing a stale one from an earlier
 * crash, and returns an O_DIRECTORY fd to it in which the caller puts artifacts/ and log/. -EEXIST if the
 * final results_dirfd/ID already exists (a result is never replaced), -EINVAL for an unsafe job_id. */
int result_stage_open(int results_dirfd, const char *job_id, int *ret_staged_dirfd);

/* Removes results_dirfd/.ID.tmp recursively (never following symlinks, never leaving its parent). A missing
 * staging dir is success. Safe to call on any exit path, again and again. */
int result_stage_abort(int results_dirfd, const char *job_id);

/* Serializes result with RESULT_JSON_FLAGS plus "\n", signs exactly those bytes (Ed25519 detached, sign_sk is
 * the 64-byte secret key), writes result.json and result.sig (base64 of the signature + "\n") into the
 * staged dir, fsyncs every file and directory below it, renames .ID.tmp to ID (RENAME_NOREPLACE: -EEXIST if
 * a result appeared meanwhile) and fsyncs results_dirfd. Refuses (-EINVAL) a result whose "job_id" is not
 * job_id. On failure the staging dir is left for result_stage_abort(); ID never exists half-written. */
int result_write_signed(int results_dirfd, const char *job_id, json_object *result, const uint8_t *sign_sk,
                        int staged_dirfd);

/* Verifies the result directory dir against the pinned public key pk: the signature over the exact bytes of
 * result.json, then (parsed) version, job_id == expect_job_id and input_sha == expect_input_sha (each when
 * non-NULL), output_sha == the digest of the "artifacts" manifest, and every "file" artifact under
 * dir/artifacts having the recorded size and sha256 with no other file there; dir/log and dir/execs against
 * their signed digests (transcript_verify()), nothing unsigned beside them. Returns 0 and (if ret_result)
 * the parsed result; -EBADMSG on a refusal, another -errno on I/O failure, and in both cases (if ret_error) a
 * malloc'd message saying why. */
int result_verify(const char *dir, const uint8_t pk[32], const char *expect_job_id,
                  const char *expect_input_sha, json_object **ret_result, char **ret_error);
