/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-audit.c: the journal records of the supervisor, pond-egress and pond-broker, field by field and in
 * order, as the catalog and the integration tests read them. sd_journal_sendv is wrapped at link time
 * (tests/meson.build), so every record lands in record_ here instead of the journal. */
#include <stdarg.h>
#include <string.h>
#include <sys/uio.h>

#include "audit/audit.h"
#include "audit/messages.h"
#include "basic/macro.h"
#include "broker-audit.h"
#include "egress-audit.h"
#include "tests.h"

TEST_MAIN();

static char record_[8192];

int __wrap_sd_journal_sendv_with_location(const char *file, const char *line, const char *func,
                                          const struct iovec *iov, int n);
int __wrap_sd_journal_sendv_with_location(const char *file, const char *line, const char *func,
                                          const struct iovec *iov, int n) {
        size_t len = 0;

        for (int i = 0; i < n && len < sizeof record_; i++)
                len += (size_t) snprintf(record_ + len, sizeof record_ - len, "%.*s\n", (int) iov[i].iov_len,
                                         (const char *) iov[i].iov_base);
        return 0;
}

TEST(supervisor_records) {
        AuditContext bare = { "job-1", NULL, NULL }, full = { "job-2", "untrusted", "runsc" };
        char big[3000];

        ASSERT_OK(audit_event(&bare, POND_EVENT_ACCEPTED, AUDIT_NO_RC, "accepted %s", "x"));
        ASSERT_STREQ("MESSAGE=accepted x\nMESSAGE_ID=" POND_MESSAGE_ACCEPTED "\nPRIORITY=6\n"
                     "SYSLOG_IDENTIFIER=pond\nPOND_EVENT=accepted\nPOND_JOB_ID=job-1\n", record_);
        ASSERT_OK(audit_event(&full, POND_EVENT_EXITED, 0, "exit %d", 0));
        ASSERT_STREQ("MESSAGE=exit 0\nMESSAGE_ID=" POND_MESSAGE_EXITED "\nPRIORITY=6\nSYSLOG_IDENTIFIER=pond\n"
                     "POND_EVENT=exited\nPOND_JOB_ID=job-2\nPOND_PROFILE=untrusted\nPOND_BACKEND=runsc\n"
                     "POND_RC=0\n", record_);
        ASSERT_OK(audit_event(&full, POND_EVENT_FAILED, -999, "failed"));
        ASSERT_CONTAINS("PRIORITY=3\n", record_);
        ASSERT_CONTAINS("POND_EVENT=failed\n", record_);
        ASSERT_CONTAINS("\nPOND_RC=-999\n", record_);
        ASSERT_ERROR(EINVAL, audit_event(&full, _POND_EVENT_MAX, 0, "no such event"));

        /* A message is cut at 2047 bytes. */
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = 0;
        ASSERT_OK(audit_event(&full, POND_EVENT_REFUSED, 1, "%s!", big));
        ASSERT_EQ(strlen("MESSAGE=") + 2047, strcspn(record_, "\n"));
        ASSERT_CONTAINS("\nMESSAGE_ID=" POND_MESSAGE_REFUSED "\nPRIORITY=4\n", record_);
}

