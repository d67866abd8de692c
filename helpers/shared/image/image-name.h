/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image-name.h: how an image is named: "sha256:<64 hex>" digests and repo[:tag] names. No dependencies, so
 * that policy.c (and its fuzz target) can check the image knob without the store. */
#pragma once

#include <stdbool.h>

#define DIGEST_PREFIX "sha256:"
#define DIGEST_HEX_LEN 64
#define DIGEST_SIZE (sizeof(DIGEST_PREFIX) - 1 + DIGEST_HEX_LEN + 1)
#define IMAGE_REF_MAX 255

/* "sha256:" and 64 lowercase hex digits: the only digest form the store takes (no other algorithm). */
bool digest_is_valid(const char *s);
/* The 64 hex digits of a valid digest (its file name in the store). */
static inline const char *digest_hex(const char *digest) {
        return digest + sizeof(DIGEST_PREFIX) - 1;
}

/* repo[:tag] ([a-z0-9][a-z0-9._/_-]* and [A-Za-z0-9_][A-Za-z0-9_.-]*, at most 255 bytes in all; no "//",
 * "..", trailing '/', and never "sha256:..."). */
bool image_name_is_valid(const char *s);
/* A name or "sha256:<64 hex>". */
bool image_ref_is_valid(const char *s);
/* The name with ":latest" added when it has no tag. */
int image_name_normalise(const char *s, char **ret);
