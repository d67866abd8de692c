/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* unit-name.c: pond-job@ID.service, pond-ID.scope, pond-egress@ID.service, pond-broker@ID.service. */
#include "basic/jobid.h"
#include "basic/string-util.h"
#include "basic/unit-name.h"

static const char *const unit_prefix[_UNIT_KIND_MAX] = {
        [UNIT_JOB_SERVICE] = "pond-job@",
        [UNIT_SCOPE] = "pond-",
        [UNIT_EGRESS_SERVICE] = "pond-egress@",
        [UNIT_BROKER_SERVICE] = "pond-broker@",
};

static const char *const unit_suffix[_UNIT_KIND_MAX] = {
        [UNIT_JOB_SERVICE] = ".service",
        [UNIT_SCOPE] = ".scope",
        [UNIT_EGRESS_SERVICE] = ".service",
        [UNIT_BROKER_SERVICE] = ".service",
};

int unit_name(UnitKind kind, const char *job_id, char **ret) {
        char *s;

        if (kind < 0 || kind >= _UNIT_KIND_MAX || !job_id_is_valid(job_id))
                return -EINVAL;
        s = strdupf("%s%s%s", unit_prefix[kind], job_id, unit_suffix[kind]);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
