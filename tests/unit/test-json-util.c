/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-json-util.c: the dispatch table (stores, required members, unknown keys, null, bounds, type errors,
 * callbacks, nesting) and the lookups and typed checks beneath it, and whole documents: their bounds, a file
 * read and refused with its reason. Every refusal must name the field. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "tests.h"

TEST_MAIN();

typedef struct Thing {
        char *name;
        char *note;
        uint64_t size;
        unsigned count;
        bool on;
        json_object *list;
        json_object *extra;
        char *inner_id;
        int calls;
} Thing;

static void thing_done(Thing *t) {
        free(t->name);
        free(t->note);
        free(t->inner_id);
        *t = (Thing) {};
}

static const char *check_lower(const char *s) {
        return strspn(s, "abcdefghijklmnopqrstuvwxyz") == strlen(s) ? NULL : "must be lowercase letters";
}

static const JsonField inner_fields[] = {
        { "id", JSON_STRING, .offset = offsetof(Thing, inner_id), .flags = JSON_MANDATORY, .max = 8 },
        {}
};

static int parse_inner(json_object *v, const char *field, void *userdata, char **ret_error) {
        return json_dispatch(v, field, inner_fields, userdata, ret_error);
}

static int count_call(json_object *v, const char *field, void *userdata, char **ret_error) {
        Thing *t = userdata;

        t->calls++;
        return 0;
}

static const JsonField thing_fields[] = {
        { "name",  JSON_STRING,   .offset = offsetof(Thing, name), .flags = JSON_MANDATORY,
          .min = 2, .max = 8, .check = check_lower },
        { "note",  JSON_STRING,   .offset = offsetof(Thing, note), .flags = JSON_NULLABLE },
        { "size",  JSON_U64,      .offset = offsetof(Thing, size), .min = 1, .max = 1000 },
        { "count", JSON_UNSIGNED, .offset = offsetof(Thing, count) },
        { "on",    JSON_BOOL,     .offset = offsetof(Thing, on) },
        { "list",  JSON_ARRAY,    .offset = offsetof(Thing, list), .min = 1, .max = 3 },
        { "extra", JSON_OBJECT,   .offset = offsetof(Thing, extra) },
        { "inner", JSON_OBJECT,   .callback = parse_inner },
        { "any",   JSON_ANY,      .callback = count_call },
        { .name = "ignored", .type = JSON_ANY },
        {}
};

/* Parses text strictly into *o (which the borrowed members of t point into) and dispatches it; -EINVAL
 * cases leave the message in *ret_error. */
static int dispatch(const char *text, const char *where, json_object **o, Thing *t, char **ret_error) {
        int r;

        r = json_parse_strict(text, strlen(text), JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, o, ret_error);
        if (r < 0)
                return r;
        return json_dispatch(*o, where, thing_fields, t, ret_error);
}

TEST(dispatch_stores_every_type) {
        _cleanup_json_ json_object *o = NULL, *o2 = NULL;
        _cleanup_free_ char *error = NULL;
        Thing t = { .count = 7 };

        ASSERT_OK(dispatch("{\"name\":\"ab\",\"note\":null,\"size\":1000,\"on\":true,\"list\":[1,2,3],"
                           "\"extra\":{},\"inner\":{\"id\":\"x\"},\"any\":[{}],\"ignored\":{\"x\":[1]}}",
                           NULL, &o, &t, &error));
        ASSERT_TRUE(error == NULL);
        ASSERT_STREQ("ab", t.name);
        ASSERT_TRUE(t.note == NULL);
        ASSERT_EQ(1000, t.size);
        ASSERT_EQ(7, t.count);          /* absent: untouched */
        ASSERT_TRUE(t.on);
        ASSERT_EQ(3, json_object_array_length(t.list));
        ASSERT_TRUE(json_object_is_type(t.extra, json_type_object));
        ASSERT_STREQ("x", t.inner_id);
        ASSERT_EQ(1, t.calls);
        thing_done(&t);

        ASSERT_OK(dispatch("{\"name\":\"zz\",\"count\":4294967295}", "thing", &o2, &t, NULL));
        ASSERT_EQ(UINT_MAX, t.count);
        thing_done(&t);
}

