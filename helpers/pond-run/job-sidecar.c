/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-sidecar.c: the job's sidecar units, pond-egress@ID (the CONNECT proxy, allowlist posture) and
 * pond-broker@ID (the credential broker, jobs with credentials), under one contract:
 *   - the configuration is one JSON object, built once at acceptance and checked there with the sidecar's
 *     own parser (a bad one is a refusal), completed with the listen address on the host side of the
 *     job's veth and checked again, then written to RUNDIR/NAME/ID/config.json (0700, root's), which
 *     systemd hands the unit as its credential config.json;
 *   - the unit starts while the runtime creates the container and the payload waits for it (fail closed);
 *     except for a sidecar whose listening socket systemd makes (the egress proxy: pond-egress@ID.socket,
 *     transient, bound to the job): the payload waits for the socket only, its first connections wait in
 *     the socket's queue until the proxy is up, and a proxy that does not come up fails the job and kills
 *     the payload (it had no way out meanwhile: nftables lets it reach the socket only); once the proxy is
 *     up its socket unit is stopped (the proxy keeps the socket), so that nothing starts a proxy again;
 *   - while the payload runs, the unit's properties are watched (the broker's cost ceiling);
 *   - at the end the unit is stopped (SIGTERM: it writes its totals to its RuntimeDirectory=), its totals
 *     are read for the result, and its directories are removed. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "job.h"
#include "sidecar/broker-config.h"

#define STATS_MAX (64 * 1024)

typedef struct SidecarType {
        const char *name;               /* its key in the result */
        const char *what;               /* names it in messages and in the job's failure reason */
        uint16_t port;                  /* where it listens, on the host side of the job's veth */
        bool socket_unit;               /* systemd makes its socket (SidecarPaths.socket) before the payload
                                         * runs, and hands it to the unit (LISTEN_FDS) */
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
                .name = "egress",
                .what = "egress proxy",
                .port = NET_PROXY_PORT,
                .socket_unit = true,
                .build = job_egress_config,
                .check = job_egress_check,
        },
        [POND_SIDECAR_BROKER] = {
                .name = "broker",
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

/* The main process's exit as systemd reports it (org.freedesktop.systemd1.Service), and its status text: a
 * sidecar that does not start says why there (pond-egress: "no resolver configured: ..."), and systemd
 * sends the failed unit's properties before the end of its start job. */
static int on_exit_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        JobSidecar *sc = userdata;
        const char *interface, *name, *text = NULL;
        int32_t code = 0, status = 0;
        int r;

        if (sd_bus_message_read(m, "s", &interface) < 0 || !streq(interface, "org.freedesktop.systemd1.Service"))
                return 0;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &name);
                if (r >= 0)
                        r = streq(name, "ExecMainCode") ? sd_bus_message_read(m, "v", "i", &code) :
                            streq(name, "ExecMainStatus") ? sd_bus_message_read(m, "v", "i", &status) :
                            streq(name, "StatusText") ? sd_bus_message_read(m, "v", "s", &text) :
                            sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r >= 0 && code > 0) {
                sc->exit_code = code;
                sc->exit_status = status;
        }
        /* At most a line of it: the text goes into the job's result. */
        if (r >= 0 && text && text[0]) {
                free(sc->status_text);
                sc->status_text = strndup(text, MIN(strcspn(text, "\n"), (size_t) 512));
        }
        return 0;
}

/* "the egress proxy did not start: its own reason (see the journal of UNIT)", into the job's result. */
static int fail_not_started(Job *j, PondSidecar s, int r) {
        const char *why = j->sidecars[s].status_text;

        return job_fail(j, r, "the %s did not start%s%s (see the journal of %s)", sidecar_types[s].what,
                        why ? ": " : "", why ?: "", j->paths.sidecars[s].unit);
}

static int watch_exit(Job *j, PondSidecar s) {
        _cleanup_free_ char *object = NULL;
        int r;

        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", j->paths.sidecars[s].unit, &object);
        if (r < 0)
                return r;
        return sd_bus_match_signal(j->bus, &j->sidecars[s].watch_exit, "org.freedesktop.systemd1", object,
                                   "org.freedesktop.DBus.Properties", "PropertiesChanged", on_exit_changed,
                                   &j->sidecars[s]);
}

