/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* macro.h: the small vocabulary every pond file shares: cleanup attributes and the cleanup helpers of
 * libc and json-c (DEFINE_TRIVIAL_CLEANUP_FUNC for more; libsystemd exports its own sd_*_unrefp), ownership
 * transfer (TAKE_PTR/TAKE_FD), synthetic errno values, array sizes, MIN/MAX. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include <dirent.h>
#include <json-c/json.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))
#define _noreturn_ __attribute__((noreturn))
#define _fallthrough_ __attribute__((fallthrough))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define XSTRINGIFY(x) #x
#define STRINGIFY(x) XSTRINGIFY(x)

/* The one definition (sys/param.h has its own: not included anywhere in pond). Arguments are evaluated
 * twice: no side effects in them. */
#undef MIN
#undef MAX
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define TAKE_PTR(p)                                     \
        ({                                              \
                __typeof__(p) _p_ = (p);                \
                (p) = NULL;                             \
                _p_;                                    \
        })

#define TAKE_FD(fd)                                     \
        ({                                              \
                int _fd_ = (fd);                        \
                (fd) = -EBADF;                          \
                _fd_;                                   \
        })

/* A func##p() for _cleanup_(func##p) that calls func(*p) unless *p is empty (NULL, or the given value);
 * func's own return value is ignored (json_object_put() returns int, nft_ctx_free() nothing). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC_FULL(type, func, empty)     \
        static inline void func##p(type *p) {                   \
                if (*p != (empty))                              \
                        func(*p);                               \
        }
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) DEFINE_TRIVIAL_CLEANUP_FUNC_FULL(type, func, NULL)

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose);
#define _cleanup_fclose_ _cleanup_(fclosep)

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);
#define _cleanup_closedir_ _cleanup_(closedirp)

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);
#define _cleanup_json_ _cleanup_(json_object_putp)

static inline void strv_freep(char ***l) {
        if (*l)
                for (char **i = *l; *i; i++)
                        free(*i);
        free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

#define RET_NERRNO(expr)                                \
        ({                                              \
                int _r_ = (expr);                       \
                _r_ < 0 ? negative_errno() : _r_;       \
        })

static inline size_t strv_length(char * const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

#define streq(a, b) (strcmp((a), (b)) == 0)
/* Equal strings, or both NULL. */
static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}

#include <time.h>
#include <stdint.h>
static inline uint64_t clock_usec(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}
