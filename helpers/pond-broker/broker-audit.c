/* broker-audit.c: one journal record per brokered or refused request, so "what did the job's agent call,
 * what did it cost, what was refused and why" is a journalctl query:
 * journalctl POND_JOB_ID=ID POND_EVENT=broker-refused. Values come from checked strings only. */
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "broker-audit.h"
#include "journal-record.h"
#include "broker-price.h"

static const struct {
        const char *name;
        const char *message_id;
        int priority;
} event_table[_BROKER_EVENT_MAX] = {
        [BROKER_EVENT_REQUEST] = { "broker-request", POND_MESSAGE_BROKER_REQUEST, LOG_INFO },
        [BROKER_EVENT_REFUSED] = { "broker-refused", POND_MESSAGE_BROKER_REFUSED, LOG_WARNING },
        [BROKER_EVENT_CEILING] = { "broker-ceiling", POND_MESSAGE_BROKER_CEILING, LOG_WARNING },
        [BROKER_EVENT_STATS] = { "broker-stats", POND_MESSAGE_BROKER_STATS, LOG_INFO },
};

const char *broker_event_to_string(BrokerEvent e) {
        return e >= 0 && e < _BROKER_EVENT_MAX ? event_table[e].name : NULL;
}

static void format_cost(uint64_t nanocents, char buf[32]) {
        snprintf(buf, 32, "%" PRIu64 ".%06" PRIu64, nanocents / BROKER_NANOCENTS_PER_CENT,
                 nanocents % BROKER_NANOCENTS_PER_CENT / 1000);
}

static void format_message(BrokerEvent e, const BrokerAuditRecord *r, char *buf, size_t size) {
        char cost[32];

        format_cost(r->cost, cost);
        if (e == BROKER_EVENT_STATS || e == BROKER_EVENT_CEILING)
                snprintf(buf, size, "%s: %s", event_table[e].name, r->reason ?: "");
        else
                snprintf(buf, size, "broker #%" PRIu64 " %s %s%s%s -> %d%s%s, %" PRIu64 " bytes up, %" PRIu64
                         " bytes down, %" PRIu64 "+%" PRIu64 " tokens, %s cents", r->request, r->method ?: "?",
                         r->credential ? "/" : "", r->credential ?: "", r->path ?: "", r->status,
                         r->reason ? ": " : "", r->reason ?: "",
                         r->bytes_up, r->bytes_down, r->input_tokens, r->output_tokens, cost);
}

static void add_fields(JournalRecord *f, const BrokerAuditRecord *r) {
        char cost[32];

        if (r->request)
                journal_record_add(f, "POND_BROKER_REQUEST=%" PRIu64, r->request);
        if (r->credential)
                journal_record_add(f, "POND_BROKER_CREDENTIAL=%s", r->credential);
        if (r->method)
                journal_record_add(f, "POND_BROKER_METHOD=%s", r->method);
        if (r->path)
                journal_record_add(f, "POND_BROKER_PATH=%s", r->path);
        if (r->status)
                journal_record_add(f, "POND_BROKER_STATUS=%d", r->status);
        if (r->reason)
                journal_record_add(f, "POND_BROKER_REASON=%s", r->reason);
        format_cost(r->cost, cost);
        journal_record_add(f, "POND_BROKER_BYTES_UP=%" PRIu64, r->bytes_up);
        journal_record_add(f, "POND_BROKER_BYTES_DOWN=%" PRIu64, r->bytes_down);
        journal_record_add(f, "POND_BROKER_INPUT_TOKENS=%" PRIu64, r->input_tokens);
        journal_record_add(f, "POND_BROKER_OUTPUT_TOKENS=%" PRIu64, r->output_tokens);
        journal_record_add(f, "POND_BROKER_COST_CENTS=%s", cost);
}

int broker_audit(BrokerEvent e, const BrokerAuditRecord *r) {
        char message[1024];
        JournalRecord f = {};

        if (e < 0 || e >= _BROKER_EVENT_MAX)
                return -EINVAL;
        format_message(e, r, message, sizeof message);
        journal_record_head(&f, message, event_table[e].message_id, event_table[e].priority, "pond-broker",
                            event_table[e].name, r->job_id);
        add_fields(&f, r);
        return journal_record_send(&f, "pond-broker", r->job_id, message);
}
