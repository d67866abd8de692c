/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dirs.h: pond's directories, as configured at build time (config.h), with the environment overrides
 * tests and the demo use to relocate them. The one place that reads those overrides: the units never set
 * them. */
#pragma once

typedef enum PondDir {
        POND_DIR_POLICY,        /* profiles.json, seccomp.json, egress.json, prices.json: $POND_POLICYDIR */
        POND_DIR_STATE,         /* jobs/, results/, images/: $POND_STATEDIR */
        POND_DIR_RUN,           /* per-job runtime state, leases, the runtimes' roots: $POND_RUNDIR */
        POND_DIR_KEY,           /* the worker's keys (no override: the pinned keys are not relocatable) */
        POND_DIR_NFT,           /* nftables templates (no override; $POND_NFT_TEMPLATE names a file) */
        POND_DIR_CONFIG,        /* the operator's site settings, SYSCONFDIR/pond: $POND_CONFDIR */
        POND_DIR_LIBEXEC,       /* pond-run and pond-init (no override: pond-init is bound into jobs) */
        _POND_DIR_MAX,
} PondDir;

/* The directory; never NULL for a valid d. A set override wins, even when empty. */
const char *pond_dir(PondDir d);
