/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* audit.c: the one builder of pond's journal records (over journal-record.c), and the supervisor's own
 * table of events. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <syslog.h>

#include "audit/audit.h"
#include "audit/journal-record.h"
#include "audit/messages.h"
#include "basic/string-util.h"

#define AUDIT_MESSAGE_MAX 2047

#define RECORD_VALUE(record, f, type) (*(const type *) ((const uint8_t *) (record) + (f)->offset))

static void add_field(JournalRecord *j, const AuditField *f, const void *record) {
        char buf[64];

        switch (f->type) {
        case AUDIT_FIELD_STRING:
                if (RECORD_VALUE(record, f, char *))
                        journal_record_add(j, "%s=%s", f->name, RECORD_VALUE(record, f, char *));
                break;
        case AUDIT_FIELD_U64:
                if (RECORD_VALUE(record, f, uint64_t) || f->always)
                        journal_record_add(j, "%s=%" PRIu64, f->name, RECORD_VALUE(record, f, uint64_t));
                break;
        case AUDIT_FIELD_UNSIGNED:
                if (RECORD_VALUE(record, f, unsigned) || f->always)
                        journal_record_add(j, "%s=%u", f->name, RECORD_VALUE(record, f, unsigned));
                break;
        case AUDIT_FIELD_INT:
                if (RECORD_VALUE(record, f, int) || f->always)
                        journal_record_add(j, "%s=%d", f->name, RECORD_VALUE(record, f, int));
                break;
        case AUDIT_FIELD_FORMAT:
                if (f->format(record, buf, sizeof buf))
                        journal_record_add(j, "%s=%s", f->name, buf);
                break;
        }
}

int audit_record(const char *identifier, const AuditEvent *event, const char *job_id, const char *message,
                 const AuditField *fields, const void *record) {
        JournalRecord j = {};

        journal_record_head(&j, message, event->message_id, event->priority, identifier, event->name, job_id);
        for (const AuditField *f = fields; f && f->name; f++)
                add_field(&j, f, record);
        return journal_record_send(&j, identifier, job_id, message);
}

static const AuditEvent pond_events[_POND_EVENT_MAX] = {
        [POND_EVENT_ACCEPTED] = { "accepted", POND_MESSAGE_ACCEPTED, LOG_INFO },
        [POND_EVENT_REFUSED] = { "refused", POND_MESSAGE_REFUSED, LOG_WARNING },
        [POND_EVENT_STARTED] = { "started", POND_MESSAGE_STARTED, LOG_INFO },
        [POND_EVENT_EXITED] = { "exited", POND_MESSAGE_EXITED, LOG_INFO },
        [POND_EVENT_KILLED] = { "killed", POND_MESSAGE_KILLED, LOG_WARNING },
        [POND_EVENT_TIMED_OUT] = { "timed-out", POND_MESSAGE_TIMED_OUT, LOG_WARNING },
        [POND_EVENT_SIGNED] = { "signed", POND_MESSAGE_SIGNED, LOG_INFO },
        [POND_EVENT_CLEANED] = { "cleaned", POND_MESSAGE_CLEANED, LOG_INFO },
        [POND_EVENT_FAILED] = { "failed", POND_MESSAGE_FAILED, LOG_ERR },
        [POND_EVENT_DEGRADED] = { "degraded", POND_MESSAGE_DEGRADED, LOG_WARNING },
        [POND_EVENT_CONSOLE] = { "console", POND_MESSAGE_CONSOLE, LOG_NOTICE },
        [POND_EVENT_EXEC] = { "exec", POND_MESSAGE_EXEC, LOG_NOTICE },
        [POND_EVENT_COPY] = { "copy", POND_MESSAGE_COPY, LOG_NOTICE },
};

typedef struct PondRecord {
        const char *profile;
        const char *backend;
        int rc;
} PondRecord;

static bool format_rc(const void *record, char *buf, size_t size) {
        const PondRecord *r = record;

        if (r->rc <= AUDIT_NO_RC)
                return false;
        snprintf(buf, size, "%d", r->rc);
        return true;
}

static const AuditField pond_fields[] = {
        { "POND_PROFILE", AUDIT_FIELD_STRING, .offset = offsetof(PondRecord, profile) },
        { "POND_BACKEND", AUDIT_FIELD_STRING, .offset = offsetof(PondRecord, backend) },
        { "POND_RC",      AUDIT_FIELD_FORMAT, .format = format_rc },
        {}
};

int audit_event(const AuditContext *ctx, PondEvent e, int rc, const char *fmt, ...) {
        PondRecord r = { ctx->profile, ctx->backend, rc };
        _cleanup_free_ char *message = NULL;
        va_list ap;

        if (e < 0 || e >= _POND_EVENT_MAX)
                return -EINVAL;
        va_start(ap, fmt);
        message = strdupf_va(fmt, ap);
        va_end(ap);
        if (!message)
                return -ENOMEM;
        if (strlen(message) > AUDIT_MESSAGE_MAX)
                message[AUDIT_MESSAGE_MAX] = 0;
        return audit_record("pond", &pond_events[e], ctx->job_id, message, pond_fields, &r);
}
