/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-strict.h: json-c with the checks json-c itself does not make: duplicate keys, embedded NUL,
 * size and depth caps, trailing garbage, invalid UTF-8. */
#pragma once

#include <stddef.h>
#include <json-c/json.h>

#define JSON_STRICT_MAX_BYTES (1024 * 1024)
#define JSON_STRICT_MAX_DEPTH 16

/* Parses buf[0..len) as exactly one JSON value (RFC 8259; whitespace around it allowed) nested at most
 * max_depth containers deep ("[]" is 1, "[[1]]" 2). The value null yields *ret == NULL. On failure returns
 * -EINVAL (or -E2BIG, -ENOMEM) and, if ret_error is not NULL, a malloc'd human-readable reason (naming the
 * byte offset or key). Beyond json-c's own checks it refuses: more than max_bytes, NUL bytes, ill-formed
 * UTF-8 (overlongs, surrogates, > U+10FFFF), duplicate keys anywhere, "\u0000", unpaired surrogate
 * escapes, raw control characters in strings, and the non-JSON json-c takes (NaN, Infinity, "1.", single
 * quotes, trailing data). */
int json_parse_strict(const char *buf, size_t len, size_t max_bytes, int max_depth, json_object **ret,
                      char **ret_error);

/* A malloc'd copy of s that is safe inside a message in single quotes: printable ASCII kept, anything
 * else (and ' and \) as \xNN, cut after 64 bytes with "...". NULL on OOM. */
char *json_printable(const char *s);
