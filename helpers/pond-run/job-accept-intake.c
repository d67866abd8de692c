/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-accept-intake.c: step 1's first part: the spec as issued and whose job it is (docs/operations.md, "Who
 * may use pond"). Root submits into the spool (STATEDIR/jobs/ID/job.json, a directory only root can create,
 * with its owner record STATEDIR/owners/ID "root"); a member of the group pond into the inbox
 * (STATEDIR/inbox/ID.json, sticky and group-writable), and the submitter is that file's owner, never a field of
 * the spec: its name is recorded first, then the file is taken into a new spool entry that is root's (0700)
 * with read access for the submitter alone, and removed. The record is never rewritten; the polkit rule reads
 * it. A spool entry is claimed once by its supervisor (spool/phase): no id runs twice. */
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/acl-util.h"
#include "basic/dirs.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/owner.h"
#include "basic/string-util.h"
#include "job.h"

#define SPEC_MAX (1024 * 1024)

int job_grant_submitter(const Job *j, int dirfd, const char *what) {
        int r;

        if (!j->input.have_submitter || j->input.submitter.uid == 0)
                return 0;
        r = acl_grant_user_rx(dirfd, j->input.submitter.uid);
        if (r < 0)
                return log_error_errno(r, "Cannot give %s (uid %u) read access to %s (does the file system "
                                       "support POSIX ACLs?): %m", j->input.submitter.user,
                                       (unsigned) j->input.submitter.uid, what);
        return 0;
}

int job_check_submitter_owns(const Job *j, int fd, const char *what, char **ret_error) {
        struct stat st;

        if (!j->input.have_submitter || j->input.submitter.uid == 0)
                return 0;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid == j->input.submitter.uid)
                return 0;
        if (ret_error && asprintf(ret_error, "%s is owned by uid %u, not by the submitter %s (uid %u)", what,
                                  (unsigned) st.st_uid, j->input.submitter.user,
                                  (unsigned) j->input.submitter.uid) < 0)
                *ret_error = NULL;
        return -EPERM;
}

/* The spool entry was taken by a supervisor before: whatever happened to it, the job is not run again; its
 * end is a signed "failed" (supervise() signs it: the job may have run). */
static int ended_before(Job *j, const char *why) {
        (void) job_end(j, JOB_END_FAILED, 0, NULL);
        if (unlink(j->paths.inbox) >= 0)
                log_warning("Removed %s: job %s was accepted before.", j->paths.inbox, j->paths.id);
        return job_fail(j, -ESTALE, "job %s %s: it is never run again (job ids are never reused)", j->paths.id,
                        why);
}

/* Root's spool entry (jobs/ is root's, 0711: only root makes entries there), its owner record "root" made with
 * it by pondctl, or here for one written by hand. The supervisor claims it (spool/phase, made once): a spool
 * entry a supervisor took before is never run again. */
static int intake_spool(Job *j, bool recorded) {
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int fd = -EBADF;
        JobInput *in = &j->input;
        struct stat st;
        int r;

        fd = open(j->paths.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != 0)
                return job_fail(j, -EPERM, "the spool entry %s is not a directory of root's", j->paths.spool);
        r = access_submitter_lookup(0, &in->submitter, &err);
        if (r < 0)
                return job_fail(j, r, "%s", err ?: "submitter: root is unknown");
        in->have_submitter = true;
        if (!recorded) {
                r = owner_record_create(&j->paths, OWNER_ROOT);
                if (r < 0)
                        return job_fail(j, r, "cannot record the owner at %s: %s", j->paths.owner, strerror(-r));
        }
        r = job_phase_claim(j, fd);
        if (r == -EEXIST)
                return ended_before(j, "was started before and did not end");
        if (r < 0)
                return job_fail(j, r, "cannot claim the spool entry %s: %s", j->paths.spool, strerror(-r));
        r = read_full_file_at(fd, "job.json", SPEC_MAX, &in->spec_buf, &in->spec_len);
        if (r < 0)
                return job_fail(j, -EINVAL, "cannot read the job spec %s/job.json: %s", j->paths.spool, strerror(-r));
        /* An inbox file of this id is nobody's job. */
        if (unlink(j->paths.inbox) >= 0)
                log_warning("Removed %s: job %s is root's, submitted through the spool.", j->paths.inbox, j->paths.id);
        return 0;
}

/* A new spool entry of root's for a member's spec: 0700 with the submitter's ACL, job.json 0644 inside,
 * claimed at once. Its owner record exists already. */
