/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* admission-queue.h: jobs waiting their turn, in order of arrival, in a lease store's directory (the
 * admission ceiling's, admission.c, and the setup gate's, setup-gate.c): one file per waiter, named
 * "queue-" + the time it queued (20 digits: names sort as times) + "-" + its job id, flocked while the
 * waiter holds it open. A file whose flock can be taken has no waiter left (killed, crashed): it is
 * skipped, and removed by the next waiter that looks. Every call is made under the store's lock. */
#pragma once

#include "lease/lease-store.h"

#define ADMISSION_QUEUE_PREFIX "queue-"

/* Whether name is a queue file of job_id's. */
bool admission_queue_name_is(const char *name, const char *job_id);
/* Removes the queue files whose waiter is gone, the job's own excepted (never another's to judge); at most
 * the first max of the queue (0: all of it). */
int admission_queue_sweep(const LeaseStore *s, const char *job_id, size_t max);
/* The name of the job's queue file, or NULL if it has none. */
int admission_queue_find(const LeaseStore *s, const char *job_id, char **ret);
/* Removes the job's queue file, if it has one (a job that leaves the queue without its turn). */
int admission_queue_leave(const LeaseStore *s, const char *job_id);
/* The job's queue file, made now and flocked (*ret_fd: held open while it waits). */
int admission_queue_enter(const LeaseStore *s, const char *job_id, char **ret_name, int *ret_fd);
/* How many queue files are before mine (mine NULL: every one but the job's own). */
int admission_queue_ahead(const LeaseStore *s, const char *job_id, const char *mine, unsigned *ret);
