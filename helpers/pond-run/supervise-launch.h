/* supervise-launch.h: the phases of a running job, each in its own file. */
#pragma once

#include "supervise.h"

/* supervise-launch.c: stage, image, bundle, input hashing, scope, runtime create + start. */
int job_launch(Job *j);
/* supervise-loop.c: output, wall clock, cancellation, until the container's init has exited. */
int job_run_loop(Job *j);
/* supervise-finish.c: outcome, runtime and scope removal, artifacts, signed result. Returns the exit code. */
int job_finish(Job *j, int r);
/* supervise-sidecar.c: waiting for a sidecar unit's start (fail closed), stopping it and reading its totals. */
int sidecar_wait(Job *j, UnitStart **starting, const char *what);
int sidecar_stop(sd_bus *bus, const char *unit, const char *runtime_dir, const char *config_dir,
                 json_object **ret_stats);
/* supervise-egress.c: the job's CONNECT proxy unit (allowlist posture only). */
int job_egress_start(Job *j);
int job_egress_wait(Job *j);
/* supervise-broker.c: the job's credential broker unit (jobs with credentials only). */
int job_broker_check(const Job *j, char **ret_error);
int job_broker_configure(Job *j);
int job_broker_start(Job *j);
int job_broker_wait(Job *j);
bool job_broker_ceiling_hit(const Job *j);
int job_broker_stop(sd_bus *bus, const JobPaths *paths, json_object **ret_stats);
int job_egress_stop(sd_bus *bus, const JobPaths *paths, json_object **ret_stats);
/* supervise-bundle.c: a bundle job's checkout, extracted before anything runs (a failure is a refusal). */
int job_bundle_extract(Job *j, char **ret_error);
char *job_bundle_checkout(const JobPaths *p);
/* supervise-finish.c: `delete --force` of the job's container if the runtime holds state for it. */
int job_delete_container(const RuntimeProvider *p, const JobPaths *paths);
/* supervise-finish.c: unmounts and removes the job's runtime directory; idempotent. */
int job_teardown(Job *j);
