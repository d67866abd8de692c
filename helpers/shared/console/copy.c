/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* copy.c: the copy request on the console socket and its path rule (copy.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "console/console.h"
#include "console/copy.h"
#include "console/names.h"

void console_copy_request_done(ConsoleCopyRequest *r) {
        free(r->path);
        *r = (ConsoleCopyRequest) {};
}

int console_pack_copy(const ConsoleCopyRequest *r, char **ret, size_t *ret_len) {
        _cleanup_free_ char *path = NULL, *mode = NULL, *size = NULL;
        char *l[5] = { (char *) (r->put ? "put" : "get") };

        if (!r->path || strlen(r->path) >= CONSOLE_COPY_PATH_MAX || r->mode > 0777 || r->size > CONSOLE_COPY_MAX)
                return -E2BIG;
        if (asprintf(&path, "path=%s", r->path) < 0 || asprintf(&mode, "mode=%" PRIo32, r->mode) < 0 ||
            asprintf(&size, "size=%" PRIu64, r->size) < 0)
                return -ENOMEM;
        l[1] = path;
        if (r->put) {
                l[2] = mode;
                l[3] = size;
        }
        return console_pack_argv(l, ret, ret_len);
}

static int parse_u64(const char *s, int base, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (*s < '0' || *s > '9')
                return -EBADMSG;
        errno = 0;
        v = strtoull(s, &end, base);
        if (errno || *end || v > max)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int console_unpack_copy(const char *buf, size_t len, ConsoleCopyRequest *ret, const char **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        ConsoleCopyRequest r = {};
        uint64_t mode = 0, size = 0;
        size_t n;

        if (console_unpack_argv(buf, len, &l) < 0)
                return *ret_error = "copy request: malformed", -EBADMSG;
        n = strv_length(l);
        r.put = streq(l[0], "put");
        if ((!r.put && !streq(l[0], "get")) || n != (r.put ? 4u : 2u))
                return *ret_error = "copy request: \"put\" with path, mode and size, or \"get\" with a path", -EBADMSG;
        if (strncmp(l[1], "path=", 5) != 0 || l[1][5] != '/')
                return *ret_error = "copy request: path: an absolute path", -EBADMSG;
        if (strlen(l[1] + 5) >= CONSOLE_COPY_PATH_MAX)
                return *ret_error = "copy request: path: too long", -E2BIG;
        if (r.put && (strncmp(l[2], "mode=", 5) != 0 || parse_u64(l[2] + 5, 8, 0777, &mode) < 0))
                return *ret_error = "copy request: mode: octal, 0 to 0777", -EBADMSG;
        if (r.put && (strncmp(l[3], "size=", 5) != 0 || parse_u64(l[3] + 5, 10, UINT64_MAX, &size) < 0))
                return *ret_error = "copy request: size: a number of bytes", -EBADMSG;
        if (size > CONSOLE_COPY_MAX)
                return *ret_error = "copy request: size: beyond the 64 MiB a copy takes at most", -E2BIG;
        r.path = strdup(l[1] + 5);
        if (!r.path)
                return -ENOMEM;
        r.mode = (uint32_t) mode;
        r.size = size;
        *ret = r;
        return 0;
}


int copy_path_check(const char *path, char *const *roots, const char **ret_root, const char **ret_error) {
        if (!path || path[0] != '/')
                return *ret_error = "not an absolute path", -EINVAL;
        if (strlen(path) >= CONSOLE_COPY_PATH_MAX)
                return *ret_error = "too long", -EINVAL;
        if (!path_normalized(path))
                return *ret_error = "not normalized (an empty, \".\" or \"..\" component, or a trailing slash)",
                       -EINVAL;
        for (char *const *r = roots; r && *r; r++) {
                size_t n = strlen(*r);

                if (strncmp(path, *r, n) == 0 && path[n] == '/' && path[n + 1]) {
                        *ret_root = *r;
                        return 0;
                }
        }
        return *ret_error = "not below one of the job's writable directories", -EINVAL;
}
