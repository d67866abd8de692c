/* audit.h: pond's decisions as structured journal records (POND_JOB_ID, POND_EVENT, POND_PROFILE,
 * POND_BACKEND, POND_RC, MESSAGE_ID from messages.h). */
#pragma once

#include "macro.h"

typedef enum PondEvent {
        POND_EVENT_ACCEPTED,
        POND_EVENT_REFUSED,
        POND_EVENT_STARTED,
        POND_EVENT_EXITED,
        POND_EVENT_KILLED,
        POND_EVENT_TIMED_OUT,
        POND_EVENT_SIGNED,
        POND_EVENT_CLEANED,
        POND_EVENT_FAILED,
        _POND_EVENT_MAX,
        _POND_EVENT_INVALID = -EINVAL,
} PondEvent;

const char *pond_event_to_string(PondEvent e);

typedef struct AuditContext {
        const char *job_id;
        const char *profile; /* NULL until resolved */
        const char *backend;
} AuditContext;

/* Sends one record; rc < -255 means "no POND_RC field". Also echoes MESSAGE to stderr unless stderr
 * already is the journal (so nothing is logged twice). Returns 0 or -errno of sd_journal_sendv. */
int audit_event(const AuditContext *ctx, PondEvent e, int rc, const char *fmt, ...) _printf_(4, 5);

#define AUDIT_NO_RC (-1000)
