/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-audit.c: one journal record per brokered or refused request, so "what did the job's agent call,
 * what did it cost, what was refused and why" is a journalctl query:
 * journalctl POND_JOB_ID=ID POND_EVENT=broker-refused. Values come from checked strings only. */
#include <inttypes.h>
#include <stdio.h>
#include <syslog.h>

#include "audit/audit.h"
#include "audit/messages.h"
#include "broker-audit.h"
#include "broker-price.h"

static const AuditEvent event_table[_BROKER_EVENT_MAX] = {
        [BROKER_EVENT_REQUEST] = { "broker-request", POND_MESSAGE_BROKER_REQUEST, LOG_INFO },
        [BROKER_EVENT_REFUSED] = { "broker-refused", POND_MESSAGE_BROKER_REFUSED, LOG_WARNING },
        [BROKER_EVENT_CEILING] = { "broker-ceiling", POND_MESSAGE_BROKER_CEILING, LOG_WARNING },
        [BROKER_EVENT_STATS] = { "broker-stats", POND_MESSAGE_BROKER_STATS, LOG_INFO },
};

/* The cost in cents with six decimals, for the message and POND_BROKER_COST_CENTS. */
static bool format_cost(const void *record, char *buf, size_t size) {
        const BrokerAuditRecord *r = record;

        snprintf(buf, size, "%" PRIu64 ".%06" PRIu64, r->cost / BROKER_NANOCENTS_PER_CENT,
                 r->cost % BROKER_NANOCENTS_PER_CENT / 1000);
        return true;
}

static void format_message(BrokerEvent e, const BrokerAuditRecord *r, char *buf, size_t size) {
        char cost[32];

        format_cost(r, cost, sizeof cost);
        if (e == BROKER_EVENT_STATS || e == BROKER_EVENT_CEILING)
                snprintf(buf, size, "%s: %s", event_table[e].name, r->reason ?: "");
        else
                snprintf(buf, size, "broker #%" PRIu64 " %s %s%s%s -> %d%s%s, %" PRIu64 " bytes up, %" PRIu64
                         " bytes down, %" PRIu64 "+%" PRIu64 " tokens, %s cents", r->request, r->method ?: "?",
                         r->credential ? "/" : "", r->credential ?: "", r->path ?: "", r->status,
                         r->reason ? ": " : "", r->reason ?: "",
                         r->bytes_up, r->bytes_down, r->input_tokens, r->output_tokens, cost);
}

static const AuditField broker_fields[] = {
        { "POND_BROKER_REQUEST",       AUDIT_FIELD_U64,    .offset = offsetof(BrokerAuditRecord, request) },
        { "POND_BROKER_CREDENTIAL",    AUDIT_FIELD_STRING, .offset = offsetof(BrokerAuditRecord, credential) },
        { "POND_BROKER_METHOD",        AUDIT_FIELD_STRING, .offset = offsetof(BrokerAuditRecord, method) },
        { "POND_BROKER_PATH",          AUDIT_FIELD_STRING, .offset = offsetof(BrokerAuditRecord, path) },
        { "POND_BROKER_STATUS",        AUDIT_FIELD_INT,    .offset = offsetof(BrokerAuditRecord, status) },
        { "POND_BROKER_REASON",        AUDIT_FIELD_STRING, .offset = offsetof(BrokerAuditRecord, reason) },
        { "POND_BROKER_BYTES_UP",      AUDIT_FIELD_U64,    .offset = offsetof(BrokerAuditRecord, bytes_up),
          .always = true },
        { "POND_BROKER_BYTES_DOWN",    AUDIT_FIELD_U64,    .offset = offsetof(BrokerAuditRecord, bytes_down),
          .always = true },
        { "POND_BROKER_INPUT_TOKENS",  AUDIT_FIELD_U64,    .offset = offsetof(BrokerAuditRecord, input_tokens),
          .always = true },
        { "POND_BROKER_OUTPUT_TOKENS", AUDIT_FIELD_U64,    .offset = offsetof(BrokerAuditRecord, output_tokens),
          .always = true },
        { "POND_BROKER_COST_CENTS",    AUDIT_FIELD_FORMAT, .format = format_cost },
        {}
};

int broker_audit(BrokerEvent e, const BrokerAuditRecord *r) {
        char message[1024];

        if (e < 0 || e >= _BROKER_EVENT_MAX)
                return -EINVAL;
        format_message(e, r, message, sizeof message);
        return audit_record("pond-broker", &event_table[e], r->job_id, message, broker_fields, r);
}
