/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* paths.h: where a job's files live; every path derives from the validated job id. Shared by the
 * supervisor (which creates them) and pondctl (which reads them). */
#pragma once

#include "basic/macro.h"

/* The job's sidecar units, each configured the same way (docs/architecture.md, "Sidecars"). */
typedef enum PondSidecar {
        POND_SIDECAR_EGRESS,    /* pond-egress@ID.service: the CONNECT proxy (allowlist posture) */
        POND_SIDECAR_BROKER,    /* pond-broker@ID.service: the credential broker (jobs with credentials) */
        _POND_SIDECAR_MAX,
        _POND_SIDECAR_INVALID = -EINVAL,
} PondSidecar;

const char *pond_sidecar_to_string(PondSidecar s) _pure_;

typedef struct SidecarPaths {
        char *unit;        /* pond-NAME@ID.service */
        char *socket;      /* pond-NAME@ID.socket: the transient socket unit of a sidecar that gets its listening
                            * socket from systemd (the egress proxy) */
        char *config_dir;  /* RUNDIR/NAME/ID, root's alone (0700) */
        char *config;      /* config_dir/config.json: the unit gets it as the credential config.json */
        char *runtime_dir; /* the unit's RuntimeDirectory= (pond-NAME/ID below systemd's /run), preserved
                            * after the stop until the supervisor has read the stats */
        char *stats;       /* runtime_dir/stats.json: the sidecar's totals, written at exit */
} SidecarPaths;

typedef struct JobPaths {
        char *id;          /* the validated job id everything below derives from */
        char *spool;       /* STATEDIR/jobs/ID: job.json as issued, log/ */
        char *log;         /* spool/log: the job's output */
        char *checkout;    /* spool/checkout: a bundle job's extracted source */
        char *results;     /* STATEDIR/results */
        char *inbox;       /* STATEDIR/inbox/ID.json: a group member's submission, owned by them (access.h) */
        char *owner;       /* STATEDIR/owners/ID: the accepted submitter's name, for the polkit rule */
        char *images;      /* STATEDIR/images: directory images */
        char *rundir;      /* RUNDIR */
        char *run;         /* RUNDIR/jobs/ID: staging, rootfs, bundle; removed afterwards */
        char *bundle;      /* run/bundle */
        char *runtime_root;/* RUNDIR/runtime: the runtimes' state, pond's own */
        char *service;     /* pond-job@ID.service: the supervisor's unit */
        char *scope;       /* pond-ID.scope */
        char *scope_cgroup;/* /pond.slice/pond-ID.scope: where systemd puts it (checked) */
        char *container;   /* pond-ID+ (prefix-free: runtimes may look ids up by prefix) */
        char *console;     /* RUNDIR/console/ID.sock: attach and exec, root's and the submitter's alone (console.h);
                            * not below run/, which a member cannot search (a runc job's is its range's) */
        char *console_runtime; /* run/console-runtime.sock: where the runtime hands over a tty job's pty master */
        SidecarPaths sidecars[_POND_SIDECAR_MAX];
} JobPaths;

int job_paths_init(JobPaths *p, const char *job_id);
void job_paths_done(JobPaths *p);
char *job_worker_key_path(const char *file);
