/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dispatch.h: the control plane's side of policy (pondctl dispatch-check): a stage's sandbox block
 * resolved against the same policy/ files the worker uses, into the normalized block to store with the
 * job, the capabilities a worker must advertise and the pool tags it must carry; and whether one worker,
 * given its probe output and tags, may take the job. See docs/dispatch.md. */
#pragma once

#include <json-c/json.h>

#include "policy/policy.h"


typedef struct DispatchDecision {
        json_object *sandbox_block;  /* normalized: profile, backend, tier, every knob, allow_hosts */
        char *required_capability;   /* "sandbox.<backend>" */
        char **required_capabilities;/* the profile's "requires" plus required_capability; NULL-terminated */
        char **required_tags;        /* "pool:<tier>" (+ "tenant:<project>" for byo); NULL-terminated */
} DispatchDecision;

/* Resolves block (a JSON sandbox block) for tenant (NULL: none given). Fails closed: -EINVAL with
 * *ret_error saying why (a refusal); -ENOMEM otherwise. */
int dispatch_check(const Policy *p, json_object *block, const char *tenant, DispatchDecision **ret,
                   char **ret_error);
DispatchDecision *dispatch_decision_free(DispatchDecision *d);
static inline void dispatch_decision_freep(DispatchDecision **d) {
        dispatch_decision_free(*d);
}

/* {sandbox_block, required_capability, required_capabilities, required_tags} */
int dispatch_decision_to_json(const DispatchDecision *d, json_object **ret);

/* Whether a worker may take the job: 1 yes; 0 no, with *ret_reason naming the first capability or tag it
 * lacks; -EINVAL with *ret_reason if probe is not a probe document (its "capabilities" array). A
 * capability "name=N" (N decimal) is met by "name=M" with M >= N: a newer Landlock ABI covers an older.
 * worker_tags NULL: the probe's own "tags" (worker.json's, as `pondctl probe` reports them; none without). */
int dispatch_worker_eligible(const DispatchDecision *d, json_object *probe, char *const *worker_tags,
                             char **ret_reason);
