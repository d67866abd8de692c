/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-audit.h: pond-broker's requests as journal records (POND_JOB_ID, POND_EVENT=broker-*,
 * POND_BROKER_* fields; MESSAGE_IDs in messages.h). No record ever carries a header value: the keys cannot
 * reach the journal. */
#pragma once

#include <stdint.h>

#include "basic/macro.h"

typedef enum BrokerEvent {
        BROKER_EVENT_REQUEST,   /* forwarded upstream; status is the upstream's (or 502/504) */
        BROKER_EVENT_REFUSED,   /* refused by the broker, with POND_BROKER_REASON */
        BROKER_EVENT_CEILING,   /* the job reached max_cost_cents (once) */
        BROKER_EVENT_STATS,     /* the job's totals at exit */
        _BROKER_EVENT_MAX,
        _BROKER_EVENT_INVALID = -EINVAL,
} BrokerEvent;

typedef struct BrokerAuditRecord {
        const char *job_id;
        uint64_t request;       /* serial number of the request in this broker, 0 for none */
        const char *credential;
        const char *method;
        const char *path;       /* after /CREDENTIAL if that is set, else the whole request target (printable) */
        int status;
        uint64_t bytes_up, bytes_down;
        uint64_t input_tokens, output_tokens;
        uint64_t cost;          /* nanocents */
        const char *reason;
} BrokerAuditRecord;

/* Returns 0 or -errno of sd_journal_sendv; also writes MESSAGE to stderr unless stderr is the journal. */
int broker_audit(BrokerEvent e, const BrokerAuditRecord *rec);