TEST(refusals_name_the_field) {
        static const struct {
                const char *text, *where, *error;
        } cases[] = {
                /* required */
                { "{}", NULL, "name: missing (required)" },
                { "{}", "thing", "thing.name: missing (required)" },
                { "{\"name\":\"ab\",\"inner\":{}}", "t", "t.inner.id: missing (required)" },
                /* unknown keys, made printable */
                { "{\"name\":\"ab\",\"nmae\":1}", NULL, "unknown key 'nmae' at top level" },
                { "{\"name\":\"ab\",\"nmae\":1}", "thing", "unknown key 'nmae' in thing" },
                { "{\"name\":\"ab\",\"inner\":{\"id\":\"x\",\"i'd\":1}}", NULL,
                  "unknown key 'i\\x27d' in inner" },
                /* types */
                { "[]", NULL, "top level: must be an object" },
                { "[]", "thing", "thing: must be an object" },
                { "{\"name\":1}", NULL, "name: must be a string" },
                { "{\"name\":null}", NULL, "name: must be a string" },       /* not JSON_NULLABLE */
                { "{\"name\":\"ab\",\"note\":5}", NULL, "note: must be a string" },
                { "{\"name\":\"ab\",\"size\":\"5\"}", NULL, "size: must be an integer between 1 and 1000" },
                { "{\"name\":\"ab\",\"size\":5.0}", NULL, "size: must be an integer between 1 and 1000" },
                { "{\"name\":\"ab\",\"size\":true}", NULL, "size: must be an integer between 1 and 1000" },
                { "{\"name\":\"ab\",\"on\":1}", NULL, "on: must be a boolean" },
                { "{\"name\":\"ab\",\"list\":{}}", NULL, "list: must be an array" },
                { "{\"name\":\"ab\",\"extra\":[]}", NULL, "extra: must be an object" },
                { "{\"name\":\"ab\",\"inner\":{\"id\":7}}", "t", "t.inner.id: must be a string" },
                /* bounds */
                { "{\"name\":\"a\"}", NULL, "name: shorter than 2 bytes" },
                { "{\"name\":\"abcdefghi\"}", NULL, "name: longer than 8 bytes" },
                { "{\"name\":\"aB\"}", NULL, "name: must be lowercase letters" },
                { "{\"name\":\"ab\",\"size\":0}", NULL, "size: must be an integer between 1 and 1000" },
                { "{\"name\":\"ab\",\"size\":1001}", NULL, "size: must be an integer between 1 and 1000" },
                { "{\"name\":\"ab\",\"size\":-1}", NULL, "size: must be an integer between 1 and 1000" },
                { "{\"name\":\"ab\",\"size\":18446744073709551616}", NULL, "size: must be an integer" },
                { "{\"name\":\"ab\",\"count\":4294967296}", NULL,
                  "count: must be an integer between 0 and 4294967295" },
                { "{\"name\":\"ab\",\"list\":[]}", NULL, "list: must have at least 1 element" },
                { "{\"name\":\"ab\",\"list\":[1,2,3,4]}", NULL, "list: more than 3 elements" },
                { "{\"name\":\"ab\",\"inner\":{\"id\":\"123456789\"}}", NULL,
                  "inner.id: longer than 8 bytes" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_json_ json_object *o = NULL;
                _cleanup_free_ char *error = NULL;
                Thing t = {};
                int r = dispatch(cases[i].text, cases[i].where, &o, &t, &error);

                thing_done(&t);
                if (r != -EINVAL || !error || !strstr(error, cases[i].error))
                        printf("# case %zu: r=%d \"%s\", wanted \"%s\"\n", i, r, error ?: "(null)",
                               cases[i].error);
                ASSERT_ERROR(EINVAL, r);
                ASSERT_CONTAINS(cases[i].error, error);
        }
}

TEST(lookups_and_checks) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *error = NULL;
        const char *s = NULL;
        uint64_t u = 42;
        static const char *const known[] = { "s", "n", "t", "z", "a", NULL };
        static const char text[] = "{\"s\":\"x\",\"n\":5,\"t\":true,\"z\":null,\"a\":[1]}";

        ASSERT_OK(json_parse_strict(text, strlen(text), JSON_STRICT_MAX_BYTES, 4, &o, NULL));
        ASSERT_STREQ("x", json_get_str(o, "s"));
        ASSERT_TRUE(json_get_str(o, "n") == NULL);
        ASSERT_TRUE(json_get(o, "z") == NULL);
        ASSERT_TRUE(json_get(o, "missing") == NULL);
        ASSERT_TRUE(json_get(NULL, "s") == NULL);
        ASSERT_TRUE(json_get(json_get(o, "a"), "s") == NULL);     /* not an object */
        ASSERT_TRUE(json_get_true(o, "t"));
        ASSERT_FALSE(json_get_true(o, "n"));

        ASSERT_EQ(0, json_get_u64(o, "w", "missing", 0, 10, &u, &error));
        ASSERT_EQ(42, u);
        ASSERT_EQ(1, json_get_u64(o, "w", "n", 0, 10, &u, &error));
        ASSERT_EQ(5, u);
        ASSERT_ERROR(EINVAL, json_get_u64(o, "w", "n", 6, 10, &u, &error));
        ASSERT_CONTAINS("w.n: must be an integer between 6 and 10", error);
        ASSERT_ERROR(EINVAL, json_check_string(json_get(o, "s"), "f", 0, &s, &error));
        ASSERT_CONTAINS("f: longer than 0 bytes", error);
        ASSERT_OK(json_check_string(json_get(o, "s"), "f", 1, &s, NULL));
        ASSERT_STREQ("x", s);

        ASSERT_OK(json_check_keys(o, "w", known, NULL));
        ASSERT_ERROR(EINVAL, json_check_keys(o, "w", known + 1, &error));
        ASSERT_CONTAINS("unknown key 's' in w", error);
}

