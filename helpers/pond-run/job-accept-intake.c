/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-accept-intake.c: step 1's first part: the spec as issued and whose job it is (docs/operations.md, "Who
 * may use pond"). Root submits into the spool (STATEDIR/jobs/ID/job.json, a directory only root can create);
 * a member of the group pond into the inbox (STATEDIR/inbox/ID.json, sticky and group-writable), and the
 * submitter is that file's owner, never a field of the spec. The inbox file is taken into a new spool entry
 * that is root's (0700) with read access for the submitter alone, and removed; the submitter's name goes to
 * STATEDIR/owners/ID, where the polkit rule looks it up before letting anyone but root stop the job. */
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/acl-util.h"
#include "basic/dirs.h"
#include "basic/fileio.h"
#include "basic/log.h"
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

static int record_owner(Job *j);

static int intake_spool(Job *j, const struct stat *st) {
        _cleanup_free_ char *path = NULL, *err = NULL;
        JobInput *in = &j->input;
        int r;

        /* jobs/ is root's (0711): only root makes entries there, and so only root submits this way. */
        if (!S_ISDIR(st->st_mode) || st->st_uid != 0)
                return job_fail(j, -EPERM, "the spool entry %s is not a directory of root's", j->paths.spool);
        r = access_submitter_lookup(0, &in->submitter, &err);
        if (r < 0)
                return job_fail(j, r, "%s", err ?: "submitter: root is unknown");
        in->have_submitter = true;
        if (asprintf(&path, "%s/job.json", j->paths.spool) < 0)
                return -ENOMEM;
        r = read_full_file(path, SPEC_MAX, &in->spec_buf, &in->spec_len);
        if (r < 0)
                return job_fail(j, -EINVAL, "cannot read the job spec %s: %s", path, strerror(-r));
        /* Root's job has an owner record too: else the polkit rule would ask the inbox, where a member could
         * put a file under this id and so be let stop root's job. An inbox file of that id is nobody's job. */
        r = record_owner(j);
        if (r < 0)
                return job_fail(j, r, "cannot record the owner at %s: %s", j->paths.owner, strerror(-r));
        if (unlink(j->paths.inbox) >= 0)
                log_warning("Removed %s: job %s is root's, submitted through the spool.", j->paths.inbox, j->paths.id);
        return 0;
}

/* The owner's name where the polkit rule reads it (units/pond.rules): one line, 0644, root's. */
static int record_owner(Job *j) {
        _cleanup_free_ char *dir = strdup(j->paths.owner), *line = NULL;
        _cleanup_close_ int fd = -EBADF;
        char *slash;

        if (!dir || asprintf(&line, "%s\n", j->input.submitter.user) < 0)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        *slash = 0;
        /* tmpfiles makes it; made here, it is 0755 whatever the umask: polkitd reads it. */
        if (mkdir(dir, 0755) >= 0) {
                if (chmod(dir, 0755) < 0)
                        return -errno;
        } else if (errno != EEXIST)
                return -errno;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        return write_file_atomic_at(fd, slash + 1, line, strlen(line), 0644);
}

/* A new spool entry of root's for a member's spec: 0700 with the submitter's ACL, job.json 0644 inside. */
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
        r = spool_create(j);
        if (r < 0)
                return job_fail(j, r, "cannot take %s into the spool %s: %s", j->paths.inbox, j->paths.spool,
                                strerror(-r));
        r = record_owner(j);
        if (r < 0)
                return job_fail(j, r, "cannot record the owner at %s: %s", j->paths.owner, strerror(-r));
        if (unlink(j->paths.inbox) < 0)
                log_warning_errno(errno, "Could not remove %s: %m", j->paths.inbox);
        log_info("Job %s submitted by %s (uid %u) through the inbox.", j->paths.id, in->submitter.user,
                 (unsigned) in->submitter.uid);
        return 0;
}

int job_accept_intake(Job *j) {
        struct stat st;

        if (lstat(j->paths.spool, &st) >= 0)
                return intake_spool(j, &st);
        if (errno != ENOENT)
                return job_fail(j, -errno, "cannot stat the spool entry %s: %s", j->paths.spool, strerror(errno));
        return intake_inbox(j);
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

void job_submitter_recall(Job *j) {
        _cleanup_free_ char *line = NULL;
        struct passwd *pw;
        size_t len;
        int r;

        r = read_full_file(j->paths.owner, ACCESS_NAME_MAX, &line, &len);
        if (r == -ENOENT) {
                /* No owner record: root's spool entry, or a member's job that never got as far as one. */
                if (access(j->paths.spool, F_OK) == 0 && access_submitter_lookup(0, &j->input.submitter, NULL) >= 0)
                        j->input.have_submitter = true;
                return;
        }
        if (r < 0 || len == 0 || line[len - 1] != '\n')
                return;
        line[len - 1] = 0;
        pw = getpwnam(line);
        if (pw && access_submitter_lookup(pw->pw_uid, &j->input.submitter, NULL) >= 0)
                j->input.have_submitter = true;
}
