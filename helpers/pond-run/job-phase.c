/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-phase.c: the spool entry's phase file: the supervisor's one-time claim on the entry, how far the job
 * got, and what a restart's reconciliation reads of it. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "job.h"

/* spool/phase: where the job's supervisor got to, one word and a newline. Made once at intake (the claim: a
 * spool entry a supervisor took is never taken again), then replaced at each phase without an fsync: after a
 * power cut it may be an older phase, or empty; it only names, in a restart's result, how far the job got. */
#define PHASE_FILE "phase"

int job_phase_claim(Job *j, int spool_fd) {
        static const char line[] = "accepted\n";

        return write_file_new_at(spool_fd, PHASE_FILE, line, sizeof line - 1, 0644);
}

void job_phase_record(Job *j, const char *phase) {
        _cleanup_free_ char *line = NULL;
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        static const char tmp[] = "." PHASE_FILE ".tmp";

        dfd = open(j->paths.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0 || asprintf(&line, "%s\n", phase) < 0)
                return;
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 || fchmod(fd, 0644) < 0 || write_all(fd, line, strlen(line)) < 0 ||
            renameat(dfd, tmp, dfd, PHASE_FILE) < 0)
                log_debug_errno(errno, "Could not record phase %s of %s: %m", phase, j->paths.id);
}

int job_phase_read(const JobPaths *paths, char **ret_phase) {
        _cleanup_free_ char *path = NULL, *line = NULL;
        size_t len;
        int r;

        if (asprintf(&path, "%s/" PHASE_FILE, paths->spool) < 0)
                return -ENOMEM;
        r = read_full_file(path, 64, &line, &len);
        if (r < 0)
                return r;
        if (len < 2 || line[len - 1] != '\n' || !job_id_is_valid(strndupa(line, len - 1)))
                return -EBADMSG;
        line[len - 1] = 0;
        *ret_phase = TAKE_PTR(line);
        return 0;
}
