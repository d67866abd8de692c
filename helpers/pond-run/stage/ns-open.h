/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ns-open.h: opening a path as another mount namespace (the service manager's) sees it. */
#pragma once

/* The service manager's mount namespace: where the host paths a spec names (checkout, bundle) are meant. */
#define NS_MANAGER_MNT "/proc/1/ns/mnt"

/* open(path, flags | O_CLOEXEC) as the mount namespace ns_path sees it (NULL, or the one we are in: here).
 * 0 and *ret_fd, or the open's -errno. */
int ns_open(const char *ns_path, const char *path, int flags, int *ret_fd);

/* open_tree(AT_FDCWD, path, flags | OPEN_TREE_CLOEXEC) likewise: with OPEN_TREE_CLONE a detached copy of the
 * mount there, which can be attached (move_mount) in our namespace. */
int ns_open_tree(const char *ns_path, const char *path, unsigned flags, int *ret_fd);

/* open_tree(dirfd, "", flags | OPEN_TREE_CLONE | AT_EMPTY_PATH | OPEN_TREE_CLOEXEC) in the mount namespace
 * ns_path, where dirfd was opened (NULL, or the one we are in: here): a detached clone of exactly the
 * directory dirfd is open on, whatever its path leads to by now, attachable in our namespace. The kernel
 * clones only a mount of the caller's own namespace: asked here for a directory opened in another, EINVAL. */
int ns_clone_fd(const char *ns_path, int dirfd, unsigned flags, int *ret_fd);
