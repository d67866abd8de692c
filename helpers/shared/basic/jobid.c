/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* jobid.c: the job id grammar. An id becomes a directory name under /var/lib/pond/jobs, a unit instance
 * (pond-job@ID.service) and a journal field, so it is kept to a small, path- and unit-safe alphabet. */
#include <stdbool.h>
#include <string.h>

#include "basic/jobid.h"

static bool is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool job_id_is_valid(const char *id) {
        size_t n;

        if (!id)
                return false;
        n = strlen(id);
        /* The first character is alphanumeric, which also rules out ".", "..", "-x" (an option) and
         * hidden files. */
        if (n == 0 || n > JOB_ID_MAX || !is_alnum(id[0]))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!is_alnum(id[i]) && id[i] != '_' && id[i] != '.' && id[i] != '-')
                        return false;
        return true;
}
