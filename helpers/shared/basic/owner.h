/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* owner.h: a job's owner record, STATEDIR/owners/ID: its submitter's name, fixed when the job's spool entry is
 * created (pondctl for root, pond-run's intake for a member) and never rewritten; the polkit rule reads it
 * (docs/operations.md, "Who may use pond"). */
#pragma once

#include "basic/paths.h"

#define OWNER_ROOT "root"

/* Writes the record naming user, whole or not at all: -EEXIST if the id has one already (the id is taken). */
int owner_record_create(const JobPaths *p, const char *user);
/* The recorded name: -ENOENT without a record, -EBADMSG for one that is not one name and a newline. */
int owner_record_read(const JobPaths *p, char **ret_user);
/* Removes a record this process just created, when what it was created with failed (no half state). */
int owner_record_remove(const JobPaths *p);