/* The socket unit of a sidecar that has one, listening where its configuration says (sidecar_write()). */
static int socket_start(Job *j, PondSidecar s) {
        const SidecarPaths *p = &j->paths.sidecars[s];
        const char *listen = json_object_get_string(json_get(j->sidecars[s].config, "listen"));
        _cleanup_free_ char *desc = NULL;
        int r;

        if (!listen)
                return -EINVAL;
        if (asprintf(&desc, "pond %s socket for job %s", sidecar_types[s].what, j->paths.id) < 0)
                return -ENOMEM;
        r = socket_unit_start_begin(j->bus, p->socket, listen, job_bound_service(j), desc,
                                    &j->sidecars[s].socket_starting);
        if (r < 0)
                return log_error_errno(r, "Cannot start %s: %m", p->socket);
        return 0;
}

/* Without waiting: the units come up while the runtime creates the container (a socket unit before its
 * service, which systemd orders after it and hands the socket to). */
int job_sidecars_start(Job *j) {
        int r;

        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                const char *unit = j->paths.sidecars[s].unit;

                if (!j->sidecars[s].up)
                        continue;
                if (sidecar_types[s].socket_unit) {
                        r = socket_start(j, s);
                        if (r < 0)
                                return r;
                }
                r = watch_exit(j, s);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch %s: %m", unit);
                r = unit_start_begin(j->bus, unit, &j->sidecars[s].starting);
                if (r < 0)
                        return log_error_errno(r, "Cannot start %s: %m", unit);
        }
        return 0;
}

const char *job_sidecar_name(PondSidecar s) {
        return s >= 0 && s < _POND_SIDECAR_MAX ? sidecar_types[s].name : NULL;
}

PondSidecar job_sidecar_died(const Job *j) {
        PondSidecar first = _POND_SIDECAR_INVALID;

        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++)
                if (j->sidecars[s].died_usec != 0 &&
                    (first < 0 || j->sidecars[s].died_usec < j->sidecars[first].died_usec))
                        first = s;
        return first;
}

/* The ActiveState in a PropertiesChanged of org.freedesktop.systemd1.Unit, or NULL. */
static const char *changed_active_state(sd_bus_message *m) {
        const char *interface, *name, *state = NULL;
        int r;

        if (sd_bus_message_read(m, "s", &interface) < 0 || !streq(interface, "org.freedesktop.systemd1.Unit"))
                return NULL;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &name);
                if (r >= 0)
                        r = streq(name, "ActiveState") ? sd_bus_message_read(m, "v", "s", &state)
                                                       : sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        return r < 0 ? NULL : state;
}

/* Whether the broker's main process exited with status (BROKER_EXIT_*). */
static bool broker_exited_with(Job *j, PondSidecar s, int status) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *object = NULL;
        int32_t code = 0, st = 0;

        if (s != POND_SIDECAR_BROKER)
                return false;
        if (j->sidecars[s].exit_code > 0)
                return j->sidecars[s].exit_code == CLD_EXITED && j->sidecars[s].exit_status == status;
        if (sd_bus_path_encode("/org/freedesktop/systemd1/unit", j->paths.sidecars[s].unit, &object) < 0 ||
            sd_bus_get_property_trivial(j->bus, "org.freedesktop.systemd1", object,
                                        "org.freedesktop.systemd1.Service", "ExecMainCode", &error, 'i', &code) < 0 ||
            sd_bus_get_property_trivial(j->bus, "org.freedesktop.systemd1", object,
                                        "org.freedesktop.systemd1.Service", "ExecMainStatus", &error, 'i', &st) < 0)
                return false;
        return code == CLD_EXITED && st == status;
}

/* The broker exits with BROKER_EXIT_CEILING when the job's budget is spent: that is the cost ceiling
 * (job-broker.c), not a death, whichever of the two signals comes first. */
static bool exited_at_ceiling(Job *j, PondSidecar s) {
        return broker_exited_with(j, s, BROKER_EXIT_CEILING);
}

/* Not a sidecar's death or failed start: the job is over or being stopped (BindsTo= stops the sidecars too,
 * the teardown a unit still starting). */
static bool job_winding_down(Job *j) {
        return j->outcome.ended_usec != 0 || j->outcome.cancelled || job_stop_requested(j);
}

/* What the result says of a sidecar that died (job-sign.c): when, and its unit's state then (taken; a state
 * that could not be read is "failed"). */
