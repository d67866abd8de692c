/* audit.c: journal records for every decision pond makes about a job. */
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "audit.h"
#include "journal-record.h"
#include "messages.h"

static const struct {
        const char *name;
        const char *message_id;
        int priority;
} event_table[_POND_EVENT_MAX] = {
        [POND_EVENT_ACCEPTED] = { "accepted", POND_MESSAGE_ACCEPTED, LOG_INFO },
        [POND_EVENT_REFUSED] = { "refused", POND_MESSAGE_REFUSED, LOG_WARNING },
        [POND_EVENT_STARTED] = { "started", POND_MESSAGE_STARTED, LOG_INFO },
        [POND_EVENT_EXITED] = { "exited", POND_MESSAGE_EXITED, LOG_INFO },
        [POND_EVENT_KILLED] = { "killed", POND_MESSAGE_KILLED, LOG_WARNING },
        [POND_EVENT_TIMED_OUT] = { "timed-out", POND_MESSAGE_TIMED_OUT, LOG_WARNING },
        [POND_EVENT_SIGNED] = { "signed", POND_MESSAGE_SIGNED, LOG_INFO },
        [POND_EVENT_CLEANED] = { "cleaned", POND_MESSAGE_CLEANED, LOG_INFO },
        [POND_EVENT_FAILED] = { "failed", POND_MESSAGE_FAILED, LOG_ERR },
};

const char *pond_event_to_string(PondEvent e) {
        return e >= 0 && e < _POND_EVENT_MAX ? event_table[e].name : NULL;
}

int audit_event(const AuditContext *ctx, PondEvent e, int rc, const char *fmt, ...) {
        JournalRecord f = {};
        char message[2048];
        va_list ap;

        if (e < 0 || e >= _POND_EVENT_MAX)
                return -EINVAL;
        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(message, sizeof message, fmt, ap);
#pragma GCC diagnostic pop
        va_end(ap);

        journal_record_head(&f, message, event_table[e].message_id, event_table[e].priority, "pond",
                            event_table[e].name, ctx->job_id);
        if (ctx->profile)
                journal_record_add(&f, "POND_PROFILE=%s", ctx->profile);
        if (ctx->backend)
                journal_record_add(&f, "POND_BACKEND=%s", ctx->backend);
        if (rc > AUDIT_NO_RC)
                journal_record_add(&f, "POND_RC=%d", rc);
        return journal_record_send(&f, "pond", ctx->job_id, message);
}
