/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* scope.c: StartTransientUnit/KillUnit/StopUnit over sd-bus for the payload's scope, and its cgroup. */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "scope/scope.h"

/* How long a unit's start (a scope, a sidecar) may take before the job fails: a guard against a hang, not a
 * performance bound. 16 runsc jobs at once on 2 CPUs (load 11) took systemd over 30 s to start a sidecar's
 * unit. During the job's setup each wait first extends its unit's start timeout past its own bound
 * (unit_waits_extend_start_timeout()): the wait's bound decides, never the unit's 90 s. */
#define SCOPE_WAIT_USEC (60ULL * 1000 * 1000)
/* What an extension adds beyond the wait's own bound: the work after it, up to the next wait or READY=1. */
#define EXTEND_MARGIN_USEC (UINT64_C(30) * 1000 * 1000)

#define SD_DESTINATION "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"

typedef struct JobWait {
        char *job_path;
        bool done;
        char *result;
        unit_start_handler_t handler;   /* unit_start_on_done(): called once when done */
        void *userdata;
} JobWait;

struct UnitStart {
        sd_bus_slot *slot;
        JobWait wait;
        char *unit;
};

static bool extend_start_timeout = false;

void unit_waits_extend_start_timeout(bool on) {
        extend_start_timeout = on;
}

/* Before a wait on systemd of at most usec: the unit's start timeout is pushed past it (a no-op outside a
 * unit, or once the setup is over). */
static void extend_for(uint64_t usec) {
        if (extend_start_timeout)
                (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64, usec + EXTEND_MARGIN_USEC);
}

/* A method call's bound: the bus's (sd-bus's default, 25 s). */
static void extend_for_call(sd_bus *bus) {
        uint64_t usec = 0;

        if (extend_start_timeout && sd_bus_get_method_call_timeout(bus, &usec) >= 0)
                extend_for(usec);
}

/* The ended job's result as the start's: 0 if it is "done", else -EIO. */
static int job_wait_result(const JobWait *w) {
        return w->result && streq(w->result, "done") ? 0 : -EIO;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        JobWait *w = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (w->job_path && streq(path, w->job_path)) {
                w->done = true;
                w->result = strdup(result);
                if (w->handler)
                        w->handler(job_wait_result(w), w->userdata);
                w->handler = NULL;
        }
        return 0;
}

static int wait_for_job(sd_bus *bus, JobWait *w) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + SCOPE_WAIT_USEC;

        if (!w->done)
                extend_for(SCOPE_WAIT_USEC);
        while (!w->done) {
                int r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                if (clock_usec(CLOCK_MONOTONIC) >= deadline)
                        return -ETIMEDOUT;
                r = sd_bus_wait(bus, deadline - clock_usec(CLOCK_MONOTONIC));
                if (r < 0)
                        return r;
        }
        return job_wait_result(w);
}

/* StartTransientUnit(unit, "fail", ...) up to its properties, which the caller appends before
 * transient_call_end(). */
static int transient_call_new(sd_bus *bus, const char *unit, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SD_DESTINATION, SD_PATH, SD_MANAGER, "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", unit, "fail");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return log_debug_errno(r, "Cannot build StartTransientUnit call: %m");
        *ret = TAKE_PTR(m);
        return 0;
}

/* The properties every transient unit of pond's has, and the end of the call (no auxiliary units). If
 * the job's service goes away, so does the unit, whatever state the supervisor is in. No After=: the
 * service is still starting (not yet READY) and would wait for this unit forever. */
static int transient_call_end(sd_bus_message *m, const char *bound_to, const char *description) {
        int r;

        r = sd_bus_message_append(m, "(sv)(sv)", "CollectMode", "s", "inactive-or-failed",
                                  "Description", "s", description);
        if (r >= 0 && bound_to)
                r = sd_bus_message_append(m, "(sv)", "BindsTo", "as", 1, bound_to);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return log_debug_errno(r, "Cannot build StartTransientUnit call: %m");
        return 0;
}

UnitStart *unit_start_free(UnitStart *s) {
        if (!s)
                return NULL;
        sd_bus_slot_unref(s->slot);
        free(s->wait.job_path);
        free(s->wait.result);
        free(s->unit);
        free(s);
        return NULL;
}

