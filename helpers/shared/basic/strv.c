/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* strv.c: NULL-terminated string vectors (argv, environments). */
#include <stdarg.h>
#include <string.h>

#include "basic/strv.h"

int strv_build(char ***ret, ...) {
        size_t n = 0;
        char **v;
        va_list ap;

        va_start(ap, ret);
        while (va_arg(ap, const char *))
                n++;
        va_end(ap);
        v = calloc(n + 1, sizeof *v);
        if (!v)
                return -ENOMEM;
        va_start(ap, ret);
        for (size_t i = 0; i < n; i++)
                if (!(v[i] = strdup(va_arg(ap, const char *)))) {
                        va_end(ap);
                        strv_freep(&v);
                        return -ENOMEM;
                }
        va_end(ap);
        *ret = v;
        return 0;
}

char **strv_free(char **l) {
        strv_freep(&l);
        return NULL;
}

int strv_push(char ***l, char *v) {
        size_t n = strv_length(*l);
        char **nl;

        if (!v)
                return -ENOMEM;
        nl = realloc(*l, (n + 2) * sizeof(char *));
        if (!nl) {
                free(v);
                return -ENOMEM;
        }
        nl[n] = v;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_add_unique(char ***l, const char *s) {
        size_t n = 0;
        char **t;

        for (; *l && (*l)[n]; n++)
                if (streq((*l)[n], s))
                        return 0;
        t = realloc(*l, (n + 2) * sizeof *t);
        if (!t)
                return -ENOMEM;
        *l = t;
        t[n] = strdup(s);
        t[n + 1] = NULL;
        return t[n] ? 0 : -ENOMEM;
}
