/* json-strict.h: json-c with the checks json-c itself does not make: duplicate keys, embedded NUL,
 * size and depth caps, trailing garbage, invalid UTF-8. */
#pragma once

#include <stddef.h>
#include <json-c/json.h>

#define JSON_STRICT_MAX_BYTES (1024 * 1024)
#define JSON_STRICT_MAX_DEPTH 16

/* Parses buf[0..len) as exactly one JSON value. On failure returns -EINVAL (or -E2BIG, -ENOMEM) and, if
 * ret_error is not NULL, a malloc'd human-readable reason (naming the offset or key). */
int json_parse_strict(const char *buf, size_t len, size_t max_bytes, int max_depth, json_object **ret,
                      char **ret_error);
