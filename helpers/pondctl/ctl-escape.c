/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-escape.c: the one place pondctl makes a string it did not choose safe to show on a terminal
 * (ctl-escape.h): the escape itself, and a printf(3) whose string arguments all go through it, so that a
 * line of human output is escaped argument by argument and the format's own newlines stay newlines. */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "ctl-escape.h"

/* The well-formed UTF-8 sequence s[0..n) starts with (Unicode table 3-7: no overlongs, no surrogates,
 * nothing above U+10FFFF): its length (2 to 4) and code point, or 0 if it starts with none. */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *ret_cp) {
        unsigned char lo = 0x80, hi = 0xbf;
        uint32_t cp;
        size_t len;

        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                len = 2;
                cp = s[0] & 0x1f;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                len = 3;
                cp = s[0] & 0x0f;
                lo = s[0] == 0xe0 ? 0xa0 : 0x80;
                hi = s[0] == 0xed ? 0x9f : 0xbf;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                len = 4;
                cp = s[0] & 0x07;
                lo = s[0] == 0xf0 ? 0x90 : 0x80;
                hi = s[0] == 0xf4 ? 0x8f : 0xbf;
        } else
                return 0;
        if (n < len)
                return 0;
        for (size_t k = 1; k < len; k++) {
                if (s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xbf))
                        return 0;
                cp = cp << 6 | (s[k] & 0x3f);
        }
        *ret_cp = cp;
        return len;
}

static char *put_hex(char *o, unsigned char c) {
        static const char hex[] = "0123456789abcdef";

        *o++ = '\\';
        *o++ = 'x';
        *o++ = hex[c >> 4];
        *o++ = hex[c & 0xf];
        return o;
}

size_t ctl_escape_buf(char *out, const void *p, size_t n) {
        const unsigned char *s = p;
        char *o = out;

        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t len;

                if (s[i] == '\\') {
                        *o++ = '\\';
                        *o++ = '\\';
                        i++;
                } else if (s[i] < 0x20 || s[i] == 0x7f) {
                        o = put_hex(o, s[i++]);
                } else if (s[i] < 0x80) {
                        *o++ = (char) s[i++];
                } else if ((len = utf8_char(s + i, n - i, &cp)) == 0) {
                        o = put_hex(o, s[i++]); /* not UTF-8: a raw 0x9b is a CSI to an 8-bit terminal */
                } else if (cp <= 0x9f) {
                        /* C1: 2 bytes become 6, within CTL_ESCAPE_SIZE() */
                        o += snprintf(o, 7, "\\u%04x", (unsigned) cp);
                        i += len;
                } else {
                        memcpy(o, s + i, len);
                        o += len;
                        i += len;
                }
        }
        *o = 0;
        return (size_t) (o - out);
}

static int escape_n(const char *s, size_t n, char **ret) {
        char *e;

        if (n > (SIZE_MAX - 1) / 4)
                return -ENOMEM;
        e = malloc(CTL_ESCAPE_SIZE(n));
        if (!e)
                return -ENOMEM;
        ctl_escape_buf(e, s, n);
        *ret = e;
        return 0;
}

int ctl_escape(const char *s, char **ret) {
        return escape_n(s ?: "(null)", strlen(s ?: "(null)"), ret);
}

/* One conversion of a format, as parsed. */
typedef struct Conv {
        char flags[8];
        int width;     /* -1: none */
        int precision; /* -1: none */
        char length[3];
        char conv;
} Conv;

/* Parses the conversion after a '%' at *p (and fetches '*' arguments); *p is left after it. */
static int conv_parse(const char **p, va_list *ap, Conv *ret) {
        const char *c = *p;
        Conv v = { .width = -1, .precision = -1 };
        size_t n;

        n = strspn(c, "-+ #0'");
        if (n >= sizeof v.flags)
                return -EINVAL;
        memcpy(v.flags, c, n);
        c += n;
        if (*c == '*') {
                v.width = va_arg(*ap, int);
                if (v.width < 0) { /* as printf(3): a negative width is the '-' flag */
                        if (!strchr(v.flags, '-') && strlen(v.flags) + 1 < sizeof v.flags)
                                strcat(v.flags, "-");
                        v.width = v.width == INT_MIN ? INT_MAX : -v.width;
                }
                c++;
        } else if (*c >= '1' && *c <= '9')
                v.width = (int) strtol(c, (char **) &c, 10);
        if (*c == '.') {
                c++;
                if (*c == '*') {
                        v.precision = va_arg(*ap, int);
                        v.precision = v.precision < 0 ? -1 : v.precision;
                        c++;
                } else
                        v.precision = (int) strtol(c, (char **) &c, 10);
        }
        n = strspn(c, "hljztLq");
        if (n >= sizeof v.length)
                return -EINVAL;
        memcpy(v.length, c, n);
        c += n;
        v.conv = *c;
        if (!v.conv)
                return -EINVAL;
        *p = c + 1;
        *ret = v;
        return 0;
}

/* The conversion back as a format of its own, with the width and precision as numbers. */
static void conv_format(const Conv *v, char *buf, size_t size) {
        char width[16] = "", precision[16] = "";

        if (v->width >= 0)
                snprintf(width, sizeof width, "%d", v->width);
        if (v->precision >= 0)
                snprintf(precision, sizeof precision, ".%d", v->precision);
        snprintf(buf, size, "%%%s%s%s%s%c", v->flags, width, precision, v->length, v->conv);
}

