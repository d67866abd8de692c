/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* scope.h: the payload's transient scope (pond-ID.scope in pond.slice), created over D-Bus. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "basic/unit-name.h"  /* POND_SLICE */
#include "policy/policy.h"
#include "scope/cgroup.h" /* cgroup_* were declared here; pond-run still finds them through scope.h */

/* While on (a job's setup, before its READY=1): each wait on systemd here (a method call, a unit's start)
 * first extends the unit's start timeout past the wait's own bound (EXTEND_TIMEOUT_USEC), so that a busy
 * systemd fails a wait by its own bound, never by the unit's start timeout meanwhile. */
void unit_waits_extend_start_timeout(bool on);

typedef struct ScopeLimits {
        uint64_t memory_bytes;
        uint64_t cpus_milli;
        uint64_t pids_limit;
} ScopeLimits;

/* Starts unit (e.g. "pond-ID.scope") around pid with Delegate=yes and the limits, bound to bound_to
 * (the job's service, or NULL), and waits until systemd reports the start job done. */
int scope_start(sd_bus *bus, const char *unit, pid_t pid, const ScopeLimits *limits, const char *bound_to,
                const char *description);

/* SIGKILLs every process of the unit (recursively, container included). -ENOENT if not loaded. */
int scope_kill(sd_bus *bus, const char *unit);

/* Moves pid into the running unit's own cgroup (AttachProcessesToUnit): a job's exec step joins the job's
 * scope, as its create step does. -ENOENT if the unit is not loaded. */
int scope_attach(sd_bus *bus, const char *unit, pid_t pid);

/* Stops the unit and waits (bounded) until it is gone. Idempotent: a unit that is not loaded is fine. */
int scope_stop(sd_bus *bus, const char *unit);

/* StartUnit(unit, "replace") without waiting, then (after other work on the same bus) wait until the
 * start job is done (for Type=notify: until READY=1). finish frees the handle, success or not. */
typedef struct UnitStart UnitStart;
int unit_start_begin(sd_bus *bus, const char *unit, UnitStart **ret);
/* The same for a restart (a unit that is not running is started). */
int unit_restart_begin(sd_bus *bus, const char *unit, UnitStart **ret);
int unit_start_finish(sd_bus *bus, UnitStart *s);
UnitStart *unit_start_free(UnitStart *s);
static inline void unit_start_freep(UnitStart **s) {
        unit_start_free(*s);
}
/* Instead of unit_start_finish(): handler(r, userdata) is called once, from the bus's processing (an sd-event
 * loop the bus is attached to, or any call on it), when the start job ends: r = 0 if the unit started, else
 * -EIO. Called at once if it has ended already. The handle stays the caller's to free (not in the handler). */
typedef void (*unit_start_handler_t)(int r, void *userdata);
void unit_start_on_done(UnitStart *s, unit_start_handler_t handler, void *userdata);
/* A transient socket unit (e.g. "pond-egress@ID.socket") listening on listen ("ADDR:PORT", IP_FREEBIND:
 * the address may come later) that hands its socket to the service of the same name, bound to bound_to (or
 * NULL); the start begins as unit_start_begin()'s. */
int socket_unit_start_begin(sd_bus *bus, const char *unit, const char *listen, const char *bound_to,
                            const char *description, UnitStart **ret);
/* Kills, stops and waits (bounded) until the unit is gone; a unit that is not loaded is fine. */
int unit_stop(sd_bus *bus, const char *unit);
/* Queues the stop of unit (StopUnit, mode replace) and returns at once; no such unit is not an error. */
int unit_stop_begin(sd_bus *bus, const char *unit);

/* 1 if the unit is being stopped (deactivating, or a stop job is queued), 0 if not, or -errno. */
int unit_is_stopping(sd_bus *bus, const char *unit);
/* The unit's ActiveState ("active", "failed", ...). */
int unit_active_state(sd_bus *bus, const char *unit, char **ret);
/* 1 if the unit is inactive or failed with no job queued (nothing runs it, nothing is about to), else 0. */
int unit_is_idle(sd_bus *bus, const char *unit);

/* A service's main process (the MainPID property; 0 when it runs none). */
int unit_main_pid(sd_bus *bus, const char *unit, uint32_t *ret);

/* The unit's cgroup path relative to a hierarchy root (the ControlGroup property). */
int unit_cgroup_path(sd_bus *bus, const char *unit, char **ret);
