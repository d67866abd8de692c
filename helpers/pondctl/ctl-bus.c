/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-bus.c: pondctl's side of systemd: starting and stopping pond-job@ID.service, reading its state (over
 * a connection held by the caller, or one made for the call alone), and being told when it changes (-H: so
 * waiting for the end over ssh costs one signal, not a busy poll). */
#include <string.h>
#include <time.h>

#include "basic/jobid.h"
#include "ctl.h"

#define SD_DESTINATION "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"
#define SD_SERVICE "org.freedesktop.systemd1.Service"

#define _cleanup_bus_error_ _cleanup_(sd_bus_error_free)

int ctl_bus_open(sd_bus **ret) {
        sd_bus *bus = NULL;
        int r = sd_bus_open_system(&bus);

        if (r < 0)
                return r;
        *ret = bus;
        return 0;
}

bool ctl_bus_error_transient(int r) {
        /* ENOBUFS: the bus's LimitsExceeded (max_connections_per_user for root, at the connection's Hello). */
        return r == -ENOBUFS || r == -ETIMEDOUT || r == -ECONNRESET || r == -ECONNREFUSED || r == -ENOTCONN ||
               r == -EPIPE || r == -EAGAIN;
}

void ctl_bus_backoff(uint64_t *pause) {
        uint64_t p = *pause ?: 10ULL * 1000;
        struct timespec ts = { .tv_sec = p / (1000 * 1000), .tv_nsec = (long) (p % (1000 * 1000)) * 1000 };

        (void) nanosleep(&ts, NULL);
        *pause = MIN(p * 2, 2ULL * 1000 * 1000);
}

int ctl_unit_call(sd_bus *bus, const char *method, const char *unit, char **ret_error) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, SD_DESTINATION, SD_PATH, SD_MANAGER, method, &error, &reply, "ss", unit,
                               "replace");
        if (r < 0 && ret_error) {
                /* The bus error says more than its errno (e.g. "Access denied", "Unit ... not found"). */
                if (asprintf(ret_error, "%s", error.message ?: strerror(-r)) < 0)
                        *ret_error = NULL;
        }
        return r;
}

int ctl_unit_call_once(const char *method, const char *unit, char **ret_error) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = ctl_bus_open(&bus);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "cannot connect to the system bus: %s", strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        return ctl_unit_call(bus, method, unit, ret_error);
}

static int unit_path(const char *unit, char **ret) {
        return sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, ret);
}

static bool error_is_unknown_unit(const sd_bus_error *e) {
        return sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") ||
               sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownObject") ||
               sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownMethod");
}

static int get_string(sd_bus *bus, const char *path, const char *iface, const char *name, char **ret,
                      bool *ret_unknown) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_get_property_string(bus, SD_DESTINATION, path, iface, name, &error, ret);
        if (r < 0 && ret_unknown)
                *ret_unknown = error_is_unknown_unit(&error);
        return r;
}

static int get_job_pending(sd_bus *bus, const char *path, bool *ret) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *job_path;
        uint32_t id = 0;
        int r;

        r = sd_bus_get_property(bus, SD_DESTINATION, path, SD_UNIT, "Job", &error, &reply, "(uo)");
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "(uo)", &id, &job_path);
        if (r < 0)
                return r;
        *ret = id != 0;
        return 0;
}

int ctl_unit_get_state(sd_bus *bus, const char *unit, bool with_status, CtlUnitState *ret) {
        _cleanup_(ctl_unit_state_done) CtlUnitState s = {};
        _cleanup_free_ char *path = NULL, *load = NULL;
        bool unknown = false;
        int r;

        r = unit_path(unit, &path);
        if (r < 0)
                return r;
        r = get_string(bus, path, SD_UNIT, "LoadState", &load, &unknown);
        if (r < 0 && !unknown)
                return r;
        /* Garbage-collected (CollectMode=inactive-or-failed) or never started: inactive for our purposes. */
        s.loaded = r >= 0 && !streq(load, "not-found") && !streq(load, "stub");
        r = get_string(bus, path, SD_UNIT, "ActiveState", &s.active_state, &unknown);
        if (r < 0 && !unknown)
                return r;
        if (!s.active_state && !(s.active_state = strdup("inactive")))
                return -ENOMEM;
        if (s.loaded) {
                r = get_job_pending(bus, path, &s.job_pending);
                if (r < 0)
                        return r;
        }
        if (with_status && s.loaded) {
                (void) get_string(bus, path, SD_UNIT, "SubState", &s.sub_state, NULL);
                (void) get_string(bus, path, SD_SERVICE, "StatusText", &s.status_text, NULL);
        }
        *ret = s;
        s = (CtlUnitState) {};
        return 0;
}

int ctl_unit_get_state_once(const char *unit, bool with_status, CtlUnitState *ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = ctl_bus_open(&bus);
        if (r < 0)
                return r;
        return ctl_unit_get_state(bus, unit, with_status, ret);
}

void ctl_unit_state_done(CtlUnitState *s) {
        free(s->active_state);
        free(s->sub_state);
        free(s->status_text);
        *s = (CtlUnitState) {};
}

bool ctl_unit_state_is_running(const CtlUnitState *s) {
        const char *a = s->active_state ?: "inactive";

        /* A queued start job on an inactive unit means it has not started yet, not that it has ended. */
        return s->job_pending || streq(a, "active") || streq(a, "activating") || streq(a, "deactivating") ||
               streq(a, "reloading") || streq(a, "refreshing");
}

int ctl_unit_is_known(sd_bus *bus, const char *unit) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        /* GetUnit, unlike reading a property of the unit's object path, does not load it. */
        r = sd_bus_call_method(bus, SD_DESTINATION, SD_PATH, SD_MANAGER, "GetUnit", &error, &reply, "s", unit);
        if (r < 0 && sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit"))
                return 0;
        return r < 0 ? r : 1;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        *(bool *) userdata = true;
        return 0;
}

int ctl_unit_watch(sd_bus *bus, const char *unit, bool *changed, sd_bus_slot **ret_slot) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = unit_path(unit, &path);
        if (r < 0)
                return r;
        r = sd_bus_match_signal(bus, ret_slot, SD_DESTINATION, path, "org.freedesktop.DBus.Properties",
                                "PropertiesChanged", on_properties_changed, changed);
        if (r < 0)
                return r;
        /* systemd only emits unit signals while some client is subscribed. */
        return sd_bus_call_method(bus, SD_DESTINATION, SD_PATH, SD_MANAGER, "Subscribe", NULL, NULL, "");
}
