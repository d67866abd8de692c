/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tags.c: the routing tags: their form, the ones a resolved job requires (byo only when asked for and only
 * for a named tenant), and whether a worker's tags carry them. */
#include <stdio.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/strv.h"
#include "policy/tags.h"

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

bool tag_tenant_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > TAG_TENANT_MAX || !strchr(ALNUM, s[0]))
                return false;
        return strspn(s, ALNUM "_.-") == n;
}

bool tag_is_valid(const char *s) {
        const char *colon = s ? strchr(s, ':') : NULL;
        size_t k = colon ? (size_t) (colon - s) : 0;

        if (k == 0 || k > TAG_KEY_MAX || s[0] < 'a' || s[0] > 'z')
                return false;
        if (strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != k)
                return false;
        return tag_tenant_is_valid(colon + 1);
}

int tags_split(const char *s, char ***ret) {
        _cleanup_strv_free_ char **tags = calloc(1, sizeof(char *));
        size_t count = 0;

        if (!tags)
                return -ENOMEM;
        for (const char *p = s ?: ""; *p;) {
                size_t n = strcspn(p, ",");
                _cleanup_free_ char *t = strndup(p, n);

                if (!t)
                        return -ENOMEM;
                if (!tag_is_valid(t) || ++count > TAGS_MAX)
                        return -EINVAL;
                if (strv_add_unique(&tags, t) < 0)
                        return -ENOMEM;
                p += n;
                if (*p == ',' && !*++p)
                        return -EINVAL; /* a trailing comma: an empty tag */
        }
        *ret = TAKE_PTR(tags);
        return 0;
}

int tags_required(const ResolvedPolicy *r, const SandboxBlock *block, const char *tenant, char ***ret,
                  char **ret_error) {
        _cleanup_strv_free_ char **tags = NULL;
        _cleanup_free_ char *pool = NULL, *t = NULL;
        bool byo = streq(r->tier, "byo");

        if (byo && !block->tier)
                return error_set(ret_error, -EINVAL,
                                 "sandbox.tier: byo is never a default; profile %s must ask for it explicitly",
                                 r->profile);
        if (byo && !tenant)
                return error_set(ret_error, -EINVAL, "sandbox.tier: byo needs a tenant (--tenant PROJECT): a "
                                 "bring-your-own pool only takes its own project's jobs");
        if (byo && !tag_tenant_is_valid(tenant))
                return error_set(ret_error, -EINVAL, "tenant: '%s' must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127} "
                                 "for a byo job (it becomes the tag tenant:PROJECT)", tenant);
        if (asprintf(&pool, "pool:%s", r->tier) < 0 || strv_add_unique(&tags, pool) < 0)
                return -ENOMEM;
        if (byo && (asprintf(&t, "tenant:%s", tenant) < 0 || strv_add_unique(&tags, t) < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(tags);
        return 0;
}

const char *tags_first_missing(char *const *required, char *const *have) {
        for (; required && *required; required++) {
                bool found = false;

                for (char *const *h = have; h && *h && !found; h++)
                        found = streq(*h, *required);
                if (!found)
                        return *required;
        }
        return NULL;
}

char *tags_join(char *const *tags) {
        char *out = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);

        if (!f)
                return NULL;
        for (size_t i = 0; tags && tags[i]; i++)
                fprintf(f, "%s%s", i ? ", " : "", tags[i]);
        if (!tags || !tags[0])
                fputs("(none)", f);
        return fclose(f) == 0 ? out : NULL;
}
