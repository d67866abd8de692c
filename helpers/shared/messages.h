/* messages.h: journal MESSAGE_IDs of pond's audit records, one per POND_EVENT; each has an entry in
 * units/pond.catalog. Query with: journalctl MESSAGE_ID=... or POND_EVENT=... POND_JOB_ID=... */
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
