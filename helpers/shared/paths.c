/* paths.c: where a job's files live; every path derives from the validated job id. */
#include <string.h>

#include "config.h"
#include "jobid.h"
#include "scope.h"
#include "paths.h"

static const char *statedir(void) {
        /* Tests and the demo may relocate state; the units never set this. */
        return getenv("POND_STATEDIR") ?: POND_STATEDIR;
}

static const char *rundir(void) {
        return getenv("POND_RUNDIR") ?: POND_RUNDIR;
}

int job_paths_init(JobPaths *p, const char *id) {
        if (!job_id_is_valid(id))
                return -EINVAL;
        *p = (JobPaths) {};
        if (asprintf(&p->spool, "%s/jobs/%s", statedir(), id) < 0 ||
            asprintf(&p->results, "%s/results", statedir()) < 0 ||
            asprintf(&p->images, "%s/images", statedir()) < 0 ||
            asprintf(&p->run, "%s/jobs/%s", rundir(), id) < 0 ||
            !(p->rundir = strdup(rundir())) || !(p->id = strdup(id)) ||
            asprintf(&p->bundle, "%s/jobs/%s/bundle", rundir(), id) < 0 ||
            asprintf(&p->runtime_root, "%s/runtime", rundir()) < 0 ||
            asprintf(&p->scope, "pond-%s.scope", id) < 0 ||
            asprintf(&p->scope_cgroup, "/" POND_SLICE "/pond-%s.scope", id) < 0 ||
            asprintf(&p->container, "pond-%s", id) < 0) {
                job_paths_done(p);
                return -ENOMEM;
        }
        return 0;
}

/* The worker's key files reach a unit as systemd credentials named pond-FILE (LoadCredential=); run by
 * hand (tests, the demo) the supervisor reads them from the key directory. */
char *job_worker_key_path(const char *file) {
        const char *creds = getenv("CREDENTIALS_DIRECTORY");
        char *p = NULL;

        if (asprintf(&p, creds ? "%s/pond-%s" : "%s/%s", creds ?: POND_KEYDIR, file) < 0)
                return NULL;
        return p;
}

void job_paths_done(JobPaths *p) {
        free(p->spool);
        free(p->results);
        free(p->images);
        free(p->run);
        free(p->rundir);
        free(p->id);
        free(p->bundle);
        free(p->runtime_root);
        free(p->scope);
        free(p->scope_cgroup);
        free(p->container);
        *p = (JobPaths) {};
}
