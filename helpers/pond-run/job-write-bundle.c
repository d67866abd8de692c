/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-write-bundle.c: step 4 of the design: the OCI bundle's config.json (json-c) for the job's profile,
 * with the staged workspace, the image, the job's home (job-home.c, made here: its files need the
 * broker's address), the job's network namespace and what the job is told about its network, and the
 * provider's own additions. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/dirs.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"
#include "net/net.h"
#include "oci/oci.h"

/* pond-init's Landlock rules: writes where the job's config mounts read-write (so the two cannot drift),
 * TCP to its sidecars' ports (docs/threat-model.md). */
static int landlock_argv(const Job *j, json_object *config, char ***ret) {
        _cleanup_strv_free_ char **writable = NULL;
        uint16_t ports[2];
        LandlockPaths lp = {
                .workspace = j->staging.stage.workspace != NULL,
                .home = j->home.path != NULL,
                .ports = ports,
        };
        int r;

        r = oci_config_writable(config, &writable);
        if (r < 0)
                return r;
        lp.writable = writable;
        if (j->sidecars[POND_SIDECAR_BROKER].config)
                ports[lp.n_ports++] = NET_BROKER_PORT;
        if (j->sidecars[POND_SIDECAR_EGRESS].config)
                ports[lp.n_ports++] = NET_PROXY_PORT;
        return landlock_init_argv(&j->input.landlock, &j->input.resolved->landlock, &lp, ret);
}

/* pond-init's whole command line in front of the payload's: its channel (job-init.c) and the Landlock
 * ruleset, each where the job has it, then "--". Last, on the complete config: the rules follow its mounts. */
static int init_args(const Job *j, json_object *config) {
        _cleanup_strv_free_ char **l = NULL, **ll = NULL;
        char fd[16];
        int r;

        r = strv_push(&l, strdup(LANDLOCK_INIT_PATH));
        if (r >= 0 && job_init_wanted(j)) {
                snprintf(fd, sizeof fd, "%d", job_init_channel_fd(j));
                r = strv_push(&l, strdup("--channel"));
                if (r >= 0)
                        r = strv_push(&l, strdup(fd));
        }
        if (r >= 0 && j->input.landlock.abi > 0) {
                r = landlock_argv(j, config, &ll);
                for (size_t i = 1; r >= 0 && ll[i]; i++) /* its own argv[0] is pond-init's */
                        r = strv_push(&l, strdup(ll[i]));
        } else if (r >= 0)
                r = strv_push(&l, strdup("--"));
        if (r < 0)
                return r;
        return oci_config_set_init(config, l);
}

static bool init_in_front(const Job *j) {
        return j->input.landlock.abi > 0 || job_init_wanted(j);
}

static int build_config(const Job *j, json_object **ret) {
        _cleanup_free_ char *cgpath = NULL, *init = NULL;
        const JobInput *in = &j->input;
        const JobStaging *s = &j->staging;
        OciPaths paths = {
                .rootfs = s->image.rootfs,
                .host_usr = s->image.host_usr,
                .etc = s->image.etc,
                .workspace = s->stage.workspace,
                .workspace_readonly = s->stage.readonly,
                .home = j->home.path,
                .hostname = IMAGE_HOSTNAME,
                .netns = j->network.up ? j->network.net.netns_path : NULL,
                .posture_env = j->network.env,
                .image_env = s->image.env,
                .image_workdir = s->image.workdir,
                .userns = j->userns.on ? j->userns.pin : NULL,
                .userns_base = j->userns.range.base,
                .userns_size = UID_RANGE_SIZE,
        };
        int r;

        /* Absolute, below the scope. A relative path would nest below the runtime's cgroup in each
         * hierarchy, but on a hybrid (v1) host systemd realizes the scope only in some of them: in the
         * others (the unified one included) the payload would land outside the scope, which systemd would
         * then see as empty and stop. */
        if (asprintf(&cgpath, "%s/payload", j->paths.scope_cgroup) < 0)
                return -ENOMEM;
        paths.cgroups_path = cgpath;
        /* pond-init first: for the exec channel (every confined job its backend can pass one to) and for
         * Landlock; bound here, its command line set on the complete config (init_args()) */
        if (init_in_front(j)) {
                init = path_join(pond_dir(POND_DIR_LIBEXEC), "pond-init");
                if (!init)
                        return -ENOMEM;
                paths.init = init;
        }
        r = oci_config_build(in->resolved, in->spec, in->policy->seccomp, &paths, ret);
        if (r >= 0 && in->provider->adjust_config)
                r = in->provider->adjust_config(in->resolved, *ret);
        return r;
}

int job_write_bundle(Job *j) {
        _cleanup_json_ json_object *config = NULL;
        _cleanup_close_ int dfd = -EBADF;
        const char *s;
        int r;

        /* The features' parts that config.json names (the home, the leased CPUs), then their additions. */
        r = job_features_bundle(j);
        if (r < 0)
                return r;
        r = build_config(j, &config);
        if (r >= 0)
                r = job_features_config(j, config);
        if (r >= 0 && init_in_front(j))
                r = init_args(j, config);
        if (r < 0)
                return log_error_errno(r, "Cannot build the OCI config: %m");
        if (mkdir(j->paths.bundle, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create %s: %m", j->paths.bundle);
        dfd = open(j->paths.bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        s = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        return write_file_atomic_at(dfd, "config.json", s, strlen(s), 0600);
}
