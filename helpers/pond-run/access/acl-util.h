/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* acl-util.h: one POSIX ACL entry for one user on a root-owned directory (a job's spool entry and result go to
 * their submitter), written as the kernel's system.posix_acl_access xattr: no libacl. */
#pragma once

#include <sys/types.h>

/* Sets fd's access ACL to: owner as its mode says, user uid r-x, the owning group and others as the mode
 * says (all three normally nothing: pond's job directories are 0700), mask r-x. The mode's group bits become
 * the mask (r-x), as with setfacl. -errno (EOPNOTSUPP: the file system has no ACLs). */
int acl_grant_user_rx(int fd, uid_t uid);
