/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* jobid.h: the job id grammar, [A-Za-z0-9][A-Za-z0-9_.-]{0,63}: safe as a path component and a unit
 * instance name, never "." or "..". */
#pragma once

#include <stdbool.h>

#define JOB_ID_MAX 64

bool job_id_is_valid(const char *id);
