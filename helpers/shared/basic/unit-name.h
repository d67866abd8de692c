/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* unit-name.h: the systemd unit names of a job, built in one place from the validated job id. */
#pragma once

#include "basic/macro.h"

#define POND_SLICE "pond.slice"

typedef enum UnitKind {
        UNIT_JOB_SERVICE,       /* pond-job@ID.service: the supervisor, pond-run */
        UNIT_SCOPE,             /* pond-ID.scope in pond.slice: the payload */
        UNIT_EGRESS_SERVICE,    /* pond-egress@ID.service: the job's CONNECT proxy */
        UNIT_BROKER_SERVICE,    /* pond-broker@ID.service: the job's credential broker */
        _UNIT_KIND_MAX,
        _UNIT_KIND_INVALID = -EINVAL,
} UnitKind;

/* The unit's name, malloc'd. -EINVAL for an unknown kind or a job id job_id_is_valid() refuses (the id
 * becomes part of a unit name, a path and a journal field). */
int unit_name(UnitKind kind, const char *job_id, char **ret);
