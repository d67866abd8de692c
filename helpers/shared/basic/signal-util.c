/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* signal-util.c: signal masks built from a list. */
#include <errno.h>
#include <stdarg.h>

#include "basic/macro.h"
#include "basic/signal-util.h"

int sigprocmask_many(int how, sigset_t *ret_old, ...) {
        sigset_t mask;
        va_list ap;
        int r = 0;

        sigemptyset(&mask);
        va_start(ap, ret_old);
        for (int sig = va_arg(ap, int); sig >= 0 && r >= 0; sig = va_arg(ap, int))
                r = RET_NERRNO(sigaddset(&mask, sig));
        va_end(ap);
        if (r < 0)
                return r;
        return RET_NERRNO(sigprocmask(how, &mask, ret_old));
}
