/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bundle-path.c: the lexical rules for paths inside a bundle: entry names and symlink targets. They are the
 * first line only: extraction also resolves every path with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, so a rule
 * missed here still cannot write outside the destination. */
#include <limits.h>
#include <string.h>

#include "basic/errmsg.h"
#include "secrets/bundle.h"

int bundle_path_normalize(const char *path, size_t max_path, char **ret, char **ret_error) {
        _cleanup_free_ char *out = NULL;
        size_t len = strlen(path), n = 0, depth = 0;

        if (len > max_path)
                return error_set(ret_error, -E2BIG, "bundle entry path: %zu bytes, more than %zu", len,
                                 max_path);
        if (path[0] == '/')
                return error_set(ret_error, -EBADMSG, "bundle entry '%s': absolute path", path);
        out = malloc(len + 1);
        if (!out)
                return -ENOMEM;
        for (const char *p = path; *p;) {
                size_t k = strcspn(p, "/");

                if (k == 2 && p[0] == '.' && p[1] == '.')
                        return error_set(ret_error, -EBADMSG, "bundle entry '%s': '..' component", path);
                if (k > NAME_MAX)
                        return error_set(ret_error, -E2BIG, "bundle entry '%s': component longer than %d",
                                         path, NAME_MAX);
                if (k > 0 && !(k == 1 && p[0] == '.')) {
                        /* Deeper trees are what tree_digest() and rm_rf_at() refuse to walk. */
                        if (++depth > TREE_MAX_DEPTH)
                                return error_set(ret_error, -E2BIG, "bundle entry '%s': deeper than %u",
                                                 path, TREE_MAX_DEPTH);
                        if (n > 0)
                                out[n++] = '/';
                        memcpy(out + n, p, k);
                        n += k;
                }
                p += k;
                p += strspn(p, "/");
        }
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

/* The number of directories above the link: components of its canonical path minus one. */
static size_t link_depth(const char *link_path) {
        size_t d = 0;

        for (const char *p = link_path; *p; p++)
                if (*p == '/')
                        d++;
        return d;
}

int bundle_link_target_check(const char *link_path, const char *target, char **ret_error) {
        size_t depth = link_depth(link_path), len = strlen(target);
        bool named = false;

        if (len == 0 || len >= PATH_MAX)
                return error_set(ret_error, -EBADMSG, "symlink '%s': target empty or longer than %d",
                                 link_path, PATH_MAX - 1);
        if (target[0] == '/')
                return error_set(ret_error, -EBADMSG, "symlink '%s' -> '%s': absolute target", link_path,
                                 target);
        for (const char *p = target; *p;) {
                size_t k = strcspn(p, "/");

                if (k == 2 && p[0] == '.' && p[1] == '.') {
                        if (named)
                                return error_set(ret_error, -EBADMSG, "symlink '%s' -> '%s': '..' after a "
                                                 "name (only leading '..' are allowed)", link_path, target);
                        if (depth == 0)
                                return error_set(ret_error, -EBADMSG, "symlink '%s' -> '%s': points outside "
                                                 "the tree", link_path, target);
                        depth--;
                } else if (k > 0 && !(k == 1 && p[0] == '.'))
                        named = true;
                p += k;
                p += strspn(p, "/");
        }
        return 0;
}