/* A string argument: its first precision bytes escaped, then padded to the width. */
static int put_escaped(FILE *f, const Conv *v, const char *s, size_t n) {
        _cleanup_free_ char *e = NULL;
        int r;

        if (v->precision >= 0 && (size_t) v->precision < n)
                n = (size_t) v->precision;
        r = escape_n(s, n, &e);
        if (r < 0)
                return r;
        r = fprintf(f, strchr(v->flags, '-') ? "%-*s" : "%*s", MAX(v->width, 0), e);
        return r < 0 ? -EIO : 0;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

/* A conversion whose argument needs no escaping, printed by printf(3) itself. */
static int put_plain(FILE *f, const Conv *v, va_list *ap) {
        const char *l = v->length;
        char spec[48];
        int n;

        conv_format(v, spec, sizeof spec);
        switch (v->conv) {
        case 'd': case 'i':
                if (streq(l, "l"))
                        n = fprintf(f, spec, va_arg(*ap, long));
                else if (streq(l, "ll") || streq(l, "q"))
                        n = fprintf(f, spec, va_arg(*ap, long long));
                else if (streq(l, "j"))
                        n = fprintf(f, spec, va_arg(*ap, intmax_t));
                else if (streq(l, "z"))
                        n = fprintf(f, spec, va_arg(*ap, ssize_t));
                else if (streq(l, "t"))
                        n = fprintf(f, spec, va_arg(*ap, ptrdiff_t));
                else if (!*l || streq(l, "h") || streq(l, "hh"))
                        n = fprintf(f, spec, va_arg(*ap, int));
                else
                        return -EINVAL;
                break;
        case 'o': case 'u': case 'x': case 'X':
                if (streq(l, "l"))
                        n = fprintf(f, spec, va_arg(*ap, unsigned long));
                else if (streq(l, "ll") || streq(l, "q"))
                        n = fprintf(f, spec, va_arg(*ap, unsigned long long));
                else if (streq(l, "j"))
                        n = fprintf(f, spec, va_arg(*ap, uintmax_t));
                else if (streq(l, "z"))
                        n = fprintf(f, spec, va_arg(*ap, size_t));
                else if (streq(l, "t"))
                        n = fprintf(f, spec, va_arg(*ap, ptrdiff_t));
                else if (!*l || streq(l, "h") || streq(l, "hh"))
                        n = fprintf(f, spec, va_arg(*ap, unsigned));
                else
                        return -EINVAL;
                break;
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A':
                if (streq(l, "L"))
                        n = fprintf(f, spec, va_arg(*ap, long double));
                else if (!*l || streq(l, "l"))
                        n = fprintf(f, spec, va_arg(*ap, double));
                else
                        return -EINVAL;
                break;
        case 'p':
                n = fprintf(f, spec, va_arg(*ap, void *));
                break;
        default:
                return -EINVAL; /* %n, and anything else printf(3) does not define */
        }
        return n < 0 ? -EIO : 0;
}

#pragma GCC diagnostic pop

int ctl_vasprintf_untrusted(char **ret, const char *fmt, va_list ap_in) {
        _cleanup_free_ char *buf = NULL;
        int saved_errno = errno, r = 0;
        size_t size = 0;
        va_list ap;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        va_copy(ap, ap_in);
        for (const char *p = fmt; *p && r >= 0;) {
                size_t n = strcspn(p, "%");
                Conv v;

                if (n > 0) {
                        if (fwrite(p, 1, n, f) != n)
                                r = -EIO;
                        p += n;
                        continue;
                }
                p++;
                if (*p == '%') {
                        r = fputc('%', f) == EOF ? -EIO : 0;
                        p++;
                        continue;
                }
                r = conv_parse(&p, &ap, &v);
                if (r < 0)
                        break;
                if (v.conv == 's' || v.conv == 'c' || v.conv == 'm') {
                        const char *s;
                        char c[2] = {};

                        if ((v.conv == 's' || v.conv == 'c') && *v.length)
                                r = -EINVAL; /* wide characters: never used */
                        else if (v.conv == 'c') {
                                c[0] = (char) va_arg(ap, int);
                                r = put_escaped(f, &v, c, c[0] ? 1 : 0);
                        } else {
                                s = v.conv == 'm' ? strerror(saved_errno) : va_arg(ap, const char *) ?: "(null)";
                                r = put_escaped(f, &v, s, strlen(s));
                        }
                } else
                        r = put_plain(f, &v, &ap);
        }
        va_end(ap);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        errno = saved_errno;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}

int ctl_asprintf_untrusted(char **ret, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = ctl_vasprintf_untrusted(ret, fmt, ap);
        va_end(ap);
        return r;
}

int ctl_fprintf_untrusted(FILE *f, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = ctl_vasprintf_untrusted(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return fputs(s, f);
}

int ctl_log_untrusted(int level, int error, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        if (level > log_get_max_level())
                return -abs(error);
        errno = abs(error);
        va_start(ap, fmt);
        r = ctl_vasprintf_untrusted(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return log_full_errno(level, error, "(a message could not be formatted: %s)", strerror(-r));
        return log_full_errno(level, error, "%s", s);
}
