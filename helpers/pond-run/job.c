/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job.c: a job's identity: its id, the paths derived from it, and the service it runs in. */
#include <systemd/sd-login.h>

#include "basic/string-util.h"
#include "job.h"

int job_init(Job *j, const char *job_id) {
        j->audit.job_id = job_id;
        return job_paths_init(&j->paths, job_id);
}

const char *job_bound_service(const Job *j) {
        _cleanup_free_ char *unit = NULL;

        if (sd_pid_get_unit(0, &unit) < 0 || !streq(unit, j->paths.service))
                return NULL;
        return j->paths.service;
}
