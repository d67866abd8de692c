/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dirs.c: pond's directories and their environment overrides. */
#include <stdlib.h>

#include "basic/dirs.h"
#include "config.h"

static const struct {
        const char *env;        /* NULL: not relocatable */
        const char *path;
} dir_table[_POND_DIR_MAX] = {
        [POND_DIR_POLICY] = { "POND_POLICYDIR", POND_POLICYDIR },
        [POND_DIR_STATE] = { "POND_STATEDIR", POND_STATEDIR },
        [POND_DIR_RUN] = { "POND_RUNDIR", POND_RUNDIR },
        [POND_DIR_KEY] = { NULL, POND_KEYDIR },
        [POND_DIR_NFT] = { NULL, POND_NFTDIR },
        [POND_DIR_CONFIG] = { "POND_CONFDIR", POND_CONFDIR },
        [POND_DIR_LIBEXEC] = { NULL, POND_LIBEXECDIR },
};

const char *pond_dir(PondDir d) {
        const char *e;

        if (d < 0 || d >= _POND_DIR_MAX)
                return NULL;
        e = dir_table[d].env ? getenv(dir_table[d].env) : NULL;
        return e ?: dir_table[d].path;
}
