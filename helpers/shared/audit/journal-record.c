/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* journal-record.c: building and sending pond's structured journal records. */
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "audit/journal-record.h"
#include "basic/string-util.h"

void journal_record_add(JournalRecord *r, const char *fmt, ...) {
        va_list ap;
        char *s;

        if (r->n >= ELEMENTSOF(r->iov))
                return;
        va_start(ap, fmt);
        s = strdupf_va(fmt, ap);
        va_end(ap);
        if (s)
                r->iov[r->n++] = (struct iovec) { s, strlen(s) };
}

void journal_record_head(JournalRecord *r, const char *message, const char *message_id, int priority,
                         const char *identifier, const char *event, const char *job_id) {
        journal_record_add(r, "MESSAGE=%s", message);
        journal_record_add(r, "MESSAGE_ID=%s", message_id);
        journal_record_add(r, "PRIORITY=%d", priority);
        journal_record_add(r, "SYSLOG_IDENTIFIER=%s", identifier);
        journal_record_add(r, "POND_EVENT=%s", event);
        journal_record_add(r, "POND_JOB_ID=%s", job_id ?: "");
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

int journal_record_send(JournalRecord *r, const char *prefix, const char *job_id, const char *message) {
        int k = sd_journal_sendv(r->iov, (int) r->n);

        if (!stderr_is_journal())
                fprintf(stderr, "%s[%s]: %s\n", prefix, job_id ?: "-", message);
        for (size_t i = 0; i < r->n; i++)
                free(r->iov[i].iov_base);
        r->n = 0;
        return k;
}
