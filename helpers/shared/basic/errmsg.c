/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* errmsg.c: the one way a refusal's message is made. */
#include <stdarg.h>

#include "basic/errmsg.h"
#include "basic/string-util.h"

int error_set(char **ret_error, int error, const char *fmt, ...) {
        va_list ap;
        char *m;

        if (!ret_error)
                return error;
        va_start(ap, fmt);
        m = strdupf_va(fmt, ap);
        va_end(ap);
        free(*ret_error);
        *ret_error = m;
        return error;
}
