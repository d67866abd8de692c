/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-escape.h: what pondctl prints for a human from a string it did not choose: a result's fields (artifact
 * paths are the payload's file names), a spec's, a refusal reason quoting them, a unit's status text, a
 * worker's answer over ssh. Such strings stay raw inside pondctl and are escaped at the terminal, once: a
 * C0 control, DEL and a backslash as \x1b-style (\\ for the backslash), a C1 control (U+0080..U+009F as
 * UTF-8) as \u009b, and every byte that is not part of well-formed UTF-8 as \x9b; everything else (printable
 * ASCII and UTF-8 from U+00A0 on) as itself. So nothing a job names can move the cursor, erase a line, set
 * the clipboard (OSC 52) or forge an "OK", and the escaped text still says exactly which bytes were there.
 * --json output is not escaped here: json-c writes C0 controls as \u00XX and the bytes are the signed ones.
 * attach and logs relay the job's own output, raw by design. */
#pragma once

#include <stdarg.h>
#include <stdio.h>

#include "basic/log.h"
#include "basic/macro.h"

/* Escapes s[0..n) (any bytes, NUL included) into out, which holds CTL_ESCAPE_SIZE(n) bytes, NUL-terminated;
 * returns the length written. */
#define CTL_ESCAPE_SIZE(n) (4 * (n) + 1)
size_t ctl_escape_buf(char *out, const void *s, size_t n);
/* A malloc'd copy of s escaped as above ("(null)" for NULL). -ENOMEM. */
int ctl_escape(const char *s, char **ret);

/* printf(3) whose every %s and %c argument is escaped as above (a precision counts bytes of the raw string,
 * a width bytes of the escaped one); the format itself is trusted and printed as it is. %m prints
 * strerror(errno). -EINVAL for a conversion pondctl never uses (%n, %ls, %lc), -ENOMEM. */
int ctl_vasprintf_untrusted(char **ret, const char *fmt, va_list ap) _printf_(2, 0);
int ctl_asprintf_untrusted(char **ret, const char *fmt, ...) _printf_(2, 3);
/* To f; returns what fputs(3) does, or -errno without printing anything. */
int ctl_fprintf_untrusted(FILE *f, const char *fmt, ...) _printf_(2, 3);
#define ctl_printf_untrusted(...) ctl_fprintf_untrusted(stdout, __VA_ARGS__)

/* log_full_errno() with the message formatted by ctl_vasprintf_untrusted() (%m is strerror(error)); returns
 * -abs(error) as log_*_errno() does. */
int ctl_log_untrusted(int level, int error, const char *fmt, ...) _printf_(3, 4);
#define ctl_log_error_untrusted(...) ctl_log_untrusted(LOG_ERR, 0, __VA_ARGS__)
#define ctl_log_error_errno_untrusted(error, ...) ctl_log_untrusted(LOG_ERR, (error), __VA_ARGS__)
/* ctl_fail() and ctl_fail_errno() (ctl.h) for messages that quote what the caller did not choose. */
#define ctl_fail_untrusted(status, ...) (ctl_log_untrusted(LOG_ERR, 0, __VA_ARGS__), (status))
#define ctl_fail_errno_untrusted(status, error, ...) (ctl_log_untrusted(LOG_ERR, (error), __VA_ARGS__), (status))
