/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup.h: a unit's cgroup after the fact: OOM kills, the v1 OOM notification, leftover directories
 * (cgroup.c). The layout and the path helpers are in cgroup-util.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup-util.h"

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

/* cgroup v2 (a unified layout) allows no process in a cgroup that enables controllers for its children, and
 * the runtime enables them in the (delegated) scope for the payload's cgroup: pond's own processes in the
 * scope live in leaves of their own beside it. The runtime's create step, and what it leaves behind: */
#define CGROUP_LEAF_RUNTIME "pond-runtime"
/* The counters' pin (v1 keeps it outside systemd's hierarchy; v2 has one hierarchy): it keeps the scope
 * populated, so that systemd does not remove it and its counters before the supervisor has read them. */
#define CGROUP_LEAF_PIN "pond-pin"
/* Moves pid into the leaf below scope_cgroup (made if missing). -ENOENT on a layout that is not unified
 * (nothing is touched), -errno otherwise. */
int cgroup_v2_attach_leaf(const char *scope_cgroup, const char *leaf, pid_t pid);
int cgroup_v2_attach_leaf_at(const char *root, CgroupLayout layout, const char *scope_cgroup, const char *leaf,
                             pid_t pid);

/* Up to max pids of the processes in the cgroup (v1: its pids hierarchy). */
int cgroup_read_procs(const char *cgroup_path, pid_t *pids, size_t max, size_t *ret_n);

/* rmdir()s what the runtime left of the payload's cgroup in hierarchies systemd does not manage (v1), or the
 * leaves pond made below the scope (v2). */
int cgroup_remove_leftovers(const char *scope_cgroup);
