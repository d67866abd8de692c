/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup.h: a unit's cgroup after the fact: OOM kills, the v1 OOM notification, leftover directories
 * (cgroup.c). The layout and the path helpers are in cgroup-util.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup-util.h"

/* Number of OOM kills recorded for a cgroup (v1 memory.oom_control or v2 memory.events.local), summed over
 * the cgroup and its descendants, since each counts a kill only in one cgroup. */
int cgroup_oom_kills(const char *cgroup_path, uint64_t *ret);
/* The same below root in layout (tests give a directory of fixtures): v1 memory.oom_control summed over the
 * subtree; v2 memory.events.local summed over the subtree, or the scope's memory.events on kernels without
 * it (before 5.2). */
int cgroup_oom_kills_at(const char *root, CgroupLayout layout, const char *cgroup_path, uint64_t *ret);

/* Moves pid into the v1 memcg at cgroup_path (and no other hierarchy), so that the memcg and its oom_kill
 * count outlive the payload until pid is killed. -ENOENT without v1 memory. */
int cgroup_oom_pin(const char *cgroup_path, pid_t pid);

/* An eventfd that becomes readable when the v1 memcg at cgroup_path hits OOM, or is removed: a hint to read
 * cgroup_oom_kills(), no more. -ENOENT without v1 memory. */
int cgroup_oom_watch(const char *cgroup_path, int *ret_eventfd);

/* Up to max pids of the processes in the cgroup (v1: its pids hierarchy). */
int cgroup_read_procs(const char *cgroup_path, pid_t *pids, size_t max, size_t *ret_n);

/* rmdir()s what the runtime left of the payload's cgroup in hierarchies systemd does not manage. */
int cgroup_remove_leftovers(const char *scope_cgroup);
