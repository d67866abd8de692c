/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-outcome.c: how the job ended: the one place its end and its reason are recorded (the first cause is
 * the one the result names), and the status the result gives it. Every phase and feature records through
 * it; it calls nothing of theirs. */
#include <stdarg.h>
#include <stdlib.h>

#include "basic/string-util.h"
#include "job.h"

int job_fail(Job *j, int r, const char *fmt, ...) {
        va_list ap;

        if (j->outcome.reason)
                return r;
        va_start(ap, fmt);
        j->outcome.reason = strdupf_va(fmt, ap);
        va_end(ap);
        return r;
}

const char *job_status(const Job *j) {
        if (j->outcome.refused)
                return "refused";
        if (j->outcome.failed)
                return "failed";
        return j->outcome.cancelled ? "cancelled" : "completed";
}

void job_outcome_done(JobOutcome *o) {
        free(o->reason);
        *o = (JobOutcome) JOB_OUTCOME_NULL;
}

