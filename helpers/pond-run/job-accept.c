/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-accept.c: step 1 of the design: read the spec as issued, parse it strictly, resolve the policy, check
 * the worker carries the job's pool and tenant tags, find the backend, open a bundle's source, check the
 * sidecars' configurations, look up a directory image. Every failure here is a refusal with a reason, and
 * nothing has run. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "basic/dirs.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"
#include "policy/tags.h"
#include "policy/worker-policy.h"
#include "stage/ns-open.h"

static int read_spec(Job *j) {
        _cleanup_free_ char *path = NULL, *err = NULL;
        JobInput *in = &j->input;
        int r;

        if (asprintf(&path, "%s/%s/result.json", j->paths.results, j->paths.id) < 0)
                return -ENOMEM;
        if (access(path, F_OK) == 0)
                return job_fail(j, -EEXIST, "job_id: a result for this id exists already (ids are never reused)");
        r = job_accept_intake(j);
        if (r < 0)
                return r;
        r = job_spec_parse(in->spec_buf, in->spec_len, &in->spec, &err);
        if (r < 0)
                return job_fail(j, -EINVAL, "%s", err ?: "invalid job spec");
        if (!streq(in->spec->job_id, j->paths.id))
                return job_fail(j, -EINVAL, "job_id: the spec says '%s' but it was started as '%s'",
                                in->spec->job_id, j->paths.id);
        return 0;
}

/* The profile's Landlock, decided for this backend and kernel: pond-init applies exactly this ABI (or the
 * payload does not start), so the result can say which; a profile that requires more is refused here. */
static int landlock_accept(Job *j) {
        JobInput *in = &j->input;
        _cleanup_free_ char *err = NULL;
        const char *host_reason = NULL;
        unsigned host_abi = landlock_host_abi(&host_reason);
        int r;

        r = landlock_decide(&in->resolved->landlock, in->resolved->backend, host_abi, host_reason, &in->landlock,
                            &err);
        if (r < 0)
                return job_fail(j, r, "%s", err ?: "landlock: refused");
        if (in->landlock.abi > 0) {
                _cleanup_free_ char *init = path_join(pond_dir(POND_DIR_LIBEXEC), "pond-init");

                if (!init)
                        return -ENOMEM;
                if (access(init, X_OK) < 0)
                        return job_fail(j, -errno, "landlock: %s is missing: %s", init, strerror(errno));
        }
        return 0;
}

/* Whatever routed the job here (a scheduler, a person with -H), this worker takes only the tiers and
 * tenants its own worker.json says it carries: the same tags dispatch-check requires (policy/tags.c). */
static int tags_accept(Job *j) {
        _cleanup_(admission_policy_done) AdmissionPolicy p = {};
        _cleanup_strv_free_ char **required = NULL;
        _cleanup_free_ char *err = NULL, *have = NULL;
        JobInput *in = &j->input;
        const char *missing;
        int r;

        r = tags_required(in->resolved, &in->spec->sandbox, in->spec->tenant, &required, &err);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return job_fail(j, r, "%s", err ?: "tags: refused");
        r = admission_policy_load(NULL, &p, &err);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return job_fail(j, r, "%s", err ?: "policy: worker.json: cannot be read");
        missing = tags_first_missing(required, admission_policy_tags(&p));
        if (!missing)
                return 0;
        have = tags_join(admission_policy_tags(&p));
        return job_fail(j, -EPERM, "tags: this worker does not carry '%s', which a tier %s job needs (it carries "
                        "%s: worker.json's tags)", missing, in->resolved->tier, have ?: "?");
}

static int resolve(Job *j) {
        _cleanup_free_ char *err = NULL;
        JobInput *in = &j->input;
        int r;

        r = policy_load(NULL, &in->policy, &err);
        if (r < 0)
                return job_fail(j, -EINVAL, "%s", err ?: "cannot load policy");
        r = policy_resolve(in->policy, &in->spec->sandbox, &in->resolved, &err);
        if (r < 0)
                return job_fail(j, -EINVAL, "%s", err ?: "cannot resolve the policy");
        j->audit.profile = in->resolved->profile;
        r = tags_accept(j);
        if (r < 0)
                return r;
        r = job_accept_submitter_profile(j);
        if (r < 0)
                return r;
        j->audit.backend = in->resolved->backend;
        in->provider = runtime_provider_find(in->resolved->backend);
        if (!in->provider)
                return job_fail(j, -EOPNOTSUPP, "sandbox.backend: '%s' is not available on this worker",
                                in->resolved->backend);
        r = in->provider->check(&err);
        if (r < 0)
                return job_fail(j, -EOPNOTSUPP, "%s", err ?: "backend cannot run here");
        return landlock_accept(j);
}

/* The checkout is opened once, here, and kept: what is staged and hashed after acceptance is this tree, never
 * the path resolved again. A member's must be their own directory: refused here with the reason (and checked
 * again on the clone staging mounts, which is this same directory). Root's that does not open fails the job
 * at staging, with the reason kept here. */
static int checkout_open(Job *j) {
        const JobSpec *spec = j->input.spec;
        bool member = j->input.have_submitter && j->input.submitter.uid != 0;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *err = NULL;
        int r;

        if (!spec->checkout || spec->bundle)
                return 0;
        r = ns_open(NS_MANAGER_MNT, spec->checkout, O_RDONLY | O_DIRECTORY, &fd);
        if (r < 0 && member)
                return job_fail(j, r, "checkout: cannot open %s: %s", spec->checkout, strerror(-r));
        if (r < 0) {
                log_debug_errno(r, "Cannot open the checkout %s at acceptance: %m", spec->checkout);
                j->input.checkout_open_r = r;
                return 0;
        }
        if (member) {
                r = job_check_submitter_owns(j, fd, spec->checkout, &err);
                if (r < 0)
                        return job_fail(j, r, "checkout: %s", err ?: strerror(-r));
        }
        j->input.checkout_fd = TAKE_FD(fd);
        j->input.checkout_ns = NS_MANAGER_MNT;
        return 0;
}

int job_accept(Job *j) {
        const ResolvedPolicy *res;
        int r;

        r = read_spec(j);
        if (r >= 0)
                r = resolve(j);
        if (r < 0)
                return r;
        r = checkout_open(j);
        if (r < 0)
                return r;
        /* Each feature's part of the spec, checked in the table's order (job-features.c). */
        r = job_features_accept(j);
        if (r < 0)
                return r;
        res = j->input.resolved;
        audit_event(&j->audit, POND_EVENT_ACCEPTED, AUDIT_NO_RC, "accepted: profile %s, backend %s, tier %s",
                    res->profile, res->backend, res->tier);
        return 0;
}

void job_input_done(JobInput *in) {
        job_spec_free(in->spec);
        policy_free(in->policy);
        resolved_policy_free(in->resolved);
        free(in->spec_buf);
        safe_close(in->checkout_fd);
        *in = (JobInput) JOB_INPUT_NULL;
}
