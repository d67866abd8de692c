/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* log.h: one way to report. Helpers log once at the top and return; library code logs at debug at most.
 * Every message goes to stderr (which systemd forwards to the journal for units; there each line carries
 * its "<N>" syslog priority, see log.c). Structured audit records (POND_EVENT=...) go to the journal
 * directly through pond_event() in audit.h. */
#pragma once

#include <stdarg.h>
#include <syslog.h>

#include "basic/macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_prefix(const char *prefix);

/* Logs at the given level and returns -abs(error) (or 0 for error == 0); %m prints strerror(error). */
int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

#define log_full_errno(level, error, ...) log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)
#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
