/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-export.c: `pondctl export ID`: the job's signed result directory, STATEDIR/results/ID, as a tar stream
 * on stdout. It is how `pondctl -H` fetches a result from a worker (over the same ssh): the client unpacks
 * and verifies it with the worker's pinned key, so nothing on the way, this verb included, is trusted. */
#include <fcntl.h>
#include <string.h>

#include "basic/log.h"
#include "ctl.h"

int ctl_verb_export(int argc, char *argv[]) {
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *id;
        int r;

        if (ctl_job_id_arg(argc, argv, 1, &id) < 0)
                return CTL_EXIT_USAGE;
        if (job_paths_init(&paths, id) < 0 || ctl_result_dir(&paths, id, &dir) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return ctl_fail_errno(errno == ENOENT ? CTL_EXIT_NOT_FOUND : CTL_EXIT_ERROR, errno,
                                      "Job %s has no result in %s: %m", id, dir);
        if (isatty(STDOUT_FILENO))
                return ctl_fail(CTL_EXIT_USAGE, "pondctl export writes a tar stream: redirect stdout.");
        r = ctl_result_tar_export(fd, STDOUT_FILENO);
        return r < 0 ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}