/* Sends m (a Manager method returning a job path) and returns a handle on the queued job. */
static int call_begin(sd_bus *bus, sd_bus_message *m, const char *unit, UnitStart **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(unit_start_freep) UnitStart *s = calloc(1, sizeof *s);
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *job;
        int r;

        if (!s || !(s->unit = strdup(unit)))
                return -ENOMEM;
        r = sd_bus_match_signal(bus, &s->slot, SD_DESTINATION, SD_PATH, SD_MANAGER, "JobRemoved",
                                on_job_removed, &s->wait);
        if (r < 0)
                return log_debug_errno(r, "Cannot watch systemd jobs: %m");
        /* systemd sends JobRemoved only to subscribed clients (a second Subscribe on the same connection
         * is refused as such, and is fine). */
        extend_for_call(bus);
        r = sd_bus_call_method(bus, SD_DESTINATION, SD_PATH, SD_MANAGER, "Subscribe", &error, NULL,
                               NULL);
        if (r < 0 && sd_bus_error_has_name(&error, "org.freedesktop.systemd1.AlreadySubscribed"))
                r = 0;
        sd_bus_error_free(&error);
        if (r < 0)
                return log_debug_errno(r, "Cannot subscribe to systemd's signals: %m");
        extend_for_call(bus);
        r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r < 0)
                return log_debug_errno(r, "Starting %s failed: %s", unit, error.message ?: "?");
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0)
                return r;
        if (!(s->wait.job_path = strdup(job)))
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

int unit_start_finish(sd_bus *bus, UnitStart *s) {
        int r = wait_for_job(bus, &s->wait);
        if (r < 0)
                log_debug_errno(r, "%s did not start (%s): %m", s->unit, s->wait.result ?: "no result");
        unit_start_free(s);
        return r;
}

void unit_start_on_done(UnitStart *s, unit_start_handler_t handler, void *userdata) {
        if (s->wait.done) {
                handler(job_wait_result(&s->wait), userdata);
                return;
        }
        s->wait.handler = handler;
        s->wait.userdata = userdata;
}

static int call_and_wait_job(sd_bus *bus, sd_bus_message *m, const char *unit) {
        UnitStart *s = NULL;
        int r = call_begin(bus, m, unit, &s);
        return r < 0 ? r : unit_start_finish(bus, s);
}

int scope_start(sd_bus *bus, const char *unit, pid_t pid, const ScopeLimits *l, const char *bound_to,
                const char *description) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = transient_call_new(bus, unit, &m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)",
                                  "PIDs", "au", 1, (uint32_t) pid,
                                  "Slice", "s", POND_SLICE,
                                  "Delegate", "b", 1,
                                  "MemoryMax", "t", l->memory_bytes,
                                  "CPUQuotaPerSecUSec", "t", l->cpus_milli * 1000,
                                  "TasksMax", "t", l->pids_limit);
        if (r < 0)
                return log_debug_errno(r, "Cannot build StartTransientUnit call: %m");
        r = transient_call_end(m, bound_to, description);
        if (r < 0)
                return r;
        return call_and_wait_job(bus, m, unit);
}

int socket_unit_start_begin(sd_bus *bus, const char *unit, const char *listen, const char *bound_to,
                            const char *description, UnitStart **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = transient_call_new(bus, unit, &m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)(sv)", "Listen", "a(ss)", 1, "Stream", listen, "FreeBind", "b", 1);
        if (r < 0)
                return log_debug_errno(r, "Cannot build StartTransientUnit call: %m");
        r = transient_call_end(m, bound_to, description);
        if (r < 0)
                return r;
        return call_begin(bus, m, unit, ret);
}

static int unit_job_begin(sd_bus *bus, const char *method, const char *unit, UnitStart **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SD_DESTINATION, SD_PATH, SD_MANAGER, method);
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", unit, "replace");
        if (r < 0)
                return r;
        return call_begin(bus, m, unit, ret);
}

int unit_start_begin(sd_bus *bus, const char *unit, UnitStart **ret) {
        return unit_job_begin(bus, "StartUnit", unit, ret);
}

int unit_restart_begin(sd_bus *bus, const char *unit, UnitStart **ret) {
        return unit_job_begin(bus, "RestartUnit", unit, ret);
}

static int manager_call(sd_bus *bus, const char *method, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SD_DESTINATION, SD_PATH, SD_MANAGER, method);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        if (r < 0)
                return r;
        extend_for_call(bus);
        r = sd_bus_call(bus, m, 0, &error, NULL);
        if (r < 0 && sd_bus_error_has_names(&error, "org.freedesktop.systemd1.NoSuchUnit",
                                            "org.freedesktop.systemd1.NoSuchProcess"))
                r = -ENOENT;
        else if (r < 0)
                log_debug_errno(r, "%s failed: %s", method, error.message ?: "?");
        return r;
}

int scope_stop(sd_bus *bus, const char *unit) {
        /* Killing first makes the stop immediate instead of waiting for SIGTERM to be honoured. */
        (void) scope_kill(bus, unit);
        return unit_stop(bus, unit);
}

int scope_kill(sd_bus *bus, const char *unit) {
        return manager_call(bus, "KillUnit", "ssi", unit, "all", (int32_t) SIGKILL);
}

