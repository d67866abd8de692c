/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-sidecar.c: the job's sidecar units, pond-egress@ID (the CONNECT proxy, allowlist posture) and
 * pond-broker@ID (the credential broker, jobs with credentials), under one contract:
 *   - the configuration is one JSON object, built once at acceptance and checked there with the sidecar's
 *     own parser (a bad one is a refusal), completed with the listen address on the host side of the
 *     job's veth and checked again, then written to RUNDIR/NAME/ID/config.json (0700, root's), which
 *     systemd hands the unit as its credential config.json;
 *   - the unit starts while the runtime creates the container and the payload waits for it (fail closed);
 *   - while the payload runs, the unit's properties are watched (the broker's cost ceiling);
 *   - at the end the unit is stopped (SIGTERM: it writes its totals to its RuntimeDirectory=), its totals
 *     are read for the result, and its directories are removed. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <string.h>

#include "fileio.h"
#include "job.h"
#include "json-strict.h"
#include "log.h"

#define STATS_MAX (64 * 1024)

typedef struct SidecarType {
        const char *what;               /* names it in messages and in the job's failure reason */
        uint16_t port;                  /* where it listens, on the host side of the job's veth */
        /* The configuration for this job, or *ret = NULL when the job has no such sidecar. */
        int (*build)(const Job *j, json_object **ret, char **ret_error);
        /* The sidecar's own parser. */
        int (*check)(const char *text, size_t len, char **ret_error);
        /* Optional: what the job is told, from the final configuration. */
        int (*environment)(json_object *config, const char *listen, char ***env);
        /* Optional: the unit's PropertiesChanged while the payload runs (userdata: the Job). */
        sd_bus_message_handler_t on_changed;
} SidecarType;

static const SidecarType sidecar_types[_POND_SIDECAR_MAX] = {
        [POND_SIDECAR_EGRESS] = {
                .what = "egress proxy",
                .port = NET_PROXY_PORT,
                .build = job_egress_config,
                .check = job_egress_check,
        },
        [POND_SIDECAR_BROKER] = {
                .what = "credential broker (a credential may not open for this job and worker)",
                .port = NET_BROKER_PORT,
                .build = job_broker_config,
                .check = job_broker_check,
                .environment = job_broker_environment,
                .on_changed = job_broker_on_changed,
        },
};

