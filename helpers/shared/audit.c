/* audit.c: journal records for every decision pond makes about a job. */
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "audit.h"
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

/* systemd sets JOURNAL_STREAM=dev:ino when stderr is connected to the journal. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == (dev_t) dev && st.st_ino == (ino_t) ino;
}

#define FIELD(iov, n, ...)                                                       \
        do {                                                                     \
                char *_s = NULL;                                                 \
                if (asprintf(&_s, __VA_ARGS__) >= 0) {                           \
                        iov[n].iov_base = _s;                                    \
                        iov[n].iov_len = strlen(_s);                             \
                        n++;                                                     \
                }                                                                \
        } while (0)

int audit_event(const AuditContext *ctx, PondEvent e, int rc, const char *fmt, ...) {
        struct iovec iov[10];
        char message[2048];
        size_t n = 0;
        va_list ap;
        int r;

        if (e < 0 || e >= _POND_EVENT_MAX)
                return -EINVAL;
        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(message, sizeof message, fmt, ap);
#pragma GCC diagnostic pop
        va_end(ap);

        FIELD(iov, n, "MESSAGE=%s", message);
        FIELD(iov, n, "MESSAGE_ID=%s", event_table[e].message_id);
        FIELD(iov, n, "PRIORITY=%d", event_table[e].priority);
        FIELD(iov, n, "SYSLOG_IDENTIFIER=pond");
        FIELD(iov, n, "POND_EVENT=%s", event_table[e].name);
        FIELD(iov, n, "POND_JOB_ID=%s", ctx->job_id ?: "");
        if (ctx->profile)
                FIELD(iov, n, "POND_PROFILE=%s", ctx->profile);
        if (ctx->backend)
                FIELD(iov, n, "POND_BACKEND=%s", ctx->backend);
        if (rc > AUDIT_NO_RC)
                FIELD(iov, n, "POND_RC=%d", rc);

        r = sd_journal_sendv(iov, (int) n);
        for (size_t i = 0; i < n; i++)
                free(iov[i].iov_base);
        if (!stderr_is_journal())
                fprintf(stderr, "pond[%s] %s: %s\n", ctx->job_id ?: "-", event_table[e].name, message);
        return r;
}
