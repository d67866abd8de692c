/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-outcome.c: how the job ended: the one place its end and its reason are recorded (the first cause is
 * the one the result names), and the status the result gives it. Every phase and feature records through
 * it; it calls nothing of theirs. */
#include <stdarg.h>
#include <stdlib.h>

#include "basic/string-util.h"
#include "job.h"

_printf_(2, 0) static void reason_set(JobOutcome *o, const char *fmt, va_list ap) {
        if (fmt && !o->reason)
                o->reason = strdupf_va(fmt, ap);
}

int job_fail(Job *j, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        reason_set(&j->outcome, fmt, ap);
        va_end(ap);
        return r;
}

int job_end(Job *j, JobEnd end, int r, const char *fmt, ...) {
        JobOutcome *o = &j->outcome;
        va_list ap;

        switch (end) {
        case JOB_END_REFUSED:
                o->refused = true;
                break;
        case JOB_END_FAILED:
                o->failed = true;
                break;
        case JOB_END_CANCELLED:
                o->cancelled = true;
                break;
        case JOB_END_RUNTIME_FAILED:
                o->runtime_failed = true;
                break;
        }
        va_start(ap, fmt);
        reason_set(o, fmt, ap);
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

