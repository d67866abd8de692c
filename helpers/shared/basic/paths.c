/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* paths.c: where a job's files live; every path derives from the validated job id. */
#include <string.h>

#include "basic/dirs.h"
#include "basic/jobid.h"
#include "basic/paths.h"
#include "basic/unit-name.h"

/* Where systemd creates a system unit's RuntimeDirectory= (the %t of the system manager): always /run,
 * whatever RUNDIR is. The sidecars' runtime directories cannot live below RUNDIR: it is root's alone
 * (0700), and the sidecars run as dynamic users that could not reach them there. */
#define SYSTEMD_RUNTIME_ROOT "/run"

static const char *const sidecar_table[_POND_SIDECAR_MAX] = {
        [POND_SIDECAR_EGRESS] = "egress",
        [POND_SIDECAR_BROKER] = "broker",
};

const char *pond_sidecar_to_string(PondSidecar s) {
        return s >= 0 && s < _POND_SIDECAR_MAX ? sidecar_table[s] : NULL;
}

static const char *statedir(void) {
        return pond_dir(POND_DIR_STATE);
}

static const char *rundir(void) {
        return pond_dir(POND_DIR_RUN);
}

static const UnitKind sidecar_unit_kind[_POND_SIDECAR_MAX] = {
        [POND_SIDECAR_EGRESS] = UNIT_EGRESS_SERVICE,
        [POND_SIDECAR_BROKER] = UNIT_BROKER_SERVICE,
};

/* The same names as units/pond-NAME@.service.in uses: LoadCredential=config.json:RUNDIR/NAME/%i/config.json
 * and RuntimeDirectory=pond-NAME/%i. */
static int sidecar_paths_init(SidecarPaths *s, PondSidecar kind, const char *id) {
        const char *name = pond_sidecar_to_string(kind);

        if (unit_name(sidecar_unit_kind[kind], id, &s->unit) < 0 ||
            asprintf(&s->socket, "%.*s.socket", (int) (strlen(s->unit) - strlen(".service")), s->unit) < 0 ||
            asprintf(&s->config_dir, "%s/%s/%s", rundir(), name, id) < 0 ||
            asprintf(&s->config, "%s/config.json", s->config_dir) < 0 ||
            asprintf(&s->runtime_dir, SYSTEMD_RUNTIME_ROOT "/pond-%s/%s", name, id) < 0 ||
            asprintf(&s->stats, "%s/stats.json", s->runtime_dir) < 0)
                return -ENOMEM;
        return 0;
}

static void sidecar_paths_done(SidecarPaths *s) {
        free(s->unit);
        free(s->socket);
        free(s->config_dir);
        free(s->config);
        free(s->runtime_dir);
        free(s->stats);
        *s = (SidecarPaths) {};
}

int job_paths_init(JobPaths *p, const char *id) {
        if (!job_id_is_valid(id))
                return -EINVAL;
        *p = (JobPaths) {};
        if (asprintf(&p->spool, "%s/jobs/%s", statedir(), id) < 0 ||
            asprintf(&p->log, "%s/jobs/%s/log", statedir(), id) < 0 ||
            asprintf(&p->checkout, "%s/jobs/%s/checkout", statedir(), id) < 0 ||
            asprintf(&p->results, "%s/results", statedir()) < 0 ||
            asprintf(&p->inbox, "%s/inbox/%s.json", statedir(), id) < 0 ||
            asprintf(&p->owner, "%s/owners/%s", statedir(), id) < 0 ||
            asprintf(&p->images, "%s/images", statedir()) < 0 ||
            asprintf(&p->run, "%s/jobs/%s", rundir(), id) < 0 ||
            !(p->rundir = strdup(rundir())) || !(p->id = strdup(id)) ||
            asprintf(&p->bundle, "%s/jobs/%s/bundle", rundir(), id) < 0 ||
            asprintf(&p->runtime_root, "%s/runtime", rundir()) < 0 ||
            unit_name(UNIT_JOB_SERVICE, id, &p->service) < 0 ||
            unit_name(UNIT_SCOPE, id, &p->scope) < 0 ||
            asprintf(&p->scope_cgroup, "/" POND_SLICE "/pond-%s.scope", id) < 0 ||
            /* '+' ends it (no job id has one): runsc looks a container up by prefix, and "pond-job-1" was
             * ambiguous while "pond-job-10" existed (a job failed under load); "pond-job-1+" is not. */
            asprintf(&p->container, "pond-%s+", id) < 0 ||
            asprintf(&p->console, "%s/console/%s.sock", rundir(), id) < 0 ||
            asprintf(&p->console_runtime, "%s/jobs/%s/console-runtime.sock", rundir(), id) < 0)
                goto fail;
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++)
                if (sidecar_paths_init(&p->sidecars[s], s, id) < 0)
                        goto fail;
        return 0;
fail:
        job_paths_done(p);
        return -ENOMEM;
}

/* The worker's key files reach a unit as systemd credentials named pond-FILE (LoadCredential=); run by
 * hand (tests, the demo) the supervisor reads them from the key directory. */
char *job_worker_key_path(const char *file) {
        const char *creds = getenv("CREDENTIALS_DIRECTORY");
        char *p = NULL;

        if (asprintf(&p, creds ? "%s/pond-%s" : "%s/%s", creds ?: pond_dir(POND_DIR_KEY), file) < 0)
                return NULL;
        return p;
}

void job_paths_done(JobPaths *p) {
        free(p->spool);
        free(p->log);
        free(p->checkout);
        free(p->results);
        free(p->inbox);
        free(p->owner);
        free(p->images);
        free(p->run);
        free(p->rundir);
        free(p->id);
        free(p->bundle);
        free(p->runtime_root);
        free(p->service);
        free(p->scope);
        free(p->scope_cgroup);
        free(p->container);
        free(p->console);
        free(p->console_runtime);
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++)
                sidecar_paths_done(&p->sidecars[s]);
        *p = (JobPaths) {};
}
