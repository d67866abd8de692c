/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-audit.c: one journal record per egress decision, so "which job reached what, and what was refused
 * and why" is a journalctl query: journalctl POND_JOB_ID=ID POND_EVENT=egress-denied. Field values are
 * built only from parsed, character-checked strings (host names, addresses, static reasons). */
#include <inttypes.h>
#include <stdio.h>
#include <syslog.h>

#include "audit/audit.h"
#include "audit/messages.h"
#include "egress-audit.h"

static const AuditEvent decision_table[_EGRESS_DECISION_MAX] = {
        [EGRESS_DECISION_ALLOWED] = { "egress-allowed", POND_MESSAGE_EGRESS_ALLOWED, LOG_INFO },
        [EGRESS_DECISION_DENIED] = { "egress-denied", POND_MESSAGE_EGRESS_DENIED, LOG_WARNING },
        [EGRESS_DECISION_CLOSED] = { "egress-closed", POND_MESSAGE_EGRESS_CLOSED, LOG_INFO },
        [EGRESS_DECISION_STATS] = { "egress-stats", POND_MESSAGE_EGRESS_STATS, LOG_INFO },
};

/* The byte counts only where the record has them (closed tunnels, the totals). */
static bool format_bytes_up(const void *record, char *buf, size_t size) {
        const EgressAuditRecord *r = record;

        if (!r->has_bytes)
                return false;
        snprintf(buf, size, "%" PRIu64, r->bytes_up);
        return true;
}

static bool format_bytes_down(const void *record, char *buf, size_t size) {
        const EgressAuditRecord *r = record;

        if (!r->has_bytes)
                return false;
        snprintf(buf, size, "%" PRIu64, r->bytes_down);
        return true;
}

static const AuditField egress_fields[] = {
        { "POND_EGRESS_CONN",       AUDIT_FIELD_U64,      .offset = offsetof(EgressAuditRecord, conn) },
        { "POND_EGRESS_CLIENT",     AUDIT_FIELD_STRING,   .offset = offsetof(EgressAuditRecord, client) },
        { "POND_EGRESS_HOST",       AUDIT_FIELD_STRING,   .offset = offsetof(EgressAuditRecord, host) },
        { "POND_EGRESS_PORT",       AUDIT_FIELD_UNSIGNED, .offset = offsetof(EgressAuditRecord, port) },
        { "POND_EGRESS_ADDRESS",    AUDIT_FIELD_STRING,   .offset = offsetof(EgressAuditRecord, address) },
        { "POND_EGRESS_SNI",        AUDIT_FIELD_STRING,   .offset = offsetof(EgressAuditRecord, sni) },
        { "POND_EGRESS_REASON",     AUDIT_FIELD_STRING,   .offset = offsetof(EgressAuditRecord, reason) },
        { "POND_EGRESS_STATUS",     AUDIT_FIELD_INT,      .offset = offsetof(EgressAuditRecord, status) },
        { "POND_EGRESS_BYTES_UP",   AUDIT_FIELD_FORMAT,   .format = format_bytes_up },
        { "POND_EGRESS_BYTES_DOWN", AUDIT_FIELD_FORMAT,   .format = format_bytes_down },
        {}
};

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

        if (d < 0 || d >= _EGRESS_DECISION_MAX)
                return -EINVAL;
        format_message(d, r, message, sizeof message);
        return audit_record("pond-egress", &decision_table[d], r->job_id, message, egress_fields, r);
}
