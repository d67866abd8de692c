/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* access.h: who may use pond besides root (docs/operations.md, "Who may use pond"): the members of the group
 * pond submit through the inbox, their jobs are theirs (the inbox file's owner, never a field of the spec),
 * and policy/access.json says which profiles they may ask for. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "basic/macro.h"

#define POND_GROUP "pond"
#define ACCESS_POLICY_FILE "access.json"
#define ACCESS_NAME_MAX 256

/* Who submitted a job: root through the spool, or a member of the group through the inbox. */
typedef struct Submitter {
        uid_t uid;
        gid_t gid;                      /* the user's primary group */
        char user[ACCESS_NAME_MAX];
} Submitter;

/* The profiles members of the group may use: NULL-terminated names, or NULL for the default (every confined
 * profile). -EINVAL with *ret_error for a bad file; a missing file is the default. */
typedef struct AccessPolicy {
        char **profiles;
} AccessPolicy;

int access_policy_parse(const char *text, size_t len, AccessPolicy *ret, char **ret_error);
int access_policy_load(const char *dir, AccessPolicy *ret, char **ret_error);
void access_policy_done(AccessPolicy *p);
/* Whether a non-root member may use profile (confined: the profile's own flag, for the default). */
bool access_profile_allowed(const AccessPolicy *p, const char *profile, bool confined);

/* The submitter uid: root, or an existing user who is a member of the group (primary or supplementary) now.
 * -EPERM with *ret_error saying why otherwise. */
int access_submitter_lookup(uid_t uid, Submitter *ret, char **ret_error);
