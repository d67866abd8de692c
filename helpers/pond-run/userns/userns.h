/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* userns.h: a host uid range per job (runc): the range leased from pond's pool, the job's user namespace
 * (owned by the range's first uid, so that the kernel's per-user quotas count each job apart), and the
 * idmapped mounts that show the job its files as owned inside its range. docs/threat-model.md, "One host
 * uid range per job", says what this isolates and what it does not. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The pool: UID_POOL_SLOTS ranges of UID_RANGE_SIZE ids from UID_POOL_BASE. 0x70000000 is above what
 * useradd hands out (subuids end at 600100000 by default) and above systemd-nspawn's container ranges
 * (524288 to 0x6FFFFFFF); below the ids systemd's nsresourced hands out (0x80000000 on). */
#define UID_POOL_BASE 0x70000000U
#define UID_POOL_SLOTS 1024U
#define UID_RANGE_SIZE 65536U

/* The lease directory below pond_dir(POND_DIR_RUN). */
#define UID_LEASE_DIR "uids"

/* A job's range: ids inside the job 0..UID_RANGE_SIZE-1 are base..base+UID_RANGE_SIZE-1 on the host. */
typedef struct UidRange {
        uid_t base;
        unsigned slot;
} UidRange;

/* uid-lease.c. Takes a free range for job_id (one file per job in dir, holding its slot, chosen under an
 * flock of dir). A slot with any process of its ids still running on the host is skipped, whoever leased
 * it. A job that holds a lease already gets the same range back. -EBUSY: the pool is exhausted. */
int uid_lease_acquire(const char *dir, const char *job_id, UidRange *ret);
/* The job's range, if it holds one: 0 and *ret set; -ENOENT if not. */
int uid_lease_find(const char *dir, const char *job_id, UidRange *ret);
/* Gives the job's range back, unless a process of the range is still alive (-EBUSY: the lease is kept, a
 * range is never reused while anything of its job runs). No lease is fine. */
int uid_lease_release(const char *dir, const char *job_id);
/* Whether any process on the host runs with a real, effective or saved uid in [base, base + size). */
int uid_range_in_use(uid_t base, uint32_t size);

/* userns.c. A user namespace owned by uid base (created by a child that became base), mapping 0..size-1
 * to base..base+size-1 for uids and gids, kept alive by a bind mount of its nsfs inode at pin_path (a new
 * file). The runtime joins it by path. */
int userns_create(const char *pin_path, uid_t base, uint32_t size);
/* Unmounts and removes pin_path; a missing one is fine. */
int userns_remove(const char *pin_path);
/* An fd of a throwaway user namespace mapping the single id inside_uid/inside_gid to outside_uid/
 * outside_gid: the idmapping of a checkout, whose owner is shown as the job user. */
int userns_map_one(uid_t inside_uid, gid_t inside_gid, uid_t outside_uid, gid_t outside_gid, int *ret_fd);

/* idmap.c. Flags for the idmapped clones (MOUNT_ATTR_* subsets). */
enum {
        IDMAP_RDONLY = 1 << 0,
        IDMAP_NOEXEC = 1 << 1,
};
/* Idmaps the detached tree tree_fd (from open_tree(OPEN_TREE_CLONE)) through userns_fd, nosuid and nodev. */
int idmap_tree(int tree_fd, int userns_fd, unsigned flags);
/* A detached clone of the mount at src (not its submounts), idmapped through userns_fd, nosuid and nodev
 * always: an fd of the new tree (an overlay takes it as /proc/self/fd/N in lowerdir). */
int idmap_clone(const char *src, int userns_fd, unsigned flags, int *ret_tree_fd);
/* The same, attached at target. */
int idmap_mount(const char *src, const char *target, int userns_fd, unsigned flags);