static const char *config_text(json_object *config) {
        return json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static int check(const SidecarType *t, json_object *config, char **ret_error) {
        const char *text = config_text(config);

        return text ? t->check(text, strlen(text), ret_error) : -ENOMEM;
}

int job_sidecars_configure(Job *j, char **ret_error) {
        int r;

        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                const SidecarType *t = &sidecar_types[s];
                JobSidecar *sc = &j->sidecars[s];

                r = t->build(j, &sc->config, ret_error);
                if (r >= 0 && sc->config)
                        r = check(t, sc->config, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int write_config(const SidecarPaths *p, json_object *config) {
        _cleanup_close_ int dfd = -EBADF;
        const char *text = config_text(config);
        int r;

        if (!text)
                return -ENOMEM;
        r = mkdir_p(p->config_dir, 0700);
        if (r < 0)
                return r;
        dfd = open(p->config_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        /* Read by systemd (LoadCredential=) on the sidecar's behalf, never by the job. */
        return write_file_atomic_at(dfd, "config.json", text, strlen(text), 0600);
}

/* The configuration completed with the job's address, checked again, written; the job's variables. */
static int sidecar_write(Job *j, PondSidecar s, const char *host) {
        const SidecarType *t = &sidecar_types[s];
        JobSidecar *sc = &j->sidecars[s];
        _cleanup_free_ char *err = NULL;
        char listen[INET_ADDRSTRLEN + 8];
        int r;

        snprintf(listen, sizeof listen, "%s:%u", host, t->port);
        if (json_object_object_add(sc->config, "listen", json_object_new_string(listen)) < 0)
                return -ENOMEM;
        r = check(t, sc->config, &err);
        if (r < 0)
                return log_error_errno(r, "The %s's configuration is refused: %s", t->what, err ?: "?");
        if (t->environment) {
                r = t->environment(sc->config, listen, &j->network.env);
                if (r < 0)
                        return r;
        }
        r = write_config(&j->paths.sidecars[s], sc->config);
        if (r < 0)
                return log_error_errno(r, "Cannot write the %s's configuration: %m", t->what);
        sc->up = true; /* from here on, stopping it is part of every exit path */
        return 0;
}

int job_sidecars_write(Job *j) {
        char host[INET_ADDRSTRLEN];
        int r;

        inet_ntop(AF_INET, &j->network.net.lease.host_addr, host, sizeof host);
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                if (!j->sidecars[s].config)
                        continue;
                r = sidecar_write(j, s, host);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Without waiting: the units come up while the runtime creates the container. */
int job_sidecars_start(Job *j) {
        int r;

        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                const char *unit = j->paths.sidecars[s].unit;

                if (!j->sidecars[s].up)
                        continue;
                r = unit_start_begin(j->bus, unit, &j->sidecars[s].starting);
                if (r < 0)
                        return log_error_errno(r, "Cannot start %s: %m", unit);
        }
        return 0;
}

static int watch(Job *j, PondSidecar s) {
        _cleanup_free_ char *object = NULL;
        int r;

        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", j->paths.sidecars[s].unit, &object);
        if (r < 0)
                return r;
        return sd_bus_match_signal(j->bus, &j->sidecars[s].watch, "org.freedesktop.systemd1", object,
                                   "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                   sidecar_types[s].on_changed, j);
}

/* Before the payload may run: every sidecar is up (READY=1), or the job does not run; and watched, before
 * the payload can make it report anything. */
int job_sidecars_wait(Job *j) {
        int r;

        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                const char *what = sidecar_types[s].what;

                if (!j->sidecars[s].starting)
                        continue;
                r = unit_start_finish(j->bus, TAKE_PTR(j->sidecars[s].starting));
                if (r < 0) {
                        log_error_errno(r, "The %s of %s did not start: %m", what, j->paths.id);
                        return job_fail(j, r, "the %s did not start (see the journal of its unit)", what);
                }
        }
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                if (!j->sidecars[s].up || !sidecar_types[s].on_changed)
                        continue;
                r = watch(j, s);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch %s: %m", j->paths.sidecars[s].unit);
        }
        return 0;
}

static void read_stats(const SidecarPaths *p, json_object **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;

        if (!*ret && read_full_file(p->stats, STATS_MAX, &buf, &len) >= 0)
                (void) json_parse_strict(buf, len, STATS_MAX, 4, ret, NULL);
}

/* Stops the unit (its totals are written on SIGTERM), reads the totals if found, removes its
 * configuration and preserved runtime directory. Idempotent. */
static int sidecar_stop(Job *j, PondSidecar s) {
        const SidecarPaths *p = &j->paths.sidecars[s];
        JobSidecar *sc = &j->sidecars[s];
        int r;

        sc->watch = sd_bus_slot_unref(sc->watch);
        r = j->bus ? unit_stop(j->bus, p->unit) : -ENOTCONN;
        read_stats(p, &sc->stats);
        (void) rm_rf_at(AT_FDCWD, p->runtime_dir);
        (void) rm_rf_at(AT_FDCWD, p->config_dir);
        if (r >= 0)
                sc->up = false;
        return r;
}

int job_sidecars_stop(Job *j) {
        int r, ret = 0;

        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                if (!j->sidecars[s].up)
                        continue;
                r = sidecar_stop(j, s);
                if (r < 0) {
                        log_warning_errno(r, "Could not stop %s: %m", j->paths.sidecars[s].unit);
                        ret = ret ?: r;
                }
        }
        return ret;
}

void job_sidecar_done(JobSidecar *sc) {
        json_object_put(sc->config);
        unit_start_free(sc->starting);
        sd_bus_slot_unref(sc->watch);
        json_object_put(sc->stats);
        *sc = (JobSidecar) {};
}
