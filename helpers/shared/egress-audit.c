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

static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == (dev_t) dev && st.st_ino == (ino_t) ino;
}

typedef struct Fields {
        struct iovec iov[20];
        size_t n;
} Fields;

static void add(Fields *f, const char *fmt, ...) _printf_(2, 3);
static void add(Fields *f, const char *fmt, ...) {
        va_list ap;
        char *s;

        if (f->n >= ELEMENTSOF(f->iov))
                return;
        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        if (vasprintf(&s, fmt, ap) >= 0)
                f->iov[f->n++] = (struct iovec) { s, strlen(s) };
#pragma GCC diagnostic pop
        va_end(ap);
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
        Fields f = {};
        int k;

        if (d < 0 || d >= _EGRESS_DECISION_MAX)
                return -EINVAL;
        format_message(d, r, message, sizeof message);
        add(&f, "MESSAGE=%s", message);
        add(&f, "MESSAGE_ID=%s", decision_table[d].message_id);
        add(&f, "PRIORITY=%d", decision_table[d].priority);
        add(&f, "SYSLOG_IDENTIFIER=pond-egress");
        add(&f, "POND_EVENT=%s", decision_table[d].name);
        add(&f, "POND_JOB_ID=%s", r->job_id ?: "");
        if (r->conn)
                add(&f, "POND_EGRESS_CONN=%" PRIu64, r->conn);
        if (r->client)
                add(&f, "POND_EGRESS_CLIENT=%s", r->client);
        if (r->host)
                add(&f, "POND_EGRESS_HOST=%s", r->host);
        if (r->port)
                add(&f, "POND_EGRESS_PORT=%u", r->port);
        if (r->address)
                add(&f, "POND_EGRESS_ADDRESS=%s", r->address);
        if (r->sni)
                add(&f, "POND_EGRESS_SNI=%s", r->sni);
        if (r->reason)
                add(&f, "POND_EGRESS_REASON=%s", r->reason);
        if (r->status)
                add(&f, "POND_EGRESS_STATUS=%d", r->status);
        if (r->has_bytes) {
                add(&f, "POND_EGRESS_BYTES_UP=%" PRIu64, r->bytes_up);
                add(&f, "POND_EGRESS_BYTES_DOWN=%" PRIu64, r->bytes_down);
        }
        k = sd_journal_sendv(f.iov, (int) f.n);
        if (!stderr_is_journal())
                fprintf(stderr, "pond-egress[%s]: %s\n", r->job_id ?: "", message);
        for (size_t i = 0; i < f.n; i++)
                free(f.iov[i].iov_base);
        return k;
}