static void record_death(JobSidecar *sc, char *state) {
        sc->died_usec = clock_usec(CLOCK_REALTIME);
        sc->died_state = state ?: strdup("failed");
}

/* A sidecar's unit left "active" while the payload runs, and nobody asked for it: the result says which
 * and when, and (the default policy) the job fails: an agent whose proxy or broker is gone cannot do what
 * it was asked, and the network stays denied (nftables lets it reach only their ports). */
static int on_state_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        JobSidecar *sc = userdata;
        Job *j = sc->job;
        PondSidecar s = (PondSidecar) (sc - j->sidecars);
        const char *state = changed_active_state(m);

        /* Still starting: its start's end says whether it came up (on_started()). */
        if (!state || streq(state, "active") || streq(state, "reloading") || sc->died_usec != 0 || sc->start_pending)
                return 0;
        if (job_winding_down(j))
                return 0;
        if (exited_at_ceiling(j, s)) {
                job_cost_ceiling(j);
                return 0;
        }
        record_death(sc, strdup(state));
        audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "the %s died while the job ran (%s is %s): "
                    "killing %s", sidecar_types[s].name, j->paths.sidecars[s].unit, state, j->paths.scope);
        if (!j->input.resolved || j->input.resolved->on_sidecar_death == SIDECAR_DEATH_FAIL) {
                job_end(j, JOB_END_FAILED, 0, "the %s (%s) died while the job ran", sidecar_types[s].name,
                        j->paths.sidecars[s].unit);
                job_kill_payload(j);
        }
        return 0;
}

static int watch(Job *j, PondSidecar s) {
        _cleanup_free_ char *object = NULL;
        JobSidecar *sc = &j->sidecars[s];
        int r;

        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", j->paths.sidecars[s].unit, &object);
        if (r < 0)
                return r;
        sc->job = j;
        r = sd_bus_match_signal(j->bus, &sc->watch_state, "org.freedesktop.systemd1", object,
                                "org.freedesktop.DBus.Properties", "PropertiesChanged", on_state_changed, sc);
        if (r < 0 || !sidecar_types[s].on_changed)
                return r;
        return sd_bus_match_signal(j->bus, &sc->watch, "org.freedesktop.systemd1", object,
                                   "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                   sidecar_types[s].on_changed, j);
}

/* A unit that died between its READY and the match above sent its signal already: ask once. */
static int check_alive(Job *j, PondSidecar s) {
        _cleanup_free_ char *state = NULL;
        int r;

        r = unit_active_state(j->bus, j->paths.sidecars[s].unit, &state);
        if (r < 0)
                return r;
        if (streq(state, "active"))
                return 0;
        record_death(&j->sidecars[s], TAKE_PTR(state));
        return job_fail(j, -ESRCH, "the %s (%s) died before the payload ran (%s)", sidecar_types[s].name,
                        j->paths.sidecars[s].unit, j->sidecars[s].died_state);
}

bool job_sidecars_starting(const Job *j) {
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++)
                if (j->sidecars[s].start_pending)
                        return true;
        return false;
}

/* The end of the start of a sidecar the payload did not wait for. */
static void on_started(int r, void *userdata) {
        JobSidecar *sc = userdata;
        Job *j = sc->job;
        PondSidecar s = (PondSidecar) (sc - j->sidecars);

        sc->start_pending = false;
        /* The last sidecar up (or not) after the payload started: the job's setup is over. */
        if (j->outcome.started_usec != 0 && !job_sidecars_starting(j))
                job_setup_gate_release(j);
        if (job_winding_down(j))
                return;
        if (r >= 0) {
                /* The proxy holds the socket now; without its unit nothing can start the proxy again (a
                 * proxy that dies leaves the job's network denied, whatever on_sidecar_death says). */
                (void) unit_stop_begin(j->bus, j->paths.sidecars[s].socket);
                r = check_alive(j, s); /* one that died right after its READY: as one that did not start */
                if (r >= 0)
                        return;
        } else {
                /* The result names it as a sidecar that died: the payload may be running, and is killed. */
                _cleanup_free_ char *state = NULL;

                (void) unit_active_state(j->bus, j->paths.sidecars[s].unit, &state);
                record_death(sc, TAKE_PTR(state));
                fail_not_started(j, s, r);
        }
        log_error_errno(r, "The %s of %s did not start: %m", sidecar_types[s].what, j->paths.id);
        sc->start_failed = true;
        (void) job_end(j, JOB_END_FAILED, 0, NULL);
        if (j->outcome.started_usec != 0) {
                audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "the %s did not start (%s): killing %s",
                            sidecar_types[s].name, j->paths.sidecars[s].unit, j->paths.scope);
                job_kill_payload(j);
        }
}

