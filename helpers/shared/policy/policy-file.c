/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* policy-file.c: the lookup of a policy file by name, /etc/pond over the shipped policy (policy-file.h). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/dirs.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "policy/policy-file.h"

static bool name_is_plain(const char *name) {
        return name && name[0] && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..");
}

int policy_file_find(const char *confdir, const char *policydir, const char *name, char **ret) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (!name_is_plain(name) || !policydir)
                return -EINVAL;
        if (confdir) {
                if (asprintf(&path, "%s/%s", confdir, name) < 0)
                        return -ENOMEM;
                /* The entry itself: a symlink the operator placed is theirs, and one that points nowhere
                 * is their file failing to read, not a reason to run with the shipped one. */
                if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        *ret = TAKE_PTR(path);
                        return 0;
                }
                if (errno != ENOENT)
                        return -errno;
                free(path);
                path = NULL;
        }
        if (asprintf(&path, "%s/%s", policydir, name) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(path);
        return 0;
}

int policy_file(const char *name, char **ret) {
        return policy_file_find(pond_dir(POND_DIR_CONFIG), pond_dir(POND_DIR_POLICY), name, ret);
}
