/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* caps.c: the supervisor checks up front that it holds what staging and runtimes need, so a worker
 * misconfigured to run it without them fails with a clear reason instead of half-way through a job. */
#include <sys/capability.h>

#include "basic/log.h"
#include "supervisor/caps.h"

static const struct {
        cap_value_t cap;
        const char *name;
        const char *why;
} required[] = {
        { CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "mounting the job's workspace and idmapping the checkout" },
        { CAP_CHOWN, "CAP_CHOWN", "giving the job user its writable upper layer" },
        { CAP_SETUID, "CAP_SETUID", "the runtime switching to the job user" },
        { CAP_KILL, "CAP_KILL", "killing a payload that times out" },
};

int caps_check_supervisor(char **ret_missing) {
        cap_t caps = cap_get_proc();
        int r = 0;

        if (!caps)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(required); i++) {
                cap_flag_value_t v = CAP_CLEAR;
                if (cap_get_flag(caps, required[i].cap, CAP_EFFECTIVE, &v) < 0 || v != CAP_SET) {
                        if (ret_missing && asprintf(ret_missing, "%s (for %s)", required[i].name, required[i].why) < 0)
                                *ret_missing = NULL;
                        r = -EPERM;
                        break;
                }
        }
        cap_free(caps);
        return r;
}
