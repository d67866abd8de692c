/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-strict.c: one JSON document in, one json-c tree out, or a refusal naming the byte offset or key.
 * json-c does the structural parse (and the depth cap); everything it lets through that RFC 8259 or pond
 * does not (duplicate keys, overlong/surrogate UTF-8, NUL, NaN, single quotes, raw control characters,
 * trailing data, nesting) is caught by the byte-level passes here, which look at tokens and brackets
 * only and leave the grammar to json-c. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/json-strict.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"

/* Sets *ret_error (if wanted) and returns error, or -ENOMEM if the message itself cannot be made. */
#define refuse error_set

static int refuse_depth(char **ret_error, int max_depth, size_t offset) {
        return refuse(ret_error, -EINVAL, "nesting deeper than %d levels at byte offset %zu", max_depth,
                      offset);
}

char *json_printable(const char *s) {
        static const size_t max = 64;
        size_t n = 0;
        char *out, *p;

        /* Worst case every byte becomes \xNN, plus "..." and the NUL. */
        out = malloc(max * 4 + 4);
        if (!out)
                return NULL;
        for (p = out; *s && n < max; s++, n++) {
                unsigned char c = (unsigned char) *s;

                if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
                        *p++ = (char) c;
                else
                        p += sprintf(p, "\\x%02x", c);
        }
        if (*s)
                p = stpcpy(p, "...");
        *p = 0;
        return out;
}

static int check_utf8(const char *buf, size_t len, char **ret_error) {
        size_t i = utf8_valid_prefix(buf, len);

        if (i < len)
                return refuse(ret_error, -EINVAL, "invalid UTF-8 at byte offset %zu", i);
        return 0;
}

/* strchr() also "finds" the terminating NUL; this does not. */
static bool char_in(char c, const char *set) {
        return c != 0 && strchr(set, c);
}

