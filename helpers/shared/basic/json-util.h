/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-util.h: reading json-c trees that came through json_parse_strict(): lookups, typed checks with
 * bounds, unknown-key refusal, and a dispatch table in the manner of systemd's sd_json_dispatch(). Every
 * refusal is -EINVAL with a message that names the field by its path ("limits.wall_clock_s: ...",
 * "credentials[0].inject.header: ...", "unknown key 'x' in sandbox"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "basic/macro.h"

/* o's member key, or NULL when o is NULL, not an object or has no such member (or it is null). */
json_object *json_get(json_object *o, const char *key);
/* The member as a string, or NULL if it is absent or of another type. */
const char *json_get_str(json_object *o, const char *key);
/* True only for a member that is the boolean true. */
bool json_get_true(json_object *o, const char *key);

/* Field paths: "where.key" (or "key" when where is NULL), "where[i]". Cut at 255 bytes. */
#define JSON_FIELD_MAX 256
void json_field(char buf[static JSON_FIELD_MAX], const char *where, const char *key);
void json_field_index(char buf[static JSON_FIELD_MAX], const char *where, size_t i);

/* Typed checks of one value; field names it in the refusal. */
/* A string without NUL bytes of at most max_len bytes: "FIELD: must be a string", "FIELD: longer than N
 * bytes". The string stays v's. */
int json_check_string(json_object *v, const char *field, size_t max_len, const char **ret, char **ret_error);
/* An integer in [min, max] (no fractions, no strings; json-c saturates what does not fit in 64 bits, which
 * is then out of range): "FIELD: must be an integer between MIN and MAX". */
int json_check_u64(json_object *v, const char *field, uint64_t min, uint64_t max, uint64_t *ret,
                   char **ret_error);
int json_check_bool(json_object *v, const char *field, bool *ret, char **ret_error);
/* An array of min..max elements: "FIELD: must be an array", "FIELD: more than MAX elements",
 * "FIELD: must have at least MIN elements". */
int json_check_array(json_object *v, const char *field, size_t min, size_t max, char **ret_error);
int json_check_object(json_object *v, const char *field, char **ret_error);

/* Adds v to o as key, taking v in every case (put on failure); a NULL v is the failed allocation of the
 * caller's json_object_new_*() and gives -ENOMEM, so builders can nest the constructors. */
int json_add(json_object *o, const char *key, json_object *v);

/* "unknown key 'KEY' in WHERE" ("at top level" when where is NULL); the key made printable. */
int json_refuse_unknown_key(const char *key, const char *where, char **ret_error);
/* Refuses the first member of o whose name is not in known (NULL-terminated). */
int json_check_keys(json_object *o, const char *where, const char *const *known, char **ret_error);

/* The member key of o as json_check_u64() would take it: 0 and *ret untouched if absent (or null), 1 if
 * present and in range. */
int json_get_u64(json_object *o, const char *where, const char *key, uint64_t min, uint64_t max,
                 uint64_t *ret, char **ret_error);

typedef enum JsonType {
        JSON_ANY,       /* no check: the callback decides; without one the member is accepted and ignored */
        JSON_STRING,    /* char * at offset (strdup'd, the old value freed), min..max bytes, then .check */
        JSON_U64,       /* uint64_t at offset, in [min, max] */
        JSON_UNSIGNED,  /* unsigned at offset, in [min, max] (max at most UINT_MAX) */
        JSON_BOOL,      /* bool at offset */
        JSON_ARRAY,     /* json_object * at offset (borrowed), min..max elements */
        JSON_OBJECT,    /* json_object * at offset (borrowed) */
} JsonType;

typedef enum JsonFlags {
        JSON_MANDATORY = 1 << 0, /* absent: "FIELD: missing (required)" */
        JSON_NULLABLE  = 1 << 1, /* null counts as absent (otherwise it is of the wrong type) */
} JsonFlags;

/* Called after the type and bounds check, instead of storing at offset. field is the member's path. */
typedef int (*JsonDispatchCallback)(json_object *v, const char *field, void *userdata, char **ret_error);
/* For JSON_STRING: NULL if s is fine, else why not (completing "FIELD: ..."). */
typedef const char *(*JsonStringCheck)(const char *s);

typedef struct JsonField {
        const char *name;
        JsonType type;
        JsonDispatchCallback callback;
        size_t offset;          /* into userdata, where callback is NULL */
        JsonFlags flags;
        uint64_t min, max;      /* bytes (strings), elements (arrays), the value (integers); max 0: none */
        JsonStringCheck check;
} JsonField;

/* Checks o is an object ("WHERE: must be an object", "top level: ..." when where is NULL), then each
 * member in document order against table (terminated by an entry without a name): an unknown key, a wrong
 * type or a value out of bounds is refused naming the field; then every JSON_MANDATORY one must be there.
 * What was stored before a refusal stays in userdata for the caller to free. */
int json_dispatch(json_object *o, const char *where, const JsonField table[], void *userdata,
                  char **ret_error);

/* A kind of JSON document: its bounds and the table its top level is dispatched by. */
typedef struct JsonDocument {
        size_t max_bytes;
        int max_depth;
        const char *where;        /* json_dispatch()'s; NULL: the top level */
        const JsonField *fields;
} JsonDocument;

/* text[0..len) parsed with json_parse_strict() within d's bounds, then json_dispatch()'ed by d's table into
 * userdata; refusals as those two give them. The tree is gone when this returns: d's table keeps nothing
 * borrowed from it (no JSON_ARRAY or JSON_OBJECT without a callback). */
int json_document_parse(const JsonDocument *d, const char *text, size_t len, void *userdata, char **ret_error);

/* Parses a whole document's text (NUL-terminated at len) into ret: a configuration's own parser. */
typedef int (*JsonTextParser)(const char *text, size_t len, void *ret, char **ret_error);

/* Reads path (a regular file, a symlink as the last component not followed) of at most max_bytes and hands
 * its text to parse. A file that cannot be read is refused with "Failed to read WHAT 'PATH': REASON". */
int json_load_file(const char *path, size_t max_bytes, const char *what, JsonTextParser parse, void *ret,
                   char **ret_error);