/* A sidecar with a socket unit: its socket is there (or the job does not run); its own start ends while
 * the payload runs (on_started()). */
static int wait_socket(Job *j, PondSidecar s) {
        JobSidecar *sc = &j->sidecars[s];
        int r;

        r = unit_start_finish(j->bus, TAKE_PTR(sc->socket_starting));
        if (r < 0) {
                log_error_errno(r, "%s did not start: %m", j->paths.sidecars[s].socket);
                return job_fail(j, r, "the %s's socket (%s) could not be made (see the journal)",
                                sidecar_types[s].what, j->paths.sidecars[s].socket);
        }
        sc->job = j;
        sc->start_pending = true;
        unit_start_on_done(sc->starting, on_started, sc);
        return 0;
}

/* Before the payload may run: every sidecar is up (READY=1), or has its socket (wait_socket()), or the job
 * does not run; and watched, before the payload can make it report anything. */
int job_sidecars_wait(Job *j) {
        int r;

        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                const char *what = sidecar_types[s].what;

                if (j->sidecars[s].socket_starting) {
                        r = wait_socket(j, s);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!j->sidecars[s].starting)
                        continue;
                r = unit_start_finish(j->bus, TAKE_PTR(j->sidecars[s].starting));
                /* A credential that does not open for this job and worker: a refusal, nothing ran. */
                if (r < 0 && broker_exited_with(j, s, BROKER_EXIT_CREDENTIAL)) {
                        return job_end(j, JOB_END_REFUSED, r, "refused: a credential does not open for this job "
                                       "and worker (sealed for another, or altered; see the journal of %s)",
                                       j->paths.sidecars[s].unit);
                }
                if (r < 0) {
                        log_error_errno(r, "The %s of %s did not start: %m", what, j->paths.id);
                        return fail_not_started(j, s, r);
                }
        }
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++) {
                if (!j->sidecars[s].up)
                        continue;
                r = watch(j, s);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch %s: %m", j->paths.sidecars[s].unit);
                r = j->sidecars[s].start_pending ? 0 : check_alive(j, s);
                if (r < 0)
                        return log_error_errno(r, "%s is not running: %m", j->paths.sidecars[s].unit);
                /* Its start ended badly meanwhile (on_started(), from the calls above): nothing ran yet. */
                if (j->sidecars[s].start_failed)
                        return -EIO;
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
        sc->watch_state = sd_bus_slot_unref(sc->watch_state);
        sc->watch_exit = sd_bus_slot_unref(sc->watch_exit);
        sc->starting = unit_start_free(sc->starting);
        sc->socket_starting = unit_start_free(sc->socket_starting);
        sc->start_pending = false;
        /* The socket first: a connection to it would start the unit again. Both, whatever the first did. */
        r = !j->bus ? -ENOTCONN : sidecar_types[s].socket_unit ? unit_stop(j->bus, p->socket) : 0;
        if (j->bus) {
                int k = unit_stop(j->bus, p->unit);
                r = r < 0 ? r : k;
        }
        read_stats(p, &sc->stats);
        (void) rm_rf_at(AT_FDCWD, p->runtime_dir);
        (void) rm_rf_at(AT_FDCWD, p->config_dir);
        if (r >= 0)
                sc->up = false;
        return r;
}

int job_sidecars_stop_begin(Job *j) {
        for (PondSidecar s = 0; s < _POND_SIDECAR_MAX; s++)
                if (j->sidecars[s].up && j->bus) {
                        if (sidecar_types[s].socket_unit)
                                (void) unit_stop_begin(j->bus, j->paths.sidecars[s].socket);
                        (void) unit_stop_begin(j->bus, j->paths.sidecars[s].unit); /* job_sidecars_stop() waits */
                }
        return 0;
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
        unit_start_free(sc->socket_starting);
        sd_bus_slot_unref(sc->watch);
        sd_bus_slot_unref(sc->watch_state);
        sd_bus_slot_unref(sc->watch_exit);
        json_object_put(sc->stats);
        free(sc->died_state);
        free(sc->status_text);
        *sc = (JobSidecar) {};
}
