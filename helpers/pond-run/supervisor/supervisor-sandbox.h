/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* supervisor-sandbox.h: pond-run starts in a private copy of the mount namespace of pond-sandbox.service. */
#pragma once

#define SUPERVISOR_SANDBOX_UNIT "pond-sandbox.service"

#include <systemd/sd-bus.h>

/* When run as service (the job's pond-job@ID.service): joins the namespace of pond-sandbox.service's
 * process (restarting the unit first if its namespace no longer matches the host's writable paths) and
 * makes a copy of it this process's own. Must run before any thread is started. 0 (also when run by hand,
 * outside the unit: nothing to join), or -errno and the reason logged. The system bus connection it needs
 * is made in *bus (when NULL) and left there for the caller, also on failure. */
int supervisor_sandbox_enter(const char *service, sd_bus **bus);
