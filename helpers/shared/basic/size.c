/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* size.c: byte sizes as the policy and overrides write them ("512M", "2GiB", "1048576"). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/size.h"

static const struct {
        const char *suffix;
        unsigned shift;
} size_suffixes[] = {
        { "",    0 },
        { "K",   10 }, { "KiB", 10 }, { "k", 10 },
        { "M",   20 }, { "MiB", 20 }, { "m", 20 },
        { "G",   30 }, { "GiB", 30 }, { "g", 30 },
        { "T",   40 }, { "TiB", 40 }, { "t", 40 },
};

int parse_size(const char *s, uint64_t *ret) {
        uint64_t v = 0;
        const char *p;

        if (!s || !ret)
                return -EINVAL;
        /* Digits only: no sign, no leading space and no base prefix, which strtoull() would all take. */
        for (p = s; *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned) (*p - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        if (p == s)
                return -EINVAL;

        for (size_t i = 0; i < ELEMENTSOF(size_suffixes); i++) {
                unsigned shift = size_suffixes[i].shift;

                if (!streq(p, size_suffixes[i].suffix))
                        continue;
                if (v > (UINT64_MAX >> shift))
                        return -EINVAL;
                *ret = v << shift;
                return 0;
        }
        return -EINVAL;
}
