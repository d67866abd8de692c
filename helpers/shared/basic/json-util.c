/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-util.c: lookups, typed checks with bounds and the dispatch table over json-c trees, and a whole
 * document read, parsed strictly and dispatched. The messages are the ones docs/job-spec.md shows: "FIELD:
 * must be ...", "unknown key 'KEY' in WHERE". */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"

#define refuse(ret_error, ...) error_set((ret_error), -EINVAL, __VA_ARGS__)

/* The member of the caller's struct that a table entry stores into. */
#define FIELD_PTR(p, f, type) ((type *) ((uint8_t *) (p) + (f)->offset))

json_object *json_get(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

const char *json_get_str(json_object *o, const char *key) {
        json_object *v = json_get(o, key);

        return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

bool json_get_true(json_object *o, const char *key) {
        json_object *v = json_get(o, key);

        return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

void json_field(char buf[static JSON_FIELD_MAX], const char *where, const char *key) {
        snprintf(buf, JSON_FIELD_MAX, "%s%s%s", where ?: "", where ? "." : "", key);
}

void json_field_index(char buf[static JSON_FIELD_MAX], const char *where, size_t i) {
        snprintf(buf, JSON_FIELD_MAX, "%s[%zu]", where ?: "", i);
}

int json_check_string(json_object *v, const char *field, size_t max_len, const char **ret, char **ret_error) {
        const char *s;
        size_t n;

        if (!json_object_is_type(v, json_type_string))
                return refuse(ret_error, "%s: must be a string", field);
        s = json_object_get_string(v);
        n = (size_t) json_object_get_string_len(v);
        /* json_parse_strict() refuses "\u0000" already; trees built elsewhere are checked here too. */
        if (strlen(s) != n)
                return refuse(ret_error, "%s: must not contain NUL", field);
        if (n > max_len)
                return refuse(ret_error, "%s: longer than %zu bytes", field, max_len);
        *ret = s;
        return 0;
}

int json_check_u64(json_object *v, const char *field, uint64_t min, uint64_t max, uint64_t *ret,
                   char **ret_error) {
        uint64_t u;

        /* get_int64() tells the sign; get_uint64() the value, also above INT64_MAX. */
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
            (u = json_object_get_uint64(v)) < min || u > max)
                return refuse(ret_error, "%s: must be an integer between %" PRIu64 " and %" PRIu64, field,
                              min, max);
        *ret = u;
        return 0;
}

int json_check_bool(json_object *v, const char *field, bool *ret, char **ret_error) {
        if (!json_object_is_type(v, json_type_boolean))
                return refuse(ret_error, "%s: must be a boolean", field);
        *ret = json_object_get_boolean(v);
        return 0;
}

int json_check_array(json_object *v, const char *field, size_t min, size_t max, char **ret_error) {
        size_t n;

        if (!json_object_is_type(v, json_type_array))
                return refuse(ret_error, "%s: must be an array", field);
        n = json_object_array_length(v);
        if (n > max)
                return refuse(ret_error, "%s: more than %zu elements", field, max);
        if (n < min)
                return refuse(ret_error, "%s: must have at least %zu element%s", field, min,
                              min == 1 ? "" : "s");
        return 0;
}

int json_check_object(json_object *v, const char *field, char **ret_error) {
        if (!json_object_is_type(v, json_type_object))
                return refuse(ret_error, "%s: must be an object", field);
        return 0;
}

int json_add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_refuse_unknown_key(const char *key, const char *where, char **ret_error) {
        _cleanup_free_ char *p = json_printable(key);

        if (!p)
                return -ENOMEM;
        if (!where)
                return refuse(ret_error, "unknown key '%s' at top level", p);
        return refuse(ret_error, "unknown key '%s' in %s", p, where);
}

int json_check_keys(json_object *o, const char *where, const char *const *known, char **ret_error) {
        json_object_object_foreach(o, key, v) {
                bool ok = false;

                (void) v;
                for (const char *const *k = known; *k && !ok; k++)
                        ok = streq(*k, key);
                if (!ok)
                        return json_refuse_unknown_key(key, where, ret_error);
        }
        return 0;
}

int json_get_u64(json_object *o, const char *where, const char *key, uint64_t min, uint64_t max,
                 uint64_t *ret, char **ret_error) {
        json_object *v = json_get(o, key);
        char field[JSON_FIELD_MAX];
        int r;

        if (!v)
                return 0;
        json_field(field, where, key);
        r = json_check_u64(v, field, min, max, ret, ret_error);
        return r < 0 ? r : 1;
}

static int dispatch_string(json_object *v, const char *field, const JsonField *f, void *p, char **ret_error) {
        const char *s, *why;
        char *copy;
        int r;

        r = json_check_string(v, field, f->max ?: SIZE_MAX, &s, ret_error);
        if (r < 0)
                return r;
        if (strlen(s) < f->min)
                return refuse(ret_error, "%s: shorter than %" PRIu64 " bytes", field, f->min);
        why = f->check ? f->check(s) : NULL;
        if (why)
                return refuse(ret_error, "%s: %s", field, why);
        if (f->callback)
                return f->callback(v, field, p, ret_error);
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        free(*FIELD_PTR(p, f, char *));
        *FIELD_PTR(p, f, char *) = copy;
        return 0;
}

static int dispatch_integer(json_object *v, const char *field, const JsonField *f, void *p,
                            char **ret_error) {
        uint64_t max = f->max ?: UINT64_MAX, u;
        int r;

        if (f->type == JSON_UNSIGNED)
                max = MIN(max, (uint64_t) UINT_MAX);
        r = json_check_u64(v, field, f->min, max, &u, ret_error);
        if (r < 0)
                return r;
        if (f->callback)
                return f->callback(v, field, p, ret_error);
        if (f->type == JSON_UNSIGNED)
                *FIELD_PTR(p, f, unsigned) = (unsigned) u;
        else
                *FIELD_PTR(p, f, uint64_t) = u;
        return 0;
}

static int dispatch_one(json_object *v, const char *field, const JsonField *f, void *p, char **ret_error) {
        bool b = false;
        int r;

        switch (f->type) {
        case JSON_STRING:
                return dispatch_string(v, field, f, p, ret_error);
        case JSON_U64:
        case JSON_UNSIGNED:
                return dispatch_integer(v, field, f, p, ret_error);
        case JSON_BOOL:
                r = json_check_bool(v, field, &b, ret_error);
                break;
        case JSON_ARRAY:
                r = json_check_array(v, field, f->min, f->max ?: SIZE_MAX, ret_error);
                break;
        case JSON_OBJECT:
                r = json_check_object(v, field, ret_error);
                break;
        default:
                r = 0;
        }
        if (r < 0)
                return r;
        if (f->callback)
                return f->callback(v, field, p, ret_error);
        if (f->type == JSON_BOOL)
                *FIELD_PTR(p, f, bool) = b;
        else if (f->type == JSON_ARRAY || f->type == JSON_OBJECT)
                *FIELD_PTR(p, f, json_object *) = v;
        return 0;  /* JSON_ANY without a callback: accepted, ignored */
}

static const JsonField *field_find(const JsonField table[], const char *name) {
        for (const JsonField *f = table; f->name; f++)
                if (streq(f->name, name))
                        return f;
        return NULL;
}

int json_dispatch(json_object *o, const char *where, const JsonField table[], void *userdata,
                  char **ret_error) {
        char field[JSON_FIELD_MAX];
        int r;

        r = json_check_object(o, where ?: "top level", ret_error);
        if (r < 0)
                return r;
        json_object_object_foreach(o, key, v) {
                const JsonField *f = field_find(table, key);

                if (!f)
                        return json_refuse_unknown_key(key, where, ret_error);
                if (!v && (f->flags & JSON_NULLABLE))
                        continue;
                json_field(field, where, key);
                r = dispatch_one(v, field, f, userdata, ret_error);
                if (r < 0)
                        return r;
        }
        for (const JsonField *f = table; f->name; f++)
                if ((f->flags & JSON_MANDATORY) && !json_get(o, f->name)) {
                        json_field(field, where, f->name);
                        return refuse(ret_error, "%s: missing (required)", field);
                }
        return 0;
}

int json_document_parse(const JsonDocument *d, const char *text, size_t len, void *userdata, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        int r;

        r = json_parse_strict(text, len, d->max_bytes, d->max_depth, &o, ret_error);
        if (r < 0)
                return r;
        return json_dispatch(o, d->where, d->fields, userdata, ret_error);
}

int json_load_file(const char *path, size_t max_bytes, const char *what, JsonTextParser parse, void *ret,
                   char **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_full_file(path, max_bytes, &text, &len);
        if (r < 0)
                return error_set(ret_error, r, "Failed to read %s '%s': %s", what, path, strerror(-r));
        return parse(text, len, ret, ret_error);
}
