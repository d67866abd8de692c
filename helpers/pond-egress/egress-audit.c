/* egress-audit.c: one journal record per egress decision, so "which job reached what, and what was refused
 * and why" is a journalctl query: journalctl POND_JOB_ID=ID POND_EVENT=egress-denied. Field values are
 * built only from parsed, character-checked strings (host names, addresses, static reasons). */
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "egress-audit.h"
#include "journal-record.h"

static const struct {
        const char *name;
        const char *message_id;
        int priority;
} decision_table[_EGRESS_DECISION_MAX] = {
        [EGRESS_DECISION_ALLOWED] = { "egress-allowed", POND_MESSAGE_EGRESS_ALLOWED, LOG_INFO },
        [EGRESS_DECISION_DENIED] = { "egress-denied", POND_MESSAGE_EGRESS_DENIED, LOG_WARNING },
        [EGRESS_DECISION_CLOSED] = { "egress-closed", POND_MESSAGE_EGRESS_CLOSED, LOG_INFO },
        [EGRESS_DECISION_STATS] = { "egress-stats", POND_MESSAGE_EGRESS_STATS, LOG_INFO },
};

const char *egress_decision_to_string(EgressDecision d) {
        return d >= 0 && d < _EGRESS_DECISION_MAX ? decision_table[d].name : NULL;
}

static void format_message(EgressDecision d, const EgressAuditRecord *r, char *buf, size_t size) {
        const char *what = decision_table[d].name + strlen("egress-");

        if (d == EGRESS_DECISION_STATS)
                snprintf(buf, size, "egress %s: %s", what, r->reason ?: "");
        else if (d == EGRESS_DECISION_CLOSED)
                snprintf(buf, size, "egress #%" PRIu64 " %s:%u closed (%s): %" PRIu64 " bytes up, %" PRIu64
                         " bytes down", r->conn, r->host ?: "?", r->port, r->reason ?: "done", r->bytes_up,
                         r->bytes_down);
        else
                snprintf(buf, size, "egress #%" PRIu64 " %s:%u %s%s%s%s%s", r->conn, r->host ?: "?", r->port,
                         what, r->address ? " via " : "", r->address ?: "", r->reason ? ": " : "",
                         r->reason ?: "");
}

int egress_audit(EgressDecision d, const EgressAuditRecord *r) {
        char message[1024];
        JournalRecord f = {};

        if (d < 0 || d >= _EGRESS_DECISION_MAX)
                return -EINVAL;
        format_message(d, r, message, sizeof message);
        journal_record_head(&f, message, decision_table[d].message_id, decision_table[d].priority, "pond-egress",
                            decision_table[d].name, r->job_id);
        if (r->conn)
                journal_record_add(&f, "POND_EGRESS_CONN=%" PRIu64, r->conn);
        if (r->client)
                journal_record_add(&f, "POND_EGRESS_CLIENT=%s", r->client);
        if (r->host)
                journal_record_add(&f, "POND_EGRESS_HOST=%s", r->host);
        if (r->port)
                journal_record_add(&f, "POND_EGRESS_PORT=%u", r->port);
        if (r->address)
                journal_record_add(&f, "POND_EGRESS_ADDRESS=%s", r->address);
        if (r->sni)
                journal_record_add(&f, "POND_EGRESS_SNI=%s", r->sni);
        if (r->reason)
                journal_record_add(&f, "POND_EGRESS_REASON=%s", r->reason);
        if (r->status)
                journal_record_add(&f, "POND_EGRESS_STATUS=%d", r->status);
        if (r->has_bytes) {
                journal_record_add(&f, "POND_EGRESS_BYTES_UP=%" PRIu64, r->bytes_up);
                journal_record_add(&f, "POND_EGRESS_BYTES_DOWN=%" PRIu64, r->bytes_down);
        }
        return journal_record_send(&f, "pond-egress", r->job_id, message);
}
