/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-submit.c: handing a job to the worker: root writes its owner record STATEDIR/owners/ID ("root") and then a
 * new spool entry STATEDIR/jobs/ID/job.json (0700/0600), a member of the group pond a new inbox file
 * STATEDIR/inbox/ID.json (job ids are never reused: an id with a result, spool entry or owner record is taken);
 * then `systemctl start pond-job@ID.service` over D-Bus (polkit lets the member start it: units/pond.rules).
 * A submission either starts the unit or leaves nothing behind. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/owner.h"
#include "ctl.h"
#include "result/result.h"

/* The directory holding p (a path with at least one '/' after the first character). */
static int parent_of(const char *p, char **ret) {
        const char *slash = strrchr(p, '/');
        char *d;

        if (!slash || slash == p)
                return -EINVAL;
        d = strndup(p, (size_t) (slash - p));
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

static void spool_remove(const char *spool, const char *job_id) {
        _cleanup_free_ char *parent = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (parent_of(spool, &parent) < 0)
                return;
        fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = fd < 0 ? -errno : rm_rf_at(fd, job_id);
        if (r < 0)
                log_warning_errno(r, "Could not remove the spool entry %s: %m", spool);
}

/* The spool entry and the owner record go together: the record first (it takes the id, whole or not at all),
 * so that no spool entry of root's is ever without one, and the polkit rule never asks anything else. */
static void spool_abandon(const JobPaths *paths, const char *job_id) {
        int r;

        spool_remove(paths->spool, job_id);
        r = owner_record_remove(paths);
        if (r < 0)
                log_warning_errno(r, "Could not remove the owner record %s: %m", paths->owner);
}

static int spool_create(const JobPaths *paths, const char *job_id, const char *spec, size_t len) {
        _cleanup_free_ char *parent = NULL, *result = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (asprintf(&result, "%s/%s", paths->results, job_id) < 0 || parent_of(paths->spool, &parent) < 0) {
                log_oom();
                return CTL_EXIT_FAILED;
        }
        if (access(result, F_OK) >= 0) {
                log_error("Job id %s was already used: %s exists. Job ids are never reused.", job_id,
                          result);
                return CTL_EXIT_REFUSED;
        }
        r = mkdir_p(parent, 0755);
        if (r < 0) {
                log_error_errno(r, "Cannot create %s: %m", parent);
                return CTL_EXIT_FAILED;
        }
        r = owner_record_create(paths, OWNER_ROOT);
        if (r == -EEXIST) {
                log_error("Job id %s was already used: %s exists. Job ids are never reused.", job_id, paths->owner);
                return CTL_EXIT_REFUSED;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot create the owner record %s: %m", paths->owner);
                return CTL_EXIT_FAILED;
        }
        if (mkdir(paths->spool, 0700) < 0) {
                int k = errno;

                (void) owner_record_remove(paths);
                if (k == EEXIST) {
                        log_error("Job id %s was already used: %s exists. Job ids are never reused.", job_id,
                                  paths->spool);
                        return CTL_EXIT_REFUSED;
                }
                log_error_errno(k, "Cannot create %s: %m", paths->spool);
                return CTL_EXIT_FAILED;
        }
        fd = open(paths->spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        r = fd < 0 ? -errno : write_file_atomic_at(fd, "job.json", spec, len, 0600);
        if (r < 0) {
                log_error_errno(r, "Cannot write %s/job.json: %m", paths->spool);
                spool_abandon(paths, job_id);
                return CTL_EXIT_FAILED;
        }
        return 0;
}

/* A member of the group pond: the spec goes to the inbox as a new file of theirs (its owner is the job's
 * submitter), which pond-run takes into the spool (docs/operations.md, "Who may use pond"). */
static int inbox_create(const JobPaths *paths, const char *job_id, const char *spec, size_t len) {
        _cleanup_free_ char *result = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (asprintf(&result, "%s/%s", paths->results, job_id) < 0) {
                log_oom();
                return CTL_EXIT_FAILED;
        }
        if (access(result, F_OK) >= 0 || access(paths->spool, F_OK) >= 0 || access(paths->owner, F_OK) >= 0) {
                log_error("Job id %s was already used. Job ids are never reused.", job_id);
                return CTL_EXIT_REFUSED;
        }
        fd = open(paths->inbox, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) {
                log_error("Job id %s was already used: %s exists. Job ids are never reused.", job_id, paths->inbox);
                return CTL_EXIT_REFUSED;
        }
        if (fd < 0 && (errno == EACCES || errno == EPERM)) {
                log_error_errno(errno, "Not allowed to submit jobs to this worker: %s: %m (only root and the "
                                "members of the group pond may)", paths->inbox);
                return CTL_EXIT_REFUSED;
        }
        if (fd < 0) {
                log_error_errno(errno, "Cannot create %s: %m", paths->inbox);
                return CTL_EXIT_FAILED;
        }
        r = write_all(fd, spec, len);
        if (r < 0) {
                log_error_errno(r, "Cannot write %s: %m", paths->inbox);
                (void) unlink(paths->inbox);
                return CTL_EXIT_FAILED;
        }
        return 0;
}

int ctl_submit(sd_bus **bus, const JobPaths *paths, const char *job_id, const char *spec, size_t len) {
        _cleanup_free_ char *unit = NULL, *err = NULL;
        bool inbox = geteuid() != 0;
        int r;

        if (unit_name(UNIT_JOB_SERVICE, job_id, &unit) < 0) {
                log_error("Invalid job id '%s'.", job_id);
                return CTL_EXIT_REFUSED;
        }
        r = inbox ? inbox_create(paths, job_id, spec, len) : spool_create(paths, job_id, spec, len);
        if (r != 0)
                return r;
        if (!*bus) {
                r = ctl_bus_open(bus);
                if (r < 0 && asprintf(&err, "cannot connect to the system bus: %s", strerror(-r)) < 0)
                        err = NULL;
        }
        if (*bus)
                r = ctl_unit_call(*bus, "StartUnit", unit, &err);
        if (r < 0) {
                log_error("cannot start %s: %s", unit, err ?: strerror(-r));
                if (inbox)
                        (void) unlink(paths->inbox);
                else
                        spool_abandon(paths, job_id);
                return CTL_EXIT_FAILED;
        }
        return 0;
}
