/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* acl-util.c: a directory readable by one more user (acl-util.h), in the xattr format of
 * include/uapi/linux/posix_acl_xattr.h: a little-endian version 2 header, then entries sorted by tag. */
#include <endian.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "access/acl-util.h"
#include "basic/macro.h"

#define ACL_XATTR_VERSION 2
#define ACL_TAG_USER_OBJ 0x01
#define ACL_TAG_USER 0x02
#define ACL_TAG_GROUP_OBJ 0x04
#define ACL_TAG_MASK 0x10
#define ACL_TAG_OTHER 0x20
#define ACL_UNDEFINED_ID UINT32_MAX

typedef struct AclEntry {
        uint16_t tag, perm;
        uint32_t id;
} AclEntry;

typedef struct AclXattr {
        uint32_t version;
        AclEntry e[5];
} AclXattr;

_Static_assert(sizeof(AclXattr) == 4 + 5 * 8, "the xattr's layout has no padding");

static AclEntry entry(uint16_t tag, unsigned perm, uint32_t id) {
        return (AclEntry) { .tag = htole16(tag), .perm = htole16((uint16_t) (perm & 7)), .id = htole32(id) };
}

int acl_grant_user_rx(int fd, uid_t uid) {
        struct stat st;
        AclXattr a;

        if (fstat(fd, &st) < 0)
                return -errno;
        a = (AclXattr) {
                .version = htole32(ACL_XATTR_VERSION),
                .e = {
                        entry(ACL_TAG_USER_OBJ, st.st_mode >> 6, ACL_UNDEFINED_ID),
                        entry(ACL_TAG_USER, 5, (uint32_t) uid),
                        entry(ACL_TAG_GROUP_OBJ, st.st_mode >> 3, ACL_UNDEFINED_ID),
                        entry(ACL_TAG_MASK, 5, ACL_UNDEFINED_ID),
                        entry(ACL_TAG_OTHER, st.st_mode, ACL_UNDEFINED_ID),
                },
        };
        if (fsetxattr(fd, "system.posix_acl_access", &a, sizeof a, 0) < 0)
                return -errno;
        return 0;
}
