/* paths.h: where a job's files live; every path derives from the validated job id. Shared by the
 * supervisor (which creates them) and pondctl (which reads them). */
#pragma once

typedef struct JobPaths {
        char *id;          /* the validated job id everything below derives from */
        char *spool;       /* STATEDIR/jobs/ID: job.json as issued, log/ */
        char *results;     /* STATEDIR/results */
        char *images;      /* STATEDIR/images: directory images */
        char *rundir;      /* RUNDIR */
        char *run;         /* RUNDIR/jobs/ID: staging, rootfs, bundle; removed afterwards */
        char *bundle;      /* run/bundle */
        char *runtime_root;/* RUNDIR/runtime: the runtimes' state, pond's own */
        char *scope;       /* pond-ID.scope */
        char *scope_cgroup;/* /pond.slice/pond-ID.scope: where systemd puts it (checked) */
        char *container;   /* pond-ID */
} JobPaths;

int job_paths_init(JobPaths *p, const char *job_id);
void job_paths_done(JobPaths *p);
char *job_worker_key_path(const char *file);
