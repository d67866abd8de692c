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

static bool result_written(const JobPaths *paths, const char *job_id) {
        _cleanup_free_ char *f = NULL;

        return asprintf(&f, "%s/%s/%s", paths->results, job_id, RESULT_JSON_FILE) >= 0 && access(f, F_OK) >= 0;
}

/* The unit started (its start job queued), retrying a bus that refuses or resets the connection within
 * CTL_BUS_DEADLINE_USEC. A StartUnit that timed out may have been queued all the same: the unit known to
 * systemd (asked on the same connection, after it) or a result says so; -ETIMEDOUT if neither came by the
 * deadline. A start systemd refused (an unknown unit, access denied): its error, at once. */
static int start_unit(sd_bus **bus, const JobPaths *paths, const char *job_id, const char *unit, char **err) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + CTL_BUS_DEADLINE_USEC, pause = 0;
        bool sent = false;
        int r;

        for (;;) {
                free(*err);
                *err = NULL;
                r = *bus ? 0 : ctl_bus_open(bus);
                if (r < 0 && asprintf(err, "cannot connect to the system bus: %s", strerror(-r)) < 0)
                        *err = NULL;
                if (r >= 0 && sent) {
                        r = ctl_unit_is_known(*bus, unit);
                        if (r > 0 || result_written(paths, job_id))
                                return 0;
                        if (r == 0)
                                r = -ETIMEDOUT; /* not yet: the start is still in the queue, or was lost */
                } else if (r >= 0) {
                        r = ctl_unit_call(*bus, "StartUnit", unit, err);
                        if (r >= 0)
                                return 0;
                        sent = r == -ETIMEDOUT;
                }
                if (!ctl_bus_error_transient(r))
                        return r;
                if (clock_usec(CLOCK_MONOTONIC) >= deadline)
                        return sent ? -ETIMEDOUT : r;
                log_debug_errno(r, "Starting %s: %m; trying again.", unit);
                /* A connection refused at its Hello, or reset, is not used again; one whose call timed out
                 * is kept, so that what is asked next is answered after the start. */
                if (r != -ETIMEDOUT)
                        *bus = sd_bus_flush_close_unref(*bus);
                ctl_bus_backoff(&pause);
        }
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
        r = start_unit(bus, paths, job_id, unit, &err);
        if (r == -ETIMEDOUT) {
                /* The start may still be in systemd's queue: the entry stays, and the job is not reported
                 * as started or failed. */
                log_error("Lost sight of %s: the system bus did not confirm its start for %llu s (%s); it may "
                          "still start (pondctl wait %s).", unit, CTL_BUS_DEADLINE_USEC / (1000 * 1000ULL),
                          err ?: strerror(ETIMEDOUT), job_id);
                return CTL_EXIT_LOST;
        }
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