static bool is_json_ws(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int hex_value(const char *p) {
        int v = 0;

        for (int i = 0; i < 4; i++) {
                char c = p[i];
                int d = c >= '0' && c <= '9' ? c - '0' :
                        c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                        c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

/* Checks the string literal whose opening quote is at buf[*i]; leaves *i on the closing quote. json-c
 * lets through raw control characters, "\u0000" (which would truncate keys and hide bytes from C
 * string handling) and unpaired surrogate escapes (which it silently turns into U+FFFD). */
/* The escape at buf[j] (a backslash): NULL and its length in *ret_n if acceptable, else why not. */
static const char *check_escape(const char *buf, size_t len, size_t j, size_t *ret_n) {
        int u, lo;

        if (j + 1 >= len || !char_in(buf[j + 1], "\"\\/bfnrtu"))
                return "invalid escape";
        *ret_n = 2;
        if (buf[j + 1] != 'u')
                return NULL;
        u = j + 6 <= len ? hex_value(buf + j + 2) : -1;
        if (u < 0)
                return "invalid \\u escape";
        if (u == 0)
                return "\\u0000 (NUL)";
        *ret_n = 6;
        if (u >= 0xdc00 && u <= 0xdfff)
                return "unpaired surrogate escape";
        if (u < 0xd800 || u > 0xdbff)
                return NULL;
        lo = j + 12 <= len && buf[j + 6] == '\\' && buf[j + 7] == 'u' ? hex_value(buf + j + 8) : -1;
        if (lo < 0xdc00 || lo > 0xdfff)
                return "unpaired surrogate escape";
        *ret_n = 12;
        return NULL;
}

/* Checks the string literal whose opening quote is at buf[*i]; leaves *i on the closing quote. json-c
 * lets through raw control characters, "\u0000" (which would truncate keys and hide bytes from C
 * string handling) and unpaired surrogate escapes (which it silently turns into U+FFFD). */
static int scan_string(const char *buf, size_t len, size_t *i, char **ret_error) {
        for (size_t j = *i + 1; j < len;) {
                const char *why = NULL;
                size_t n = 1;

                if (buf[j] == '"') {
                        *i = j;
                        return 0;
                }
                if ((unsigned char) buf[j] < 0x20)
                        why = "control character";
                else if (buf[j] == '\\')
                        why = check_escape(buf, len, j, &n);
                if (why)
                        return refuse(ret_error, -EINVAL, "%s in string at byte offset %zu", why, j);
                j += n;
        }
        return refuse(ret_error, -EINVAL, "unterminated string at byte offset %zu", *i);
}

/* RFC 8259 number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? over exactly [p, p+n). json-c
 * also takes "1.", "01"-like forms in some states, NaN and Infinity. */
static bool is_json_number(const char *p, size_t n) {
        const char *e = p + n;

#define DIGITS(min)                                                     \
        ({                                                              \
                const char *_s = p;                                     \
                while (p < e && *p >= '0' && *p <= '9')                 \
                        p++;                                            \
                p - _s >= (min);                                        \
        })

        if (p < e && *p == '-')
                p++;
        if (p < e && *p == '0')
                p++;
        else if (!DIGITS(1))
                return false;
        if (p < e && *p == '.') {
                p++;
                if (!DIGITS(1))
                        return false;
        }
        if (p < e && (*p == 'e' || *p == 'E')) {
                p++;
                if (p < e && (*p == '+' || *p == '-'))
                        p++;
                if (!DIGITS(1))
                        return false;
        }
#undef DIGITS
        return p == e;
}

static int scan_bare_token(const char *buf, size_t len, size_t *i, char **ret_error) {
        size_t s = *i, n;

        for (n = 0; s + n < len; n++) {
                char c = buf[s + n];

                if (!char_in(c, "+-.") && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') &&
                    !(c >= 'A' && c <= 'Z'))
                        break;
        }
        if (n == 0)
                return refuse(ret_error, -EINVAL, "unexpected character 0x%02x at byte offset %zu",
                              (unsigned char) buf[s], s);
        *i = s + n - 1; /* the caller's loop steps over the token's last byte */
        if ((n == 4 && memcmp(buf + s, "true", 4) == 0) || (n == 5 && memcmp(buf + s, "false", 5) == 0) ||
            (n == 4 && memcmp(buf + s, "null", 4) == 0) || is_json_number(buf + s, n))
                return 0;
        return refuse(ret_error, -EINVAL, "invalid literal '%.*s' at byte offset %zu", (int) MIN(n, 32u),
                      buf + s, s);
}

/* The token-level pass over text json-c has accepted. Also counts the ':' outside strings: each object
 * member contributes exactly one, which is how duplicate keys (collapsed by json-c) are noticed. And it
 * measures nesting in containers, which json-c does not: its depth counts scalars as a level too. */
static int scan_tokens(const char *buf, size_t len, int max_depth, size_t *ret_colons, char **ret_error) {
        size_t colons = 0;
        int depth = 0, r = 0;

        for (size_t i = 0; i < len; i++) {
                char c = buf[i];

                if (c == '"')
                        r = scan_string(buf, len, &i, ret_error);
                else if (c == ':')
                        colons++;
                else if (c == '{' || c == '[') {
                        if (++depth > max_depth)
                                return refuse_depth(ret_error, max_depth, i);
                } else if (c == '}' || c == ']')
                        depth--;
                else if (!is_json_ws(c) && c != ',')
                        r = scan_bare_token(buf, len, &i, ret_error);
                if (r < 0)
                        return r;
        }
        *ret_colons = colons;
        return 0;
}

static size_t count_members(json_object *o) {
        size_t n = 0;

        if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, k, v) {
                        (void) k;
                        n += 1 + count_members(v);
                }
        } else if (json_object_is_type(o, json_type_array))
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        n += count_members(json_object_array_get_idx(o, i));
        return n;
}

/* Decodes the string literal buf[s..e] (quotes included) with json-c, so that "a" and "\u0061" compare
 * equal. */
static json_object *decode_literal(json_tokener *tok, const char *buf, size_t s, size_t e) {
        json_tokener_reset(tok);
        return json_tokener_parse_ex(tok, buf + s, (int) (e - s + 1));
}

/* Second lexical pass, only after the member count showed a duplicate: one key set per open object. */
static int find_duplicate_key(const char *buf, size_t len, int max_depth, char **ret_key,
                              size_t *ret_offset) {
        _cleanup_free_ json_object **sets = NULL;
        json_tokener *tok = NULL;
        size_t key_start = 0, key_end = 0;
        int sp = -1, r = -ENOENT;

        sets = calloc(max_depth + 2, sizeof(json_object *));
        tok = json_tokener_new();
        if (!sets || !tok) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < len && r == -ENOENT; i++) {
                if (buf[i] == '"') {
                        key_start = i;
                        for (i++; i < len && buf[i] != '"'; i++)
                                if (buf[i] == '\\')
                                        i++;
                        key_end = i;
                } else if (buf[i] == '{' || buf[i] == '[') {
                        if (sp + 1 >= max_depth + 2) {
                                r = -EINVAL;
                                break;
                        }
                        sets[++sp] = buf[i] == '{' ? json_object_new_object() : NULL;
                        if (buf[i] == '{' && !sets[sp])
                                r = -ENOMEM;
                } else if ((buf[i] == '}' || buf[i] == ']') && sp >= 0) {
                        json_object_put(sets[sp]);
                        sets[sp--] = NULL;
                } else if (buf[i] == ':' && sp >= 0 && sets[sp]) {
                        json_object *k = decode_literal(tok, buf, key_start, key_end);
                        const char *ks = k ? json_object_get_string(k) : NULL;

                        if (!ks)
                                r = -ENOMEM;
                        else if (json_object_object_get_ex(sets[sp], ks, NULL)) {
                                *ret_key = strdup(ks);
                                *ret_offset = key_start;
                                r = *ret_key ? 0 : -ENOMEM;
                        } else if (json_object_object_add(sets[sp], ks, NULL) < 0)
                                r = -ENOMEM;
                        json_object_put(k);
                }
        }
finish:
        for (int j = 0; j <= sp; j++)
                json_object_put(sets[j]);
        if (tok)
                json_tokener_free(tok);
        return r;
}