int scope_attach(sd_bus *bus, const char *unit, pid_t pid) {
        if (pid <= 0)
                return -EINVAL;
        return manager_call(bus, "AttachProcessesToUnit", "ssau", unit, "", 1, (uint32_t) pid);
}

/* The unit's object path on the bus, or NULL (out of memory). */
static char *unit_object(const char *unit) {
        char *object = NULL;

        return sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &object) < 0 ? NULL : object;
}

static int unit_get_string(sd_bus *bus, const char *unit, const char *iface, const char *property,
                           char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *object = unit_object(unit);

        if (!object)
                return -ENOMEM;
        extend_for_call(bus);
        return sd_bus_get_property_string(bus, SD_DESTINATION, object, iface, property, &error, ret);
}

int unit_main_pid(sd_bus *bus, const char *unit, uint32_t *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *object = unit_object(unit);
        int r;

        if (!object)
                return -ENOMEM;
        r = sd_bus_get_property_trivial(bus, SD_DESTINATION, object, "org.freedesktop.systemd1.Service", "MainPID",
                                        &error, 'u', ret);
        if (r < 0)
                log_debug_errno(r, "Cannot read the MainPID of %s: %s", unit, error.message ?: "?");
        return r;
}

int unit_cgroup_path(sd_bus *bus, const char *unit, char **ret) {
        return unit_get_string(bus, unit, "org.freedesktop.systemd1.Scope", "ControlGroup", ret);
}

static int unit_is_gone(sd_bus *bus, const char *unit) {
        _cleanup_free_ char *state = NULL;
        int r;

        r = unit_get_string(bus, unit, "org.freedesktop.systemd1.Unit", "ActiveState", &state);
        if (r < 0)
                return r;
        return streq(state, "inactive") || streq(state, "failed");
}

/* The unit's queued or running job is a stop: its ActiveState says deactivating, or a stop job waits. */
int unit_active_state(sd_bus *bus, const char *unit, char **ret) {
        return unit_get_string(bus, unit, "org.freedesktop.systemd1.Unit", "ActiveState", ret);
}

int unit_is_stopping(sd_bus *bus, const char *unit) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *state = NULL, *object = NULL, *type = NULL;
        const char *job_path;
        uint32_t job_id;
        int r;

        r = unit_get_string(bus, unit, "org.freedesktop.systemd1.Unit", "ActiveState", &state);
        if (r < 0)
                return r;
        if (streq(state, "deactivating"))
                return 1;
        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &object);
        if (r >= 0)
                r = sd_bus_get_property(bus, SD_DESTINATION, object, "org.freedesktop.systemd1.Unit", "Job",
                                        &error, &reply, "(uo)");
        if (r >= 0)
                r = sd_bus_message_read(reply, "(uo)", &job_id, &job_path);
        if (r < 0)
                return r;
        if (job_id == 0)
                return 0;
        r = sd_bus_get_property_string(bus, SD_DESTINATION, job_path, "org.freedesktop.systemd1.Job", "JobType",
                                       &error, &type);
        if (r < 0)
                return r == -ENOENT || sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_OBJECT) ? 0 : r;
        return streq(type, "stop");
}

int unit_is_idle(sd_bus *bus, const char *unit) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *state = NULL, *object = unit_object(unit);
        const char *job_path;
        uint32_t job_id;
        int r;

        if (!object)
                return -ENOMEM;
        r = unit_get_string(bus, unit, "org.freedesktop.systemd1.Unit", "ActiveState", &state);
        if (r < 0)
                return r;
        if (!streq(state, "inactive") && !streq(state, "failed"))
                return 0;
        r = sd_bus_get_property(bus, SD_DESTINATION, object, "org.freedesktop.systemd1.Unit", "Job", &error, &reply,
                                "(uo)");
        if (r >= 0)
                r = sd_bus_message_read(reply, "(uo)", &job_id, &job_path);
        if (r < 0)
                return r;
        return job_id == 0;
}

int unit_stop_begin(sd_bus *bus, const char *unit) {
        int r = manager_call(bus, "StopUnit", "ss", unit, "replace");

        return r == -ENOENT ? 0 : r;
}

int unit_stop(sd_bus *bus, const char *unit) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + SCOPE_WAIT_USEC, pause = 1000;
        int r;

        r = manager_call(bus, "StopUnit", "ss", unit, "replace");
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        /* Most units are gone within a few ms: asked after 1, 2, 4, 8 ms, then every 10 ms. */
        while ((r = unit_is_gone(bus, unit)) == 0) {
                if (clock_usec(CLOCK_MONOTONIC) >= deadline)
                        return -ETIMEDOUT;
                usleep(pause);
                pause = MIN(pause * 2, 10ULL * 1000);
        }
        /* r < 0: the unit was unloaded (garbage-collected): gone too. */
        return 0;
}
