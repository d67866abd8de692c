/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup.h: a unit's cgroup after the fact: OOM kills, the v1 OOM notification, leftover directories
 * (cgroup.c). The layout and the path helpers are in cgroup-util.h. */
#pragma once

#include <stdint.h>

/* Number of OOM kills recorded for a cgroup (v1 memory.oom_control or v2 memory.events), summed over
 * the cgroup and its descendants, since v1 counts a kill only where the limit was hit. */
int cgroup_oom_kills(const char *cgroup_path, uint64_t *ret);

/* An eventfd that becomes readable when the v1 memcg at cgroup_path hits OOM. -ENOENT without v1 memory. */
int cgroup_oom_watch(const char *cgroup_path, int *ret_eventfd);

/* rmdir()s what the runtime left of the payload's cgroup in hierarchies systemd does not manage. */
int cgroup_remove_leftovers(const char *scope_cgroup);
