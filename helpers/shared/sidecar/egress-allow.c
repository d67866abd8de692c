/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-allow.c: the allowlist of pond-egress. Names are compared in one canonical form (lowercase LDH,
 * no trailing dot) so "Git.Example.net." and "git.example.net" are the same entry and no byte outside [a-z0-9.-]
 * ever reaches a comparison, a log line or the resolver. */
#include <ctype.h>

#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/strv.h"
#include "sidecar/egress-allow.h"

int egress_name_normalize(const char *s, size_t len, char **ret) {
        size_t label = 0;
        bool digits_only = true;
        char *n;

        if (len > 0 && s[len - 1] == '.')
                len--;
        if (len == 0 || len > EGRESS_NAME_MAX)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (c == '.') {
                        if (label == 0 || s[i - 1] == '-')
                                return -EINVAL;
                        label = 0;
                        digits_only = true;
                        continue;
                }
                if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && c != '-')
                        return -EINVAL;
                if (c == '-' && label == 0)
                        return -EINVAL;
                if (!(c >= '0' && c <= '9'))
                        digits_only = false;
                if (++label > 63)
                        return -EINVAL;
        }
        if (label == 0 || s[len - 1] == '-' || digits_only)
                return -EINVAL;
        n = strndup(s, len);
        if (!n)
                return -ENOMEM;
        for (char *p = n; *p; p++)
                *p = (char) tolower((unsigned char) *p);
        *ret = n;
        return 0;
}

int egress_allow_add(EgressAllow *a, const char *pattern) {
        bool wildcard = strncmp(pattern, "*.", 2) == 0;
        _cleanup_free_ char *n = NULL;
        int r;

        if (egress_allow_size(a) >= EGRESS_ALLOW_MAX)
                return -E2BIG;
        if (wildcard)
                pattern += 2;
        r = egress_name_normalize(pattern, strlen(pattern), &n);
        if (r < 0)
                return r;
        /* A wildcard over a single label ("*.com") would allow a whole top-level domain. */
        if (wildcard && !strchr(n, '.'))
                return -EINVAL;
        return strv_push(wildcard ? &a->suffix : &a->exact, TAKE_PTR(n));
}

static int fail(char **ret_error, int r, const char *path, const char *what) {
        if (ret_error && asprintf(ret_error, "%s: %s", path, what) < 0)
                *ret_error = NULL;
        return r;
}

int egress_allow_load_file(EgressAllow *a, const char *path, char **ret_error) {
        _cleanup_free_ char *buf = NULL, *error = NULL;
        _cleanup_json_ json_object *root = NULL;
        json_object *hosts;
        size_t len;
        int r;

        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r < 0)
                return r;
        r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, 4, &root, &error);
        if (r < 0)
                return fail(ret_error, r, path, error ?: "invalid JSON");
        if (!json_object_is_type(root, json_type_object))
                return fail(ret_error, -EINVAL, path, "not a JSON object");
        if (!json_object_object_get_ex(root, "allow_hosts", &hosts))
                return 0;
        if (!json_object_is_type(hosts, json_type_array))
                return fail(ret_error, -EINVAL, path, "allow_hosts is not an array of host names");
        for (size_t i = 0; i < json_object_array_length(hosts); i++) {
                json_object *h = json_object_array_get_idx(hosts, i);
                _cleanup_free_ char *p = NULL;

                if (!json_object_is_type(h, json_type_string))
                        return fail(ret_error, -EINVAL, path, "allow_hosts has an entry that is not a string");
                r = egress_allow_add(a, json_object_get_string(h));
                if (r == -EINVAL) {
                        p = json_printable(json_object_get_string(h));
                        if (ret_error && asprintf(ret_error, "%s: allow_hosts entry '%s' is not a host name "
                                                  "or *.domain wildcard (LDH, at least two labels)",
                                                  path, p ?: "?") < 0)
                                *ret_error = NULL;
                        return r;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

bool egress_allow_match(const EgressAllow *a, const char *name) {
        size_t len = strlen(name);

        for (char **e = a->exact; e && *e; e++)
                if (streq(*e, name))
                        return true;
        for (char **s = a->suffix; s && *s; s++) {
                size_t sl = strlen(*s);
                /* Strict subdomain: at least one label and a dot before the suffix. */
                if (len > sl + 1 && name[len - sl - 1] == '.' && streq(name + len - sl, *s))
                        return true;
        }
        return false;
}

size_t egress_allow_size(const EgressAllow *a) {
        return strv_length(a->exact) + strv_length(a->suffix);
}

void egress_allow_done(EgressAllow *a) {
        strv_free(a->exact);
        strv_free(a->suffix);
        *a = (EgressAllow) {};
}
