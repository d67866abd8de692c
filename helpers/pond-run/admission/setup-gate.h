/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* setup-gate.h: how many jobs are in setup at once (admitted, not yet started: staging, network, bundle,
 * scope, sidecars), worker.json's max_setups, independently of the admission ceiling (which bounds the jobs
 * that run). Setups are what load systemd (each starts a scope, a socket unit and a sidecar's service) and
 * the bus; a burst of them at once queues hundreds of unit starts and each waits for all the others
 * (docs/operations.md, "Admission"). One directory, a lease store: K slot files `slot-N`, each held by the
 * flock of the supervisor in setup (a supervisor that dies frees its slot with its fd), and the waiters'
 * queue (admission-queue.h), in order of arrival. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define SETUP_GATE_DIR "setup"

typedef struct SetupGateState {
        unsigned ahead;                 /* live waiters before this job (a lower bound past the slots) */
        unsigned slot;                  /* the slot taken (admitted only) */
} SetupGateState;

/* One attempt, under dir's flock: returns 1 with *slot_fd holding one of the slots slot-0 .. slot-(slots-1)
 * (its flock taken; the slot is the job's until the fd is closed), or 0: the job waits, *queue_fd holding its
 * queue file (made on the first attempt). A job takes a slot only if there are free slots enough for every
 * live waiter before it too: a later job never passes an earlier one. */
int setup_gate_try(const char *dir, const char *job_id, unsigned slots, int *slot_fd, int *queue_fd,
                   SetupGateState *ret_state);

/* Removes the job's queue file, if it has one (its slot goes with its fd). */
int setup_gate_leave(const char *dir, const char *job_id);
