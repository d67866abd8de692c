/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* journal-record.h: one structured journal record, built field by field: what audit.c, egress-audit.c and
 * broker-audit.c all send (MESSAGE, MESSAGE_ID, PRIORITY, POND_EVENT, POND_JOB_ID, and their own fields). */
#pragma once

#include <sys/uio.h>

#include "basic/macro.h"

typedef struct JournalRecord {
        struct iovec iov[32];
        size_t n;
} JournalRecord;

/* Adds one "FIELD=value" (printf-style); past 32 fields, or without memory, the field is dropped. */
void journal_record_add(JournalRecord *r, const char *fmt, ...) _printf_(2, 3);

/* The fields every pond record carries. */
void journal_record_head(JournalRecord *r, const char *message, const char *message_id, int priority,
                         const char *identifier, const char *event, const char *job_id);

/* Sends the record, echoes "prefix[job]: message" to stderr unless stderr already is the journal (so
 * nothing is logged twice), and frees the fields. Returns sd_journal_sendv()'s result. */
int journal_record_send(JournalRecord *r, const char *prefix, const char *job_id, const char *message);
