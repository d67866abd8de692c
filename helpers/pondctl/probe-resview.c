/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* probe-resview.c: whether jobs here can see their own resources: LXCFS answering at LXCFS_ROOT (runc
 * jobs' /proc and cpu/online), the same check pond-run makes when it accepts a job. gVisor renders its own
 * view and needs nothing from the host. */
#include "basic/string-util.h"
#include "probe.h"
#include "resview/resview.h"

void probe_resource_view(ProbeFeature *ret) {
        _cleanup_free_ char *why = NULL;
        int r = lxcfs_check(LXCFS_ROOT, &why);

        *ret = (ProbeFeature) {};
        if (r < 0) {
                ret->reason = strdupf("%s; runc jobs of a \"required\" profile are refused, \"best-effort\" "
                                      "ones see the host's /proc (runsc renders its own)", why ?: "LXCFS fails");
                return;
        }
        ret->available = true;
        ret->detail = strdup("LXCFS at " LXCFS_ROOT " (runc: lxcfs; runsc: gvisor)");
}
