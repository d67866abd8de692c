/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-audit.h: pond-egress's decisions as journal records (POND_JOB_ID, POND_EVENT=egress-*,
 * POND_EGRESS_* fields; MESSAGE_IDs in messages.h). */
#pragma once

#include <stdint.h>

#include "basic/macro.h"

typedef enum EgressDecision {
        EGRESS_DECISION_ALLOWED,  /* tunnel open: CONNECT, allowlist, addresses and SNI all passed */
        EGRESS_DECISION_DENIED,   /* refused, with POND_EGRESS_REASON and POND_EGRESS_STATUS */
        EGRESS_DECISION_CLOSED,   /* an allowed tunnel ended, with its byte counts */
        EGRESS_DECISION_STATS,    /* the job's totals at exit */
        _EGRESS_DECISION_MAX,
        _EGRESS_DECISION_INVALID = -EINVAL,
} EgressDecision;

typedef struct EgressAuditRecord {
        const char *job_id;
        uint64_t conn;          /* serial number of the connection in this proxy, 0 for none */
        const char *client;     /* peer address of the job's socket */
        const char *host;       /* CONNECT host as sent (only [A-Za-z0-9.:-] reach here) */
        unsigned port;
        const char *address;    /* the dialled (or refused) address */
        const char *sni;        /* sanitized before it gets here */
        const char *reason;
        int status;             /* HTTP status answered, 0 for none */
        bool has_bytes;
        uint64_t bytes_up, bytes_down;
} EgressAuditRecord;

/* Returns 0 or -errno of sd_journal_sendv; also writes MESSAGE to stderr unless stderr is the journal. */
int egress_audit(EgressDecision d, const EgressAuditRecord *rec);
