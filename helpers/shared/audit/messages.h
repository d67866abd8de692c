/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* messages.h: every journal MESSAGE_ID of pond's audit records, one per POND_EVENT, of the supervisor,
 * pond-egress and pond-broker alike; each has an entry in units/pond.catalog. Query with:
 * journalctl MESSAGE_ID=... or POND_EVENT=... POND_JOB_ID=... */
#pragma once

#define POND_MESSAGE_ACCEPTED  "d00e7eb856e042beb0e01295c25eda01"
#define POND_MESSAGE_REFUSED   "3ee6fb97dc3b4bee96b5c53d488f15fc"
#define POND_MESSAGE_STARTED   "325f6d446d1348eb9f3c69304153f1bb"
#define POND_MESSAGE_EXITED    "1295f46faa7d4f138ce3b96a3c1ee890"
#define POND_MESSAGE_KILLED    "e1f18f2c095d4f01b4833cf6bd11243a"
#define POND_MESSAGE_TIMED_OUT "922585a771cb40d0a3b0e6839ac6f0ae"
#define POND_MESSAGE_SIGNED    "4b5c406014ea4a4fb870e92a220d9382"
#define POND_MESSAGE_CLEANED   "fc7637c6258d453c865e909d53fd7b09"
#define POND_MESSAGE_FAILED    "691ccbbeece64be6b7b9ceb4073c4f45"
#define POND_MESSAGE_DEGRADED  "b8b6afffe3a3470eb15b150f36863fc9"
#define POND_MESSAGE_CONSOLE   "57924c20d4d9408fa68e9c7867226d21"
#define POND_MESSAGE_EXEC      "d534ae3c0d9a4c9c9d072697775b21eb"
#define POND_MESSAGE_COPY      "baf8cf812efd4b36811b9b1471741014"

/* pond-egress (egress-audit.c) */
#define POND_MESSAGE_EGRESS_ALLOWED "b356fffc10e548db80ac209a35d9695b"
#define POND_MESSAGE_EGRESS_DENIED  "1a87fd72eafe42d28a703b09a1cb4ac1"
#define POND_MESSAGE_EGRESS_CLOSED  "ecf91c0648144c898d3be20e6e2c1ff9"
#define POND_MESSAGE_EGRESS_STATS   "61b6f9f7743149f3a5eeabe1d87c18d3"

/* pond-broker (broker-audit.c) */
#define POND_MESSAGE_BROKER_REQUEST "b83024b481af4f7887288839d7e85f02"
#define POND_MESSAGE_BROKER_REFUSED "e163cdada61045ad9c49a13edebbef80"
#define POND_MESSAGE_BROKER_CEILING "ad109d4bf7bf49009a2b2ba49c30b451"
#define POND_MESSAGE_BROKER_STATS   "0b765fe0c7f24b3288e2f41f9d2dd740"
