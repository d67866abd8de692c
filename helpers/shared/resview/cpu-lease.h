/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-lease.h: the host CPUs each job runs on (its cpuset), chosen so that concurrent jobs spread over the
 * host's cores. docs/architecture.md, "What a job sees of its resources", says why and what it costs. */
#pragma once

#include <sched.h>
#include <stdbool.h>

/* The lease directory below pond_dir(POND_DIR_RUN). */
#define CPU_LEASE_DIR "cpus"

/* ceil(cpus_milli / 1000), at least 1. */
unsigned cpus_ceil(unsigned long long cpus_milli);

/* "0-3,6": the Linux cpu list form (cpuset.cpus, /sys/devices/system/cpu/online). */
int cpu_list_format(const cpu_set_t *set, char **ret);
int cpu_list_parse(const char *s, cpu_set_t *ret);

/* The n CPUs of host with the lowest load[] (the number of leases on each), ties to the lower CPU: a job
 * gets the least-shared cores, and when there are more jobs than cores they share the least-loaded ones.
 * n larger than the host's CPUs yields all of them. -EINVAL for an empty host or n == 0. */
int cpu_lease_choose(const cpu_set_t *host, const unsigned *load, unsigned n, cpu_set_t *ret);

/* Takes a lease of n CPUs of host for job_id in dir (created if need be; one file per job holding its cpu
 * list, chosen under an flock of dir so two jobs never count the same leases). A job that holds a lease
 * already gets the same CPUs back. */
int cpu_lease_acquire(const char *dir, const char *job_id, const cpu_set_t *host, unsigned n, cpu_set_t *ret);

/* Gives the job's lease back; no lease (or no directory) is fine. */
int cpu_lease_release(const char *dir, const char *job_id);