static int spool_create(Job *j) {
        _cleanup_close_ int fd = -EBADF;
        JobInput *in = &j->input;
        int r;

        if (mkdir(j->paths.spool, 0700) < 0)
                return -errno;
        fd = open(j->paths.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        r = job_grant_submitter(j, fd, j->paths.spool);
        if (r >= 0)
                r = write_file_atomic_at(fd, "job.json", in->spec_buf, in->spec_len, 0644);
        if (r >= 0)
                r = job_phase_claim(j, fd);
        return r;
}

static int intake_inbox(Job *j) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *err = NULL;
        JobInput *in = &j->input;
        struct stat st;
        int r;

        fd = open(j->paths.inbox, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return job_fail(j, -EINVAL, "cannot read the job spec: %s: %s (and no spool entry %s)",
                                j->paths.inbox, strerror(errno), j->paths.spool);
        if (fstat(fd, &st) < 0)
                return job_fail(j, -errno, "cannot stat %s: %s", j->paths.inbox, strerror(errno));
        /* A second name would be someone else's file linked in: the owner would not be the one who submitted. */
        if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
                return job_fail(j, -EPERM, "%s is not a regular file with one name", j->paths.inbox);
        r = access_submitter_lookup(st.st_uid, &in->submitter, &err);
        if (r < 0)
                return job_fail(j, r, "%s", err ?: "submitter: refused");
        in->have_submitter = true;
        r = read_full_fd(fd, SPEC_MAX, &in->spec_buf, &in->spec_len);
        if (r < 0)
                return job_fail(j, -EINVAL, "cannot read the job spec %s: %s", j->paths.inbox, strerror(-r));
        /* The owner first, once: it takes the id (another intake or root's pondctl finds it taken), and no
         * spool entry is ever without it. */
        r = owner_record_create(&j->paths, in->submitter.user);
        if (r == -EEXIST) {
                /* Someone else's id (taken since this unit was started): its result, if this ends it, is theirs. */
                in->have_submitter = false;
                job_submitter_recall(j);
                return job_fail(j, r, "job_id: %s is taken (its owner record %s exists)", j->paths.id, j->paths.owner);
        }
        if (r < 0)
                return job_fail(j, r, "cannot record the owner at %s: %s", j->paths.owner, strerror(-r));
        r = spool_create(j);
        if (r < 0)
                return job_fail(j, r, "cannot take %s into the spool %s: %s", j->paths.inbox, j->paths.spool,
                                strerror(-r));
        if (unlink(j->paths.inbox) < 0)
                log_warning_errno(errno, "Could not remove %s: %m", j->paths.inbox);
        log_info("Job %s submitted by %s (uid %u) through the inbox.", j->paths.id, in->submitter.user,
                 (unsigned) in->submitter.uid);
        return 0;
}

/* Whose job it is was fixed when its spool entry was made, by the owner record (owner.h): root's spool entry
 * (pondctl writes the record with it), or a member's inbox file taken in here (record, then spool entry).
 * A record naming a member is never read as root's, and a spool entry of a member's is never taken again. */
int job_accept_intake(Job *j) {
        _cleanup_free_ char *owner = NULL;
        struct stat st;
        bool spooled;
        int r;

        r = owner_record_read(&j->paths, &owner);
        if (r < 0 && r != -ENOENT)
                return job_fail(j, r, "cannot read the owner record %s: %s", j->paths.owner, strerror(-r));
        if (lstat(j->paths.spool, &st) >= 0)
                spooled = true;
        else if (errno == ENOENT)
                spooled = false;
        else
                return job_fail(j, -errno, "cannot stat the spool entry %s: %s", j->paths.spool, strerror(errno));

        if (!owner)
                return spooled ? intake_spool(j, false) : intake_inbox(j);
        if (streq(owner, OWNER_ROOT)) {
                if (!spooled)
                        return job_fail(j, -ENOENT, "job %s has an owner record and no spool entry: its submission "
                                        "did not complete", j->paths.id);
                return intake_spool(j, true);
        }
        /* A member's: the result goes to them, whatever ends it here. */
        job_submitter_recall(j);
        return ended_before(j, spooled ? "was accepted before" : "was taken before and its intake did not complete");
}

int job_accept_submitter_profile(Job *j) {
        _cleanup_(access_policy_done) AccessPolicy p = {};
        _cleanup_free_ char *err = NULL;
        const ResolvedPolicy *res = j->input.resolved;
        int r;

        if (!j->input.have_submitter || j->input.submitter.uid == 0)
                return 0;
        r = access_policy_load(pond_dir(POND_DIR_POLICY), &p, &err);
        if (r < 0)
                return job_fail(j, r, "%s", err ?: "policy: cannot load access.json");
        if (!access_profile_allowed(&p, res->profile, res->confined))
                return job_fail(j, -EPERM, "sandbox.profile: members of the group %s may not use profile %s on "
                                "this worker (policy/%s)", POND_GROUP, res->profile, ACCESS_POLICY_FILE);
        return 0;
}

/* A member's inbox file that no intake took (its unit stopped before the supervisor ran): the submitter is its
 * owner, as the intake would have said, and the record is made now, so the id stays theirs and taken. */
static void inbox_recall(Job *j) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(j->paths.inbox, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
                return;
        if (access_submitter_lookup(st.st_uid, &j->input.submitter, NULL) < 0)
                return;
        if (owner_record_create(&j->paths, j->input.submitter.user) < 0)
                return;
        j->input.have_submitter = true;
        if (unlink(j->paths.inbox) < 0)
                log_warning_errno(errno, "Could not remove %s: %m", j->paths.inbox);
}

void job_submitter_recall(Job *j) {
        _cleanup_free_ char *owner = NULL;
        struct passwd *pw;
        int r;

        r = owner_record_read(&j->paths, &owner);
        if (r == -ENOENT) {
                /* No owner record: a spool entry of root's written by hand (a member's never lacks one), or a
                 * member's submission stopped before its intake: the inbox file's owner, recorded now. */
                if (access(j->paths.spool, F_OK) == 0) {
                        if (access_submitter_lookup(0, &j->input.submitter, NULL) >= 0)
                                j->input.have_submitter = true;
                        return;
                }
                inbox_recall(j);
                return;
        }
        if (r < 0)
                return;
        pw = getpwnam(owner);
        if (pw && access_submitter_lookup(pw->pw_uid, &j->input.submitter, NULL) >= 0)
                j->input.have_submitter = true;
}
