/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layer.h: unpacking one layer tar (plain, gzip or zstd) into a directory of its own, in the form
 * overlayfs takes as a lower layer. */
#pragma once

#include <stdint.h>

#include "image/image-store.h"

typedef struct LayerStats {
        uint64_t entries, bytes;
        uint64_t skipped_special;       /* device nodes, fifos, sockets: dropped */
        uint64_t stripped_setid;        /* setuid/setgid bits removed */
        uint64_t whiteouts, opaques;
} LayerStats;

/* Unpacks the tar read from blob_fd into the empty directory dest_fd, in a child process (libarchive
 * extracts relative to the working directory). Refuses the whole layer, -EPERM with *ret_error saying
 * which entry, for: absolute paths or "..", a path through a symlink, a hard link to anything but a
 * regular file of this layer, more than max_entries entries or max_bytes of content. Neutralises: device
 * nodes, fifos and sockets are not created; setuid and setgid bits are cleared; extended attributes and
 * ACLs are not restored. Converts OCI whiteouts to overlayfs form: ".wh.NAME" becomes a 0:0 character
 * device NAME, ".wh..wh..opq" the xattr trusted.overlay.opaque=y on its directory. Ownership is restored
 * only when running as root. Everything is synced (syncfs) before it returns. */
int layer_unpack(int blob_fd, int dest_fd, const LayerLimits *limits, LayerStats *ret_stats, char **ret_error);