static int refuse_duplicate(const char *buf, size_t len, int max_depth, char **ret_error) {
        _cleanup_free_ char *key = NULL, *printable = NULL;
        size_t offset;
        int r;

        r = find_duplicate_key(buf, len, max_depth, &key, &offset);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return refuse(ret_error, -EINVAL, "duplicate key in object");
        printable = json_printable(key);
        if (!printable)
                return -ENOMEM;
        return refuse(ret_error, -EINVAL, "duplicate key '%s' at byte offset %zu", printable, offset);
}

/* json-c proper: structure, and a first depth cap (one level more than max_depth, since json-c counts a
 * scalar inside the innermost container as a level; scan_tokens() does the exact check). A number at the
 * very end only completes when json-c sees the end of input, which an explicit NUL byte signals (raw NULs
 * in the document were refused before). Trailing data is left to the caller, for a clearer message. A
 * NULL tree with success is the JSON value null. */
static int parse_structure(const char *buf, size_t len, int max_depth, json_object **ret, size_t *ret_end,
                           char **ret_error) {
        json_tokener *tok;
        json_object *o;
        enum json_tokener_error e;
        size_t end;

        tok = json_tokener_new_ex(max_depth + 1);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8 |
                                    JSON_TOKENER_ALLOW_TRAILING_CHARS);
        o = json_tokener_parse_ex(tok, buf, (int) len);
        e = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        if (!o && e == json_tokener_continue && end == len) {
                o = json_tokener_parse_ex(tok, "", 1);
                e = json_tokener_get_error(tok);
        }
        json_tokener_free(tok);

        if (e == json_tokener_error_depth)
                return refuse_depth(ret_error, max_depth, end);
        if (e != json_tokener_success) {
                json_object_put(o);
                return refuse(ret_error, -EINVAL, "invalid JSON at byte offset %zu: %s", end,
                              json_tokener_error_desc(e));
        }
        *ret = o;
        *ret_end = end;
        return 0;
}

int json_parse_strict(const char *buf, size_t len, size_t max_bytes, int max_depth, json_object **ret,
                      char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        const char *nul;
        size_t end = 0, colons = 0;
        int r;

        if (!buf || !ret || max_depth < 1 || max_depth >= INT_MAX)
                return -EINVAL;
        if (len > max_bytes || len >= INT_MAX)
                return refuse(ret_error, -E2BIG, "document is %zu bytes, more than the maximum of %zu",
                              len, MIN(max_bytes, (size_t) INT_MAX - 1));
        nul = memchr(buf, 0, len);
        if (nul)
                return refuse(ret_error, -EINVAL, "NUL byte at byte offset %zu", (size_t) (nul - buf));
        r = check_utf8(buf, len, ret_error);
        if (r < 0)
                return r;
        r = parse_structure(buf, len, max_depth, &o, &end, ret_error);
        if (r < 0)
                return r;
        for (size_t i = end; i < len; i++)
                if (!is_json_ws(buf[i]))
                        return refuse(ret_error, -EINVAL,
                                      "trailing data after the JSON value at byte offset %zu", i);
        r = scan_tokens(buf, end, max_depth, &colons, ret_error);
        if (r < 0)
                return r;
        if (colons != count_members(o))
                return refuse_duplicate(buf, end, max_depth, ret_error);

        log_debug("Parsed %zu bytes of strict JSON.", len);
        *ret = TAKE_PTR(o);
        return 0;
}
