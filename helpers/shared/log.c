/* log.c: stderr logging with errno-carrying return values (systemd's log_*_errno convention). */
#include <string.h>

#include "log.h"

static int max_level = LOG_INFO;
static const char *prefix;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_set_prefix(const char *p) {
        prefix = p;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved = errno;
        char buf[4096];
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

        if (level == LOG_DEBUG)
                fprintf(stderr, "%s%s(%s:%d) %s\n", prefix ?: "", prefix ? ": " : "", file, line, buf);
        else
                fprintf(stderr, "%s%s%s\n", prefix ?: "", prefix ? ": " : "", buf);
        errno = saved;
        return -error;
}
