/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* copy.h: `pondctl cp` on the console socket (docs/job-spec.md, "Copying files"): the request a caller sends
 * (CONSOLE_COPY), and the rule the supervisor applies to its path before the job's init is asked anything:
 * absolute, normalized, strictly below one of the job's writable roots. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The most one copy moves, either way (pond-init's FILES_SIZE_MAX is the same). */
#define CONSOLE_COPY_MAX (64ULL * 1024 * 1024)
#define CONSOLE_COPY_PATH_MAX 4096

typedef struct ConsoleCopyRequest {
        bool put;               /* into the job (its bytes follow: CONSOLE_INPUT packets, CONSOLE_EOF) */
        char *path;             /* in the job */
        uint32_t mode;          /* put: the file's permission bits, 0..0777 */
        uint64_t size;          /* put: the bytes that follow, 0..CONSOLE_COPY_MAX */
} ConsoleCopyRequest;

void console_copy_request_done(ConsoleCopyRequest *r);
/* "put" or "get", "path=PATH", and for put "mode=OCTAL" and "size=N", as NUL-terminated strings. */
int console_pack_copy(const ConsoleCopyRequest *r, char **ret, size_t *ret_len);
/* Every field checked (the path only for its length and for being absolute: copy_path_check() decides);
 * -EBADMSG or -E2BIG with *ret_error (static text) naming the field. */
int console_unpack_copy(const char *buf, size_t len, ConsoleCopyRequest *ret, const char **ret_error);

/* Whether path is absolute, without empty, "." or ".." components or a trailing slash, and strictly below one
 * of roots (a NULL-terminated list of such paths): 0 and that root in *ret_root, or -EINVAL with
 * *ret_error (static text) saying which rule it breaks. */
int copy_path_check(const char *path, char *const *roots, const char **ret_root, const char **ret_error);
