/* egress-audit.h: pond-egress's decisions as journal records (POND_JOB_ID, POND_EVENT=egress-*,
 * POND_EGRESS_* fields). */
#pragma once

#include <stdint.h>

#include "macro.h"

/* Fresh MESSAGE_IDs of the egress records (one .catalog entry each belongs in units/pond.catalog). */
#define POND_MESSAGE_EGRESS_ALLOWED "b356fffc10e548db80ac209a35d9695b"
#define POND_MESSAGE_EGRESS_DENIED  "1a87fd72eafe42d28a703b09a1cb4ac1"
#define POND_MESSAGE_EGRESS_CLOSED  "ecf91c0648144c898d3be20e6e2c1ff9"
#define POND_MESSAGE_EGRESS_STATS   "61b6f9f7743149f3a5eeabe1d87c18d3"

typedef enum EgressDecision {
        EGRESS_DECISION_ALLOWED,  /* tunnel open: CONNECT, allowlist, addresses and SNI all passed */
        EGRESS_DECISION_DENIED,   /* refused, with POND_EGRESS_REASON and POND_EGRESS_STATUS */
        EGRESS_DECISION_CLOSED,   /* an allowed tunnel ended, with its byte counts */
        EGRESS_DECISION_STATS,    /* the job's totals at exit */
        _EGRESS_DECISION_MAX,
        _EGRESS_DECISION_INVALID = -EINVAL,
} EgressDecision;

const char *egress_decision_to_string(EgressDecision d);

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
