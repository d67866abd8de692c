/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* setup-gate.c: the slots of the setup gate (setup-gate.h): flocked slot files, taken in order of arrival
 * through the waiters' queue (admission-queue.c), all under the lease store's lock. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "admission/admission-queue.h"
#include "admission/setup-gate.h"
#include "basic/fileio.h"
#include "basic/macro.h"

/* Slot n's file, opened (made if need be) and flocked; -EWOULDBLOCK: another job holds it. */
static int slot_take(const LeaseStore *s, unsigned n) {
        _cleanup_close_ int fd = -EBADF;
        char name[32];

        (void) snprintf(name, sizeof name, "slot-%u", n);
        fd = openat(s->dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* A free slot if there are more than `ahead` free ones (the waiters before this job take theirs first);
 * the slots tried and not kept are given back at once (still under the store's lock). */
static int slot_find(const LeaseStore *s, unsigned slots, unsigned ahead, unsigned *ret_slot) {
        _cleanup_close_ int fd = -EBADF;
        unsigned found = 0, slot = 0;

        for (unsigned n = 0; n < slots && found <= ahead; n++) {
                int k = slot_take(s, n);
                if (k == -EWOULDBLOCK)
                        continue;
                if (k < 0)
                        return k;
                safe_close(fd);
                fd = k;
                slot = n;
                found++;
        }
        if (found <= ahead)
                return -EWOULDBLOCK;
        *ret_slot = slot;
        return TAKE_FD(fd);
}

int setup_gate_try(const char *dir, const char *job_id, unsigned slots, int *slot_fd, int *queue_fd,
                   SetupGateState *ret_state) {
        _cleanup_(lease_store_close) LeaseStore store = LEASE_STORE_NULL;
        _cleanup_free_ char *mine = NULL;
        SetupGateState st = {};
        int r, fd;

        r = lease_store_open(dir, LEASE_STORE_CREATE, &store);
        if (r < 0)
                return r;
        if (*queue_fd >= 0) {
                r = admission_queue_find(&store, job_id, &mine);
                if (r < 0)
                        return r;
        }
        r = admission_queue_ahead(&store, job_id, mine, &st.ahead);
        /* Dead waiters are looked for only where they could hold this job back: among the first `slots` of
         * the queue (past them, the live ones there hold it back anyway). A burst's waiters poll this, so
         * each look costs a few flocks, not one per waiter. */
        if (r >= 0 && st.ahead > 0 && admission_queue_sweep(&store, job_id, slots) > 0)
                r = admission_queue_ahead(&store, job_id, mine, &st.ahead);
        if (r < 0)
                return r;
        fd = st.ahead < slots ? slot_find(&store, slots, st.ahead, &st.slot) : -EWOULDBLOCK;
        if (fd >= 0) {
                if (mine)
                        (void) lease_store_remove(&store, mine);
                *queue_fd = safe_close(*queue_fd);
                *slot_fd = fd;
                *ret_state = st;
                return 1;
        }
        if (fd != -EWOULDBLOCK)
                return fd;
        if (!mine) {
                *queue_fd = safe_close(*queue_fd);
                r = admission_queue_enter(&store, job_id, &mine, queue_fd);
                if (r < 0)
                        return r;
        }
        *ret_state = st;
        return 0;
}

int setup_gate_leave(const char *dir, const char *job_id) {
        _cleanup_(lease_store_close) LeaseStore store = LEASE_STORE_NULL;
        int r;

        r = lease_store_open(dir, LEASE_STORE_MISSING_OK, &store);
        if (r <= 0)
                return r;
        return admission_queue_leave(&store, job_id);
}
