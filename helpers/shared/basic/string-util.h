/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* string-util.h: formatted copies (the one place vasprintf's format is passed on), path joining and strict
 * UTF-8 validity, shared by every module that builds messages, paths or JSON strings. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

/* A malloc'd formatted string, or NULL without memory. */
char *strdupf(const char *fmt, ...) _printf_(1, 2);
char *strdupf_va(const char *fmt, va_list ap) _printf_(1, 0);

/* "prefix/name", or a copy of name when prefix is NULL (the top of a walk). NULL without memory. */
char *path_join(const char *prefix, const char *name);

/* The length of the longest prefix of s[0..len) that is well-formed UTF-8 (Unicode 15, table 3-7: no
 * overlongs, no surrogates, nothing above U+10FFFF); len if all of it is. NUL bytes count as valid. */
size_t utf8_valid_prefix(const char *s, size_t len);
static inline bool utf8_is_valid(const char *s) {
        size_t n = strlen(s);
        return utf8_valid_prefix(s, n) == n;
}
