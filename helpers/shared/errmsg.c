/* errmsg.c: the one way a refusal's message is made. */
#include <stdarg.h>

#include "errmsg.h"

int error_set(char **ret_error, int error, const char *fmt, ...) {
        va_list ap;
        char *m = NULL;

        if (!ret_error)
                return error;
        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
#pragma GCC diagnostic pop
        va_end(ap);
        free(*ret_error);
        *ret_error = m;
        return error;
}
