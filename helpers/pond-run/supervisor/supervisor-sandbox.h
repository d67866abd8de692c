/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* supervisor-sandbox.h: pond-run starts in a private copy of the mount namespace of pond-sandbox.service. */
#pragma once

#define SUPERVISOR_SANDBOX_UNIT "pond-sandbox.service"
/* How long a job's supervisor waits for the sandbox, and its cleanup (within pond-job@'s TimeoutStopSec=). */
#define SUPERVISOR_SANDBOX_WAIT_USEC (120ULL * 1000 * 1000)
#define SUPERVISOR_SANDBOX_CLEANUP_WAIT_USEC (20ULL * 1000 * 1000)

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

/* When run as service (the job's pond-job@ID.service): joins the namespace of pond-sandbox.service's
 * process (restarting the unit first if its namespace no longer matches the host's writable paths) and
 * makes a copy of it this process's own. A unit that is starting, stopped, restarting or out of reach over
 * the bus is waited for (and started) for up to wait_usec, the unit's start timeout extended meanwhile (the
 * supervisor: SUPERVISOR_SANDBOX_WAIT_USEC; the cleanup, within its stop timeout, less). Must run
 * before any thread is started. 0 (also when run by hand, outside the unit: nothing to join), or -errno and
 * the reason logged. The system bus connection it needs is made in *bus (when NULL) and left there for the
 * caller; on failure *bus may be NULL (a connection the bus refused is not kept). */
int supervisor_sandbox_enter(const char *service, uint64_t wait_usec, sd_bus **bus);

/* Whether a failure to reach or join the sandbox can pass by itself (its start under way, the bus refusing or
 * timing out under load), rather than the unit being unable to run. */
bool supervisor_sandbox_error_transient(int r);
