/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* audit.h: pond's decisions as structured journal records. One builder, audit_record(), sends every
 * record of every helper from two tables the helper keeps: its events (POND_EVENT name, MESSAGE_ID from
 * messages.h, priority) and its fields (journal name, type, where the value sits in its record struct).
 * The supervisor's own records (POND_JOB_ID, POND_EVENT, POND_PROFILE, POND_BACKEND, POND_RC) go through
 * audit_event(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

/* One kind of record. */
typedef struct AuditEvent {
        const char *name;       /* POND_EVENT= */
        const char *message_id; /* MESSAGE_ID=, from messages.h; each has a units/pond.catalog entry */
        int priority;           /* PRIORITY=, a syslog level */
} AuditEvent;

typedef enum AuditFieldType {
        AUDIT_FIELD_STRING,     /* const char *; left out when NULL */
        AUDIT_FIELD_U64,        /* uint64_t; left out when 0 unless .always */
        AUDIT_FIELD_UNSIGNED,   /* unsigned; left out when 0 unless .always */
        AUDIT_FIELD_INT,        /* int; left out when 0 unless .always */
        AUDIT_FIELD_FORMAT,     /* .format() writes the value; left out when it returns false */
} AuditFieldType;

typedef struct AuditField {
        const char *name;       /* the journal field, "POND_EGRESS_HOST" */
        AuditFieldType type;
        size_t offset;          /* of the value in the caller's record */
        bool always;
        bool (*format)(const void *record, char *buf, size_t size);
} AuditField;

/* Sends MESSAGE, MESSAGE_ID, PRIORITY, SYSLOG_IDENTIFIER=identifier, POND_EVENT, POND_JOB_ID (empty when
 * NULL), then the fields (the table ends with an entry without a name) in table order, read from record.
 * Also writes "identifier[job]: message" to stderr unless stderr already is the journal (so nothing is
 * logged twice). Returns 0 or -errno of sd_journal_sendv. */
int audit_record(const char *identifier, const AuditEvent *event, const char *job_id, const char *message,
                 const AuditField *fields, const void *record);

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
        POND_EVENT_DEGRADED, /* the job runs, but sees host values where its own should be */
        POND_EVENT_CONSOLE,  /* a caller attached to or detached from an interactive job's tty or stdin */
        POND_EVENT_EXEC,     /* a process exec'd into the running job, and its end */
        POND_EVENT_COPY,     /* a file copied into or out of the running job (pondctl cp), and its end */
        _POND_EVENT_MAX,
        _POND_EVENT_INVALID = -EINVAL,
} PondEvent;

typedef struct AuditContext {
        const char *job_id;
        const char *profile; /* NULL until resolved */
        const char *backend;
} AuditContext;

/* Sends one supervisor record (identifier "pond"); rc <= AUDIT_NO_RC means "no POND_RC field". The message
 * is cut at 2047 bytes. Returns 0 or -errno of sd_journal_sendv. */
int audit_event(const AuditContext *ctx, PondEvent e, int rc, const char *fmt, ...) _printf_(4, 5);

#define AUDIT_NO_RC (-1000)
