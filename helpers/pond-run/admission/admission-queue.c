/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* admission-queue.c: the waiters' queue files of a lease store (admission-queue.h): made, found, counted,
 * and the dead ones (their flock free) removed. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "admission/admission-queue.h"
#include "basic/fileio.h"
#include "basic/macro.h"

bool admission_queue_name_is(const char *name, const char *job_id) {
        const char *dash;

        if (strncmp(name, ADMISSION_QUEUE_PREFIX, strlen(ADMISSION_QUEUE_PREFIX)) != 0)
                return false;
        dash = strchr(name + strlen(ADMISSION_QUEUE_PREFIX), '-');
        return dash && streq(dash + 1, job_id);
}

/* A queue file whose flock can be taken has no waiter left. */
static bool waiter_alive(int dfd, const char *name) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0)
                return false;
        return flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

int admission_queue_sweep(const LeaseStore *s, const char *job_id, size_t max) {
        _cleanup_(lease_list_free) LeaseList queue = {};
        int r, n = 0;

        r = lease_store_list(s, ADMISSION_QUEUE_PREFIX, 0, &queue);
        if (r < 0)
                return r;
        for (size_t i = 0; i < queue.n && (max == 0 || i < max); i++) {
                const char *name = queue.entries[i].name;

                if (admission_queue_name_is(name, job_id) || waiter_alive(s->dfd, name))
                        continue;
                r = lease_store_remove(s, name);
                if (r < 0)
                        return r;
                n++;
        }
        return n;
}

int admission_queue_find(const LeaseStore *s, const char *job_id, char **ret) {
        _cleanup_(lease_list_free) LeaseList queue = {};
        int r;

        *ret = NULL;
        r = lease_store_list(s, ADMISSION_QUEUE_PREFIX, 0, &queue);
        if (r < 0)
                return r;
        for (size_t i = 0; i < queue.n; i++)
                if (admission_queue_name_is(queue.entries[i].name, job_id)) {
                        *ret = strdup(queue.entries[i].name);
                        return *ret ? 0 : -ENOMEM;
                }
        return 0;
}

int admission_queue_leave(const LeaseStore *s, const char *job_id) {
        _cleanup_free_ char *queued = NULL;
        int r;

        r = admission_queue_find(s, job_id, &queued);
        if (r < 0 || !queued)
                return r;
        return lease_store_remove(s, queued);
}

int admission_queue_enter(const LeaseStore *s, const char *job_id, char **ret_name, int *ret_fd) {
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        if (asprintf(&name, ADMISSION_QUEUE_PREFIX "%020" PRIu64 "-%s",
                     (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec, job_id) < 0)
                return -ENOMEM;
        if (!lease_name_is_valid(name))
                return -EINVAL;
        fd = openat(s->dfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        *ret_name = TAKE_PTR(name);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int admission_queue_ahead(const LeaseStore *s, const char *job_id, const char *mine, unsigned *ret) {
        _cleanup_(lease_list_free) LeaseList queue = {};
        unsigned n = 0;
        int r;

        r = lease_store_list(s, ADMISSION_QUEUE_PREFIX, 0, &queue);
        if (r < 0)
                return r;
        for (size_t i = 0; i < queue.n; i++) {
                const char *name = queue.entries[i].name;

                if (!admission_queue_name_is(name, job_id) && (!mine || strcmp(name, mine) < 0))
                        n++;
        }
        *ret = n;
        return 0;
}
