/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* names.h: the two checks the supervisor and the job's init both make of what a caller names, so that the
 * two ends agree: an environment assignment (NAME=VALUE, NAME a C identifier) and a normalized absolute
 * path. Header only: pond-init is static and links no shared component. */
#pragma once

#include <stdbool.h>
#include <string.h>

static inline bool env_assignment_ok(const char *e) {
        const char *eq = strchr(e, '=');

        if (!eq || eq == e)
                return false;
        for (const char *c = e; c < eq; c++)
                if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || *c == '_' ||
                      (c > e && *c >= '0' && *c <= '9')))
                        return false;
        return true;
}

/* path starts with "/": no empty, "." or ".." component after it, no trailing slash. */
static inline bool path_normalized(const char *path) {
        for (const char *c = path + 1;; ) {
                const char *e = strchrnul(c, '/');
                size_t k = (size_t) (e - c);

                if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!*e)
                        return true;
                c = e + 1;
        }
}
