/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* policy-file.h: which file of the worker's policy is read: the operator's SYSCONFDIR/pond/NAME
 * (/etc/pond/profiles.json) replaces the shipped DATADIR/pond/policy/NAME (/usr/share/pond/policy), file by
 * file and whole (no merging inside a file). The one place that decides it (docs/operations.md, "Site
 * policy: /etc/pond overrides"). */
#pragma once

/* The file NAME (a plain file name: no '/', not "." or "..") in confdir if an entry of that name exists
 * there (a dangling symlink too: reading it then fails), else in policydir; confdir NULL: policydir only.
 * A newly allocated path in *ret. A confdir that cannot be looked into (EACCES...) is an error, never a
 * fall back to the shipped file: the operator's file is what the worker must run with. -EINVAL for a bad
 * name. */
int policy_file_find(const char *confdir, const char *policydir, const char *name, char **ret);

/* policy_file_find() in the worker's directories: pond_dir(POND_DIR_CONFIG), pond_dir(POND_DIR_POLICY). */
int policy_file(const char *name, char **ret);