TEST(field_paths) {
        char f[JSON_FIELD_MAX], g[JSON_FIELD_MAX];
        char long_key[400];

        json_field(f, NULL, "a");
        ASSERT_STREQ("a", f);
        json_field(f, "a", "b");
        ASSERT_STREQ("a.b", f);
        json_field_index(g, f, 3);
        ASSERT_STREQ("a.b[3]", g);
        memset(long_key, 'k', sizeof long_key - 1);
        long_key[sizeof long_key - 1] = 0;
        json_field(f, "a", long_key);
        ASSERT_EQ(JSON_FIELD_MAX - 1, strlen(f));
}

static int doc_parse(const JsonDocument *d, const char *text, Thing *t, char **ret_error) {
        return json_document_parse(d, text, strlen(text), t, ret_error);
}

/* The bounds of a document: past max_bytes or max_depth it is refused before any field is looked at; a
 * refusal of the table names the field under where. */
TEST(document_parse) {
        static const JsonField fields[] = {
                { "name", JSON_STRING, .offset = offsetof(Thing, name), .flags = JSON_MANDATORY, .max = 8 },
                { "inner", JSON_OBJECT, .callback = parse_inner },
                {}
        };
        const JsonDocument d = { .max_bytes = 64, .max_depth = 2, .where = "doc", .fields = fields };
        _cleanup_free_ char *error = NULL;
        Thing t = {};

        ASSERT_OK(doc_parse(&d, "{\"name\": \"abc\", \"inner\": {\"id\": \"x\"}}", &t, &error));
        EXPECT_STREQ("abc", t.name);
        EXPECT_STREQ("x", t.inner_id);
        thing_done(&t);

        EXPECT_ERROR(EINVAL, doc_parse(&d, "{\"name\": 1}", &t, &error));
        EXPECT_CONTAINS("doc.name", error);
        thing_done(&t);
        free(error), error = NULL;
        EXPECT_ERROR(EINVAL, doc_parse(&d, "{}", &t, &error));
        EXPECT_CONTAINS("doc.name: missing", error);
        free(error), error = NULL;
        EXPECT_TRUE(doc_parse(&d, "{\"inner\": {\"id\": [[1]]}}", &t, &error) < 0);
        EXPECT_TRUE(error != NULL);
        thing_done(&t);
        free(error), error = NULL;
        EXPECT_ERROR(E2BIG, doc_parse(&d, "{\"name\": \"abc\", \"inner\": {\"id\": \"x\"}, \"p\": \"0123456789"
                                          "0123456789\"}", &t, &error));
        EXPECT_TRUE(t.name == NULL); /* refused before the table */
        thing_done(&t);
}

/* Parses a Thing; returns the length of the text it was given, so that the test sees it was all of it. */
static int parse_thing(const char *text, size_t len, void *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        int r;

        r = dispatch(text, NULL, &o, ret, ret_error);
        return r < 0 ? r : (int) len;
}

/* A file is read whole (bounded) and handed to the document's parser; one that cannot be read is refused
 * naming what it is, where it is and why. */
TEST(load_file) {
        char dir[] = "/tmp/pond-test-json.XXXXXX", path[64], link_path[80];
        _cleanup_free_ char *error = NULL;
        FILE *f;
        Thing t = {};

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(path, sizeof path, "%s/doc.json", dir);
        snprintf(link_path, sizeof link_path, "%s/link.json", dir);
        ASSERT_TRUE((f = fopen(path, "we")) != NULL);
        fputs("{\"name\": \"abc\"}", f);
        fclose(f);
        ASSERT_OK(symlink("doc.json", link_path));

        EXPECT_EQ(15, json_load_file(path, 64, "thing", parse_thing, &t, &error));
        EXPECT_STREQ("abc", t.name);
        thing_done(&t);

        EXPECT_ERROR(EFBIG, json_load_file(path, 8, "thing", parse_thing, &t, &error));
        EXPECT_CONTAINS("Failed to read thing '", error);
        EXPECT_CONTAINS("doc.json': ", error);
        free(error), error = NULL;
        EXPECT_ERROR(ELOOP, json_load_file(link_path, 64, "thing", parse_thing, &t, &error));
        free(error), error = NULL;
        EXPECT_ERROR(ENOENT, json_load_file("/nonexistent/doc.json", 64, "price table", parse_thing, &t, &error));
        EXPECT_STREQ("Failed to read price table '/nonexistent/doc.json': No such file or directory", error);
        EXPECT_TRUE(t.name == NULL);

        (void) unlink(link_path);
        (void) unlink(path);
        (void) rmdir(dir);
}