TEST(egress_records) {
        EgressAuditRecord denied = {
                .job_id = "j", .conn = 3, .client = "10.0.0.2:5", .host = "h.example", .port = 443,
                .address = "1.2.3.4", .sni = "h.example", .reason = "r", .status = 403,
        };
        EgressAuditRecord closed = { .job_id = "j", .has_bytes = true, .bytes_down = 7, .reason = "totals" };
        EgressAuditRecord none = {};

        ASSERT_OK(egress_audit(EGRESS_DECISION_DENIED, &denied));
        ASSERT_STREQ("MESSAGE=egress #3 h.example:443 denied via 1.2.3.4: r\n"
                     "MESSAGE_ID=" POND_MESSAGE_EGRESS_DENIED "\nPRIORITY=4\nSYSLOG_IDENTIFIER=pond-egress\n"
                     "POND_EVENT=egress-denied\nPOND_JOB_ID=j\nPOND_EGRESS_CONN=3\n"
                     "POND_EGRESS_CLIENT=10.0.0.2:5\nPOND_EGRESS_HOST=h.example\nPOND_EGRESS_PORT=443\n"
                     "POND_EGRESS_ADDRESS=1.2.3.4\nPOND_EGRESS_SNI=h.example\nPOND_EGRESS_REASON=r\n"
                     "POND_EGRESS_STATUS=403\n", record_);
        ASSERT_OK(egress_audit(EGRESS_DECISION_CLOSED, &closed));
        ASSERT_STREQ("MESSAGE=egress #0 ?:0 closed (totals): 0 bytes up, 7 bytes down\n"
                     "MESSAGE_ID=" POND_MESSAGE_EGRESS_CLOSED "\nPRIORITY=6\nSYSLOG_IDENTIFIER=pond-egress\n"
                     "POND_EVENT=egress-closed\nPOND_JOB_ID=j\nPOND_EGRESS_REASON=totals\n"
                     "POND_EGRESS_BYTES_UP=0\nPOND_EGRESS_BYTES_DOWN=7\n", record_);
        ASSERT_OK(egress_audit(EGRESS_DECISION_STATS, &none));
        ASSERT_STREQ("MESSAGE=egress stats: \nMESSAGE_ID=" POND_MESSAGE_EGRESS_STATS "\nPRIORITY=6\n"
                     "SYSLOG_IDENTIFIER=pond-egress\nPOND_EVENT=egress-stats\nPOND_JOB_ID=\n", record_);
        ASSERT_ERROR(EINVAL, egress_audit(_EGRESS_DECISION_MAX, &none));
}

TEST(broker_records) {
        BrokerAuditRecord request = {
                .job_id = "j", .request = 2, .credential = "anthropic", .method = "POST",
                .path = "/v1/messages", .status = 200, .bytes_up = 10, .bytes_down = 20, .input_tokens = 3,
                .output_tokens = 4, .cost = 123456789,
        };
        BrokerAuditRecord ceiling = { .job_id = "j", .reason = "ceiling" };

        ASSERT_OK(broker_audit(BROKER_EVENT_REFUSED, &request));
        ASSERT_STREQ("MESSAGE=broker #2 POST /anthropic/v1/messages -> 200, 10 bytes up, 20 bytes down, 3+4 "
                     "tokens, 0.123456 cents\nMESSAGE_ID=" POND_MESSAGE_BROKER_REFUSED "\nPRIORITY=4\n"
                     "SYSLOG_IDENTIFIER=pond-broker\nPOND_EVENT=broker-refused\nPOND_JOB_ID=j\n"
                     "POND_BROKER_REQUEST=2\nPOND_BROKER_CREDENTIAL=anthropic\nPOND_BROKER_METHOD=POST\n"
                     "POND_BROKER_PATH=/v1/messages\nPOND_BROKER_STATUS=200\nPOND_BROKER_BYTES_UP=10\n"
                     "POND_BROKER_BYTES_DOWN=20\nPOND_BROKER_INPUT_TOKENS=3\nPOND_BROKER_OUTPUT_TOKENS=4\n"
                     "POND_BROKER_COST_CENTS=0.123456\n", record_);
        ASSERT_OK(broker_audit(BROKER_EVENT_CEILING, &ceiling));
        ASSERT_STREQ("MESSAGE=broker-ceiling: ceiling\nMESSAGE_ID=" POND_MESSAGE_BROKER_CEILING "\nPRIORITY=4\n"
                     "SYSLOG_IDENTIFIER=pond-broker\nPOND_EVENT=broker-ceiling\nPOND_JOB_ID=j\n"
                     "POND_BROKER_REASON=ceiling\nPOND_BROKER_BYTES_UP=0\nPOND_BROKER_BYTES_DOWN=0\n"
                     "POND_BROKER_INPUT_TOKENS=0\nPOND_BROKER_OUTPUT_TOKENS=0\nPOND_BROKER_COST_CENTS=0.000000\n",
                     record_);
}
