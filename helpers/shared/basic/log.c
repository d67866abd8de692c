/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* log.c: stderr logging with errno-carrying return values (systemd's log_*_errno convention). Under a unit
 * whose stderr is the journal, every line carries its syslog priority as a "<N>" prefix, which journald
 * turns into PRIORITY= (so `journalctl -p err` finds pond's errors); anywhere else lines are plain. */
#include <string.h>
#include <sys/stat.h>

#include "basic/log.h"

static int max_level = LOG_INFO;
static const char *prefix;
static int stderr_journal = -1; /* not looked at yet */

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_set_prefix(const char *p) {
        prefix = p;
}

/* systemd connects a unit's stderr to the journal and names that stream in JOURNAL_STREAM ("DEV:INO").
 * Only while stderr is still that stream does a prefix reach journald rather than a terminal, a file or
 * a pipe someone else reads (as systemd's own log.c decides). Looked at once. */
static bool stderr_is_journal(void) {
        unsigned long long dev, ino;
        const char *e;
        struct stat st;

        if (stderr_journal >= 0)
                return stderr_journal;
        e = getenv("JOURNAL_STREAM");
        stderr_journal = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) >= 0 &&
                         (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
        return stderr_journal;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved = errno;
        char buf[4096], pri[8] = "";
        va_list ap;

        if (error < 0)
                error = -error;
        if (level > max_level)
                return -error;

        /* %m prints the error we were handed, not whatever errno happens to be. */
        errno = error;
        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(buf, sizeof buf, fmt, ap);
#pragma GCC diagnostic pop
        va_end(ap);

        if (stderr_is_journal())
                snprintf(pri, sizeof pri, "<%d>", LOG_PRI(level));
        if (level == LOG_DEBUG)
                fprintf(stderr, "%s%s%s(%s:%d) %s\n", pri, prefix ?: "", prefix ? ": " : "", file, line, buf);
        else
                fprintf(stderr, "%s%s%s%s\n", pri, prefix ?: "", prefix ? ": " : "", buf);
        errno = saved;
        return -error;
}
