/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* uid-lease.c: the pool of host uid ranges. A lease is a file named after the job id in the lease directory
 * (lease/lease-store.h), holding the slot; the choice is made under the store's lock. A range is proven free
 * from /proc before it is handed out and before it is given back (the store's proof of a stale lease): a
 * process of the range still alive (a leftover of a job whose cleanup failed, or anyone's) keeps it out of
 * use. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "lease/lease-store.h"
#include "userns/userns.h"

#define LEASE_MAX 32

static UidRange range_of(unsigned slot) {
        return (UidRange) { .base = UID_POOL_BASE + slot * UID_RANGE_SIZE, .slot = slot };
}

static int parse_lease(const char *text, UidRange *ret) {
        unsigned slot;
        int n = 0;

        if (!text || sscanf(text, "%u\n%n", &slot, &n) != 1 || text[n] != 0 || slot >= UID_POOL_SLOTS)
                return -EINVAL;
        *ret = range_of(slot);
        return 0;
}

static int read_lease(const LeaseStore *s, const char *name, UidRange *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = lease_store_read(s, name, LEASE_MAX, &buf);

        return r < 0 ? r : parse_lease(buf, ret);
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

/* Which slots hold a lease; malformed files hold none. */
static int mark_taken(const LeaseStore *s, bool *taken) {
        _cleanup_(lease_list_free) LeaseList l = {};
        int r = lease_store_list(s, NULL, LEASE_MAX, &l);

        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                UidRange range;

                if (job_id_is_valid(l.entries[i].name) && parse_lease(l.entries[i].text, &range) >= 0)
                        taken[range.slot] = true;
        }
        return 0;
}

int uid_lease_acquire(const char *dir, const char *job_id, UidRange *ret) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        bool taken[UID_POOL_SLOTS] = {};
        char buf[LEASE_MAX];
        int r;

        if (!job_id_is_valid(job_id) || !ret)
                return -EINVAL;
        r = lease_store_open(dir, LEASE_STORE_CREATE, &s);
        if (r < 0)
                return r;
        if (read_lease(&s, job_id, ret) >= 0)
                return 0;
        r = mark_taken(&s, taken);
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
                r = lease_store_write(&s, job_id, buf);
                if (r < 0)
                        return r;
                *ret = range;
                return 0;
        }
        return -EBUSY;
}

int uid_lease_find(const char *dir, const char *job_id, UidRange *ret) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        int r;

        if (!job_id_is_valid(job_id))
                return -EINVAL;
        r = lease_store_open(dir, LEASE_STORE_SHARED, &s);
        if (r < 0)
                return r;
        return read_lease(&s, job_id, ret);
}

/* The proof a range may go back to the pool: no process of its uids is left. A malformed lease names no
 * range, and goes too. */
static int range_stale(const LeaseStore *s _unused_, const char *job_id, const char *text, void *userdata _unused_) {
        UidRange range;
        int r;

        if (parse_lease(text, &range) < 0)
                return 1;
        r = uid_range_in_use(range.base, UID_RANGE_SIZE);
        if (r > 0)
                log_debug("Host uid range %u+%u of %s still has processes: kept.", (unsigned) range.base,
                          UID_RANGE_SIZE, job_id);
        return r < 0 ? r : !r;
}

int uid_lease_release(const char *dir, const char *job_id) {
        return job_id_is_valid(job_id) ? lease_release(dir, job_id, LEASE_MAX, range_stale, NULL) : -EINVAL;
}
