/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image-name.c: owns the grammar of image names and digests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "image/image-name.h"

bool digest_is_valid(const char *s) {
        if (!s || strncmp(s, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) != 0)
                return false;
        s += strlen(DIGEST_PREFIX);
        return strlen(s) == DIGEST_HEX_LEN && strspn(s, "0123456789abcdef") == DIGEST_HEX_LEN;
}

static bool tag_is_valid(const char *t) {
        size_t n = strlen(t);
        return n > 0 && n <= 128 && strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_", t[0]) &&
               strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

bool image_name_is_valid(const char *s) {
        const char *colon;
        size_t n = s ? strlen(s) : 0, repo;

        /* "sha256:..." is a digest or nothing: never a name that looks like one */
        if (n == 0 || n > IMAGE_REF_MAX || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0]) ||
            strncmp(s, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) == 0)
                return false;
        colon = strrchr(s, ':');
        repo = colon ? (size_t) (colon - s) : n;
        if (strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._/-_") != repo || strstr(s, "//") || strstr(s, "..") ||
            s[repo - 1] == '/')
                return false;
        return !colon || tag_is_valid(colon + 1);
}

bool image_ref_is_valid(const char *s) {
        return digest_is_valid(s) || image_name_is_valid(s);
}

int image_name_normalise(const char *s, char **ret) {
        char *n;

        if (!image_name_is_valid(s))
                return -EINVAL;
        n = strchr(s, ':') ? strdup(s) : (asprintf(&n, "%s:latest", s) < 0 ? NULL : n);
        if (!n)
                return -ENOMEM;
        if (strlen(n) > IMAGE_REF_MAX) {
                free(n);
                return -EINVAL;
        }
        *ret = n;
        return 0;
}
