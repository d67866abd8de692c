/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-stage.c: step 2 of the design. From here on the job holds resources: the system bus (its scope and
 * sidecar units), the runtime's children (pond-run is their subreaper), the job's runtime directory with
 * /workspace (read-only bind, overlay or in place) and the root filesystem. The input hash starts as
 * soon as the checkout as issued is staged. */
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <systemd/sd-daemon.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "job.h"

static int stage_workspace(Job *j) {
        const JobInput *in = &j->input;
        JobStaging *s = &j->staging;
        _cleanup_free_ char *err = NULL;
        int r;

        /* A member's checkout must be their own (a bundle's is the job's own extraction, root's). */
        uid_t owner = in->have_submitter && in->submitter.uid != 0 && !in->spec->bundle ? in->submitter.uid
                                                                                        : STAGE_ANY_OWNER;

        /* Staged from the directory acceptance opened (the spec's host path as the service manager's namespace
         * saw it, cloned there), never from the path again: it may lead elsewhere by now. */
        if (in->spec->checkout && in->checkout_fd < 0) {
                r = in->checkout_open_r < 0 ? in->checkout_open_r : -EBADF;
                return job_fail(j, log_error_errno(r, "Cannot stage the checkout %s: it did not open at "
                                                   "acceptance: %m", in->spec->checkout),
                                "checkout: cannot open %s: %s", in->spec->checkout, strerror(-r));
        }
        r = stage_setup_owned(j->paths.run, in->checkout_ns, in->checkout_fd, owner, in->resolved->fs,
                              in->resolved->tmpfs_bytes, job_host_uid(j), job_host_gid(j), &s->stage);
        if (r == -EPERM && owner != STAGE_ANY_OWNER)
                return job_fail(j, log_error_errno(r, "Cannot stage the checkout %s: not owned by %s: %m",
                                                   in->spec->checkout, in->submitter.user),
                                "checkout: %s is not owned by the submitter %s", in->spec->checkout,
                                in->submitter.user);
        if (r < 0)
                return job_fail(j, log_error_errno(r, "Cannot stage the checkout %s: %m",
                                                   in->spec->checkout ?: "(none)"), "cannot stage the checkout");
        s->staged = true;
        if (s->image.digest) {  /* an imported image, looked up and held at acceptance */
                r = image_mount(&s->image, j->paths.run, j->userns.fd, &err);
                if (r < 0)
                        return job_fail(j, log_error_errno(r, "Cannot mount image %s: %s", s->image.digest,
                                                           err ?: ""), "%s", err ?: "cannot mount the image");
                return 0;
        }
        /* else a directory image, found at acceptance */
        if (!s->image.rootfs) {
                r = image_prepare(in->resolved->image, j->paths.images, j->paths.run, &s->image, &err);
                if (r < 0) {
                        log_error_errno(r, "Cannot prepare image %s: %s", in->resolved->image, err ?: "");
                        return job_fail(j, r, "%s", err ?: "cannot prepare the image");
                }
        }
        if (!j->userns.on)
                return 0;
        r = image_idmap_root(&s->image, j->paths.run, j->userns.fd, &err);
        if (r < 0)
                return job_fail(j, log_error_errno(r, "Cannot map the job's root to its uid range: %s", err ?: ""),
                                "%s", err ?: "cannot map the job's root to its uid range");
        return 0;
}

int job_stage(Job *j) {
        int r;

        sd_notify(false, "STATUS=staging");
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return -errno;
        /* The supervisor's sandbox may have connected already (supervisor-sandbox.c). */
        r = j->bus ? 0 : sd_bus_open_system(&j->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus: %m");
        /* Authenticated now, not at the first call: the bus daemon closes a connection that has not
         * authenticated within its auth timeout (30 s), and under load staging and the network take longer
         * (16 runsc jobs at once: "Transport endpoint is not connected" at the first call). */
        const char *unique;
        r = sd_bus_get_unique_name(j->bus, &unique);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus: %m");
        r = mkdir_p(j->paths.runtime_root, 0700);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", j->paths.runtime_root);
        r = mkdir_p(j->paths.run, 0700);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", j->paths.run);
        return 0;
}

/* After the network: the sidecars' units start (job_network_lease()) before this, and come up meanwhile. */
int job_stage_workspace(Job *j) {
        return stage_workspace(j);
}

/* The read-only lower view cannot change under the job: it is hashed by threads while the job runs. Profile
 * none edits the checkout in place: no immutable view, so it is hashed before the payload runs. Called
 * once the network is up: the network's helpers fork children that allocate (libnl), and a child forked
 * while a hashing thread holds an allocator lock that has no fork handler (ASan's) would hang in it. */
int job_stage_hash_input(Job *j) {
        const Stage *st = &j->staging.stage;
        int fd = -EBADF;

        /* The lower view is ours; the checkout itself (in place) is the tree acceptance opened. */
        if (st->lower)
                fd = open(st->lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        else if (j->input.spec->checkout && j->input.checkout_fd >= 0)
                fd = fcntl(j->input.checkout_fd, F_DUPFD_CLOEXEC, 3);
        else if (j->input.spec->checkout)
                return log_error_errno(EBADF, "The checkout %s was not opened at acceptance: not hashed",
                                       j->input.spec->checkout);
        if ((st->lower || j->input.spec->checkout) && fd < 0)
                return log_error_errno(errno, "Cannot open the checkout to hash it: %m");
        return job_input_hash_start(&j->input_hash, j->input.spec_buf, j->input.spec_len, fd,
                                    st->lower || !j->input.spec->checkout);
}

void job_staging_done(JobStaging *s) {
        stage_done(&s->stage);
        image_layout_done(&s->image);
        *s = (JobStaging) {};
}
