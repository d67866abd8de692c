/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* task-sha.h: task_sha, what the job was asked to do, whatever its id and wherever its checkout lay. */
#pragma once

#include "hash/hash.h"

/* task_sha = hex(sha256(TASK_SHA_DOMAIN || sha256(task) || tree)), task being the spec parsed and serialized again by
 * json-c (members in their order, no whitespace) without job_id, checkout, bundle and credentials (the id,
 * where the checkout lay, and what was sealed to one worker), tree the checkout's tree digest as in
 * input_sha. Two runs of one task have the same task_sha; `pondctl quorum` compares results by it.
 * -EINVAL if spec is not a JSON object. */
#define TASK_SHA_DOMAIN "pond-task-v1\n"
int task_sha_compute(const char *spec, size_t spec_len, const uint8_t tree[SHA256_SIZE],
                     char ret_hex[SHA256_HEX_SIZE]);
