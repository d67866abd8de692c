/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* uid-lease.c: the pool of host uid ranges. A lease is a file named after the job id in the lease directory,
 * holding the slot; the choice is made under an flock of the directory. A range is proven free from /proc
 * before it is handed out and before it is given back: a process of the range still alive (a leftover of a
 * job whose cleanup failed, or anyone's) keeps it out of use. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "userns/userns.h"

#define LEASE_MAX 32

static UidRange range_of(unsigned slot) {
        return (UidRange) { .base = UID_POOL_BASE + slot * UID_RANGE_SIZE, .slot = slot };
}

static int read_lease(int dfd, const char *name, UidRange *ret) {
        _cleanup_free_ char *buf = NULL;
        unsigned slot;
        int n = 0, r = read_full_file_at(dfd, name, LEASE_MAX, &buf, NULL);

        if (r < 0)
                return r;
        if (sscanf(buf, "%u\n%n", &slot, &n) != 1 || buf[n] != 0 || slot >= UID_POOL_SLOTS)
                return -EINVAL;
        *ret = range_of(slot);
        return 0;
}

/* /proc/PID/status "Uid:" holds real, effective, saved and filesystem uids. */
static bool status_uid_in(int procfd, const char *pid, uid_t base, uint32_t size) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        unsigned long ids[4];
        const char *line;

        if (asprintf(&path, "%s/status", pid) < 0 || read_full_file_at(procfd, path, 64 * 1024, &buf, NULL) < 0)
                return false;   /* gone meanwhile (or unreadable: then the pid's directory owner said enough) */
        line = strstr(buf, "\nUid:");
        if (!line || sscanf(line, "\nUid: %lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]) != 4)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(ids); i++)
                if (ids[i] >= base && ids[i] - base < size)
                        return true;
        return false;
}

int uid_range_in_use(uid_t base, uint32_t size) {
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                struct stat st;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                /* The directory's owner is the task's effective uid, or root for a task that made itself
                 * non-dumpable: only those have their status file (all four uids) read. */
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
                        continue;
                if ((st.st_uid >= base && st.st_uid - base < size) ||
                    (st.st_uid == 0 && status_uid_in(dirfd(d), de->d_name, base, size)))
                        return 1;
        }
        return 0;
}

/* Which slots hold a lease; malformed files (and the atomic writer's temporary ones) hold none. */
static int mark_taken(int dfd, bool *taken) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r = opendir_fd(dfd, &d);

        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                UidRange range;

                if (job_id_is_valid(de->d_name) && read_lease(dfd, de->d_name, &range) >= 0)
                        taken[range.slot] = true;
        }
        return 0;
}

int uid_lease_acquire(const char *dir, const char *job_id, UidRange *ret) {
        _cleanup_close_ int dfd = -EBADF;
        bool taken[UID_POOL_SLOTS] = {};
        char buf[LEASE_MAX];
        int r;

        if (!job_id_is_valid(job_id) || !ret)
                return -EINVAL;
        r = dir_open_locked(dir, &dfd);
        if (r < 0)
                return r;
        if (read_lease(dfd, job_id, ret) >= 0)
                return 0;
        r = mark_taken(dfd, taken);
        if (r < 0)
                return r;
        for (unsigned slot = 0; slot < UID_POOL_SLOTS; slot++) {
                UidRange range = range_of(slot);

                if (taken[slot])
                        continue;
                r = uid_range_in_use(range.base, UID_RANGE_SIZE);
                if (r < 0)
                        return r;
                if (r > 0) {
                        log_warning("Host uid range %u+%u has processes but no lease: left out of use.",
                                    (unsigned) range.base, UID_RANGE_SIZE);
                        continue;
                }
                snprintf(buf, sizeof buf, "%u\n", slot);
                r = write_file_atomic_at(dfd, job_id, buf, strlen(buf), 0600);
                if (r < 0)
                        return r;
                *ret = range;
                return 0;
        }
        return -EBUSY;
}

int uid_lease_find(const char *dir, const char *job_id, UidRange *ret) {
        _cleanup_close_ int dfd = -EBADF;

        if (!job_id_is_valid(job_id))
                return -EINVAL;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        return read_lease(dfd, job_id, ret);
}

int uid_lease_release(const char *dir, const char *job_id) {
        _cleanup_close_ int dfd = -EBADF;
        UidRange range;
        int r;

        if (!job_id_is_valid(job_id))
                return -EINVAL;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = read_lease(dfd, job_id, &range);
        if (r == -ENOENT)
                return 0;
        if (r >= 0) {
                r = uid_range_in_use(range.base, UID_RANGE_SIZE);
                if (r > 0)
                        return log_debug_errno(EBUSY, "Host uid range %u+%u of %s still has processes: kept.",
                                               (unsigned) range.base, UID_RANGE_SIZE, job_id);
                if (r < 0)
                        return r;
        }
        /* A malformed lease file is removed too: it names no range. */
        if (unlinkat(dfd, job_id, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
