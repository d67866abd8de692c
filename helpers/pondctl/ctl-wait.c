/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-wait.c: the tail of `pondctl run` and all of `pondctl wait`: stream the log while the job runs, wait
 * until its signed result exists (holding no system-bus connection meanwhile), cancel on SIGINT/SIGTERM,
 * verify the result against the pinned key, and turn it into an exit status. The job's teardown goes on
 * after its result exists: a result is final once it is there (written whole, then renamed into
 * place), and whatever the teardown still holds (address, uid range, cgroups) is given back only once it is
 * proven free. */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>

#include "basic/json-util.h"
#include "basic/log.h"
#include "ctl.h"
#include "result/result.h"

/* How often the log is followed (and the result looked for where the results directory cannot be watched),
 * and -H's bus looked at between change signals. */
#define CTL_WAIT_TICK_USEC (5ULL * 1000)
/* -H: before the unit has stopped it is only asked this often (a change signal wakes us sooner). */
#define CTL_WAIT_QUERY_USEC (100ULL * 1000)
/* Local: the unit is asked this often, each time over a connection made for the question, only to notice one
 * that ended without a result (the result itself is seen at once). */
#define CTL_WAIT_UNIT_POLL_USEC (2ULL * 1000 * 1000)

static volatile sig_atomic_t cancel_requests;

static void on_cancel_signal(int sig) {
        cancel_requests++;
}

static int signal_from_name(const char *name) {
        if (!name || strncmp(name, "SIG", 3) != 0)
                return -EINVAL;
        for (int i = 1; i < NSIG; i++) {
                const char *abbrev = sigabbrev_np(i);
                if (abbrev && streq(abbrev, name + 3))
                        return i;
        }
        return -EINVAL;
}

int ctl_exit_status_from_result(json_object *result, const char **ret_reason) {
        const char *status = json_get_str(result, "status"), *why = json_get_str(result, "reason");
        json_object *ex = json_get(result, "exit"), *rc = json_get(ex, "rc");
        int ret, sig;

        if (!status) {
                why = "the result has no status";
                ret = CTL_EXIT_FAILED;
        } else if (streq(status, "refused"))
                ret = CTL_EXIT_REFUSED;
        else if (streq(status, "failed"))
                ret = CTL_EXIT_FAILED;
        else if (streq(status, "cancelled"))
                ret = CTL_EXIT_CANCELLED;
        else if (!streq(status, "completed")) {
                why = "the result has an unknown status";
                ret = CTL_EXIT_FAILED;
        } else if (json_get_true(ex, "timed_out")) {
                why = "the job ran out of wall-clock time";
                ret = CTL_EXIT_TIMEOUT;
        } else if (json_get_str(ex, "signal")) {
                sig = signal_from_name(json_get_str(ex, "signal"));
                why = sig > 0 ? NULL : "the job was killed by an unknown signal";
                ret = sig > 0 ? CTL_EXIT_SIGNAL_BASE + sig : CTL_EXIT_FAILED;
        } else if (json_object_is_type(rc, json_type_int)) {
                ret = json_object_get_int(rc) & 0xff;
                why = NULL;
        } else {
                why = "the result has neither an exit code nor a signal";
                ret = CTL_EXIT_FAILED;
        }
        if (ret_reason)
                *ret_reason = why;
        return ret;
}

static void format_exit(json_object *ex, char *buf, size_t size) {
        json_object *rc = json_get(ex, "rc");
        const char *sig = json_get_str(ex, "signal");

        if (sig)
                snprintf(buf, size, "signal %s", sig);
        else if (json_object_is_type(rc, json_type_int))
                snprintf(buf, size, "rc %d", json_object_get_int(rc));
        else
                snprintf(buf, size, "no exit status");
}

void ctl_print_summary(FILE *f, json_object *result, const char *dir) {
        json_object *ex = json_get(result, "exit"), *wall = json_get(json_get(result, "times"), "wall_ms");
        json_object *arts = json_get(result, "artifacts");
        const char *reason = json_get_str(result, "reason");
        char exit_buf[64], wall_buf[32] = "-";

        format_exit(ex, exit_buf, sizeof exit_buf);
        if (json_object_is_type(wall, json_type_int))
                snprintf(wall_buf, sizeof wall_buf, "%.3f s", (double) json_object_get_int64(wall) / 1000.0);
        /* A refusal's reason quotes the spec, and a signed result is still what a worker wrote. */
        ctl_fprintf_untrusted(f, "pond: job %s %s: %s, timed_out %s, oom %s, wall %s\n",
                              json_get_str(result, "job_id") ?: "?", json_get_str(result, "status") ?: "(no status)",
                              exit_buf, json_get_true(ex, "timed_out") ? "yes" : "no",
                              json_get_true(ex, "oom_killed") ? "yes" : "no", wall_buf);
        if (reason)
                ctl_fprintf_untrusted(f, "pond: reason: %s\n", reason);
        ctl_fprintf_untrusted(f, "pond: output_sha %s, %zu artifact(s), result %s\n",
                              json_get_str(result, "output_sha") ?: "-",
                              json_object_is_type(arts, json_type_array) ? json_object_array_length(arts) : 0, dir);
}

int ctl_load_public_key(const char *pubkey_file, uint8_t ret_pk[KEY_SIGN_PUBLIC_SIZE]) {
        int r;

        if (pubkey_file)
                r = key_load_public(pubkey_file, KEY_SIGN_PUBLIC_SIZE, ret_pk);
        else
                r = keys_load_sign_public(pond_dir(POND_DIR_KEY), ret_pk);
        if (r < 0)
                return log_error_errno(r, "Cannot load the worker's public key %s%s%s: %m",
                                       pubkey_file ?: pond_dir(POND_DIR_KEY), pubkey_file ? "" : "/",
                                       pubkey_file ? "" : KEY_SIGN_PUBLIC_FILE);
        return 0;
}

int ctl_result_dir(const JobPaths *p, const char *job_id, char **ret) {
        return asprintf(ret, "%s/%s", p->results, job_id) < 0 ? -ENOMEM : 0;
}

/* Verifies the result in dir (unless the fetch did: verified) and maps it to an exit status; says why on
 * stderr when it is not the rc. */
static int finish(const CtlWait *w, const char *dir, json_object *verified) {
        _cleanup_json_ json_object *result = json_object_get(verified);
        _cleanup_free_ char *err = NULL;
        const char *why;
        int r, ret;

        r = result ? 0 : result_verify(dir, w->pk, w->job_id, NULL, &result, &err);
        if (r < 0) {
                ctl_log_error_untrusted("The result of job %s did not verify: %s", w->job_id, err ?: strerror(-r));
                return CTL_EXIT_UNVERIFIED;
        }
        ret = ctl_exit_status_from_result(result, &why);
        if (w->ret_result)
                *w->ret_result = json_object_get(result);
        if (!w->quiet)
                ctl_print_summary(stderr, result, dir);
        else if (why && (ret == CTL_EXIT_REFUSED || ret == CTL_EXIT_FAILED))
                ctl_log_error_untrusted("Job %s %s: %s", w->job_id, json_get_str(result, "status") ?: "failed", why);
        return ret;
}

static json_object *string_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

int ctl_wait_to_json(const char *job_id, const char *result_dir, int exit_status, json_object *verified,
                     json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        const char *why = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        if (verified)
                (void) ctl_exit_status_from_result(verified, &why);
        r = json_add(o, "job_id", json_object_new_string(job_id));
        if (r >= 0)
                r = json_add(o, "exit_status", json_object_new_int(exit_status));
        if (r >= 0)
                r = json_add(o, "verified", json_object_new_boolean(verified != NULL));
        if (r >= 0)
                r = json_object_object_add(o, "status", string_or_null(json_get_str(verified, "status")));
        if (r >= 0)
                r = json_object_object_add(o, "reason", string_or_null(why ?: json_get_str(verified, "reason")));
        if (r >= 0)
                r = json_object_object_add(o, "result_dir", string_or_null(result_dir));
        if (r >= 0)
                r = json_object_object_add(o, "result", json_object_get(verified));
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static void drain_log(const CtlWait *w) {
        int r;

        if (!w->log)
                return;
        r = ctl_log_follower_drain(w->log);
        if (r < 0 && r != -EAGAIN)
                log_debug_errno(r, "Cannot follow the log of %s: %m", w->job_id);
}

static int give_up(const CtlWait *w) {
        log_error("Not waiting for job %s any more; it is being cancelled.", w->job_id);
        return CTL_EXIT_CANCELLED;
}

/* -H: the first signal cancels the job and keeps waiting for its (signed, "cancelled") result; the second
 * gives up waiting: the cancellation goes on without us. */
static int on_cancel_remote(CtlWait *w, const char *unit, int n) {
        _cleanup_free_ char *err = NULL;

        if (n > 0)
                return give_up(w);
        log_notice("Cancelling job %s (interrupt again to stop waiting)...", w->job_id);
        /* The ssh under the remote bus is in our process group, and a Ctrl-C on the terminal killed it too: the
         * StopUnit, and the rest of the wait, go over a new connection (made after the signal). */
        if (!w->reconnected && ctl_host_bus_open(&w->reconnected) >= 0)
                w->bus = w->reconnected;
        if (ctl_unit_call(w->bus, "StopUnit", unit, &err) < 0)
                ctl_log_error_untrusted("Cannot stop %s: %s", unit, err ?: "unknown error");
        return 0;
}

static int tick_remote(sd_bus *bus) {
        int r;

        do
                r = sd_bus_process(bus, NULL);
        while (r > 0);
        if (r >= 0)
                r = sd_bus_wait(bus, CTL_WAIT_TICK_USEC);
        return r == -EINTR ? 0 : r;
}

static int report_no_result(const CtlWait *w, const char *unit) {
        _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
        bool text;

        drain_log(w);
        if (w->fetch)
                (void) ctl_unit_get_state(w->bus, unit, true, &st);
        else
                (void) ctl_unit_get_state_once(unit, true, &st);
        text = st.status_text && *st.status_text;
        /* The status text is the supervisor's, and may quote the spec; with -H all of it is the worker's. */
        ctl_log_error_untrusted("%s ended without a result (%s%s%s%s%s).", unit, st.active_state ?: "state unknown",
                                st.sub_state ? "/" : "", st.sub_state ?: "", text ? ": " : "",
                                text ? st.status_text : "");
        return CTL_EXIT_FAILED;
}

/* -H: the Ctrl-C that killed the ssh under the bus (it is in our process group) is the one the handler has
 * counted by the time the dead connection is seen (the signal is delivered on the way back from that very
 * call): the loop goes round once more to cancel over a new connection instead of failing on the old one. */
static bool remote_interrupted(const CtlWait *w, int handled) {
        return !w->reconnected && cancel_requests > handled;
}

/* -H: returns 0 once the unit has stopped (the result is then fetched, one fetch rather than a poll over
 * ssh), else the exit status to fail with. The unit is watched over the remote bus, held throughout: one
 * ssh and one systemd-stdio-bridge, whose connection counts against the ssh login's user on the worker. */
static int wait_remote(CtlWait *w, const char *unit) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        uint64_t last_query = 0;
        bool changed = true;
        int handled = 0, r;

        r = ctl_unit_watch(w->bus, unit, &changed, &slot);
        if (r < 0)
                log_debug_errno(r, "Cannot subscribe to changes of %s, polling: %m", unit);
        for (;;) {
                _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
                uint64_t now = clock_usec(CLOCK_MONOTONIC);

                if (cancel_requests > handled) {
                        r = on_cancel_remote(w, unit, handled++);
                        if (r > 0)
                                return r;
                }
                if (changed || now - last_query >= CTL_WAIT_QUERY_USEC) {
                        changed = false;
                        r = ctl_unit_get_state(w->bus, unit, false, &st);
                        if (r == -EINTR || (r < 0 && remote_interrupted(w, handled)))
                                continue;
                        if (r < 0)
                                return ctl_fail_errno(CTL_EXIT_FAILED, r, "Cannot get the state of %s: %m", unit);
                        last_query = now;
                        if (!ctl_unit_state_is_running(&st))
                                return 0;
                        *w->seen_running = true;
                }
                r = tick_remote(w->bus);
                if (r < 0 && remote_interrupted(w, handled))
                        continue;
                if (r < 0)
                        return ctl_fail_errno(CTL_EXIT_FAILED, r, "Lost the system bus while waiting for %s: %m",
                                              unit);
        }
}

/* The results directory watched for new entries (a result is renamed into place whole): an inotify fd, or
 * -errno (then the result is looked for every tick). */
static int results_watch(const JobPaths *p) {
        _cleanup_close_ int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (inotify_add_watch(fd, p->results, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* Sleeps up to usec, less if the results directory changes (watch >= 0) or a signal comes. */
static void results_wait(int watch, uint64_t usec) {
        struct timespec ts = { .tv_sec = (time_t) (usec / (1000 * 1000)),
                               .tv_nsec = (long) (usec % (1000 * 1000)) * 1000 };
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        if (watch < 0) {
                (void) nanosleep(&ts, NULL);
                return;
        }
        if (ppoll(&(struct pollfd) { .fd = watch, .events = POLLIN }, 1, &ts, NULL) > 0)
                while (read(watch, buf, sizeof buf) > 0)
                        ;
}

/* The unit's state: over the caller's connection the first time (it is closed then: nothing waits on it), then
 * each time over a connection made for the call. */
static int unit_state(CtlWait *w, const char *unit, CtlUnitState *ret) {
        int r;

        if (!w->bus)
                return ctl_unit_get_state_once(unit, false, ret);
        r = ctl_unit_get_state(w->bus, unit, false, ret);
        sd_bus_close(w->bus);
        w->bus = NULL;
        return r;
}

/* StopUnit over a connection of its own; false if a bus that refused it or did not answer is to be asked
 * again (at the next query: a stop sent twice is one stop). */
static bool unit_stop(const char *unit) {
        _cleanup_free_ char *err = NULL;
        int r = ctl_unit_call_once("StopUnit", unit, &err);

        if (r >= 0 || !ctl_bus_error_transient(r)) {
                if (r < 0)
                        ctl_log_error_untrusted("Cannot stop %s: %s", unit, err ?: strerror(-r));
                return true;
        }
        log_debug("Cannot stop %s yet: %s; trying again.", unit, err ?: strerror(-r));
        return false;
}

/* The bus failed (r) while following a local job: its result is followed meanwhile and the unit asked again
 * at the next query; CTL_EXIT_LOST once nothing answered for CTL_BUS_DEADLINE_USEC, or the error's exit
 * status if it cannot pass by itself. 0: keep following. */
static int bus_lost(const CtlWait *w, const char *unit, int r, uint64_t *lost_since) {
        uint64_t now = clock_usec(CLOCK_MONOTONIC);

        if (!ctl_bus_error_transient(r))
                return ctl_fail_errno(CTL_EXIT_FAILED, r, "Cannot get the state of %s: %m", unit);
        if (*lost_since == 0) {
                *lost_since = now;
                log_debug_errno(r, "The system bus failed while following %s: %m; following its result.", unit);
        }
        if (now - *lost_since >= CTL_BUS_DEADLINE_USEC)
                return ctl_fail_errno(CTL_EXIT_LOST, r, "Lost sight of job %s: the system bus did not answer for "
                                      "%llu s (%m) and the job has no result yet; it may still run (pondctl "
                                      "wait %s).", w->job_id, CTL_BUS_DEADLINE_USEC / (1000 * 1000ULL),
                                      w->job_id);
        return 0;
}

/* Returns 0 once the result exists, else the exit status to fail with. The job is followed through the files
 * pond writes: the result appearing (inotify on the results directory) and the log; the unit is asked every
 * CTL_WAIT_UNIT_POLL_USEC, over a connection made for that one question, only to notice one that ended
 * without a result. So a waiting pondctl holds no system-bus connection: dbus-daemon allows each uid 256
 * (max_connections_per_user), and one held by every caller of a running job would leave its supervisor
 * none. The unit may still be tearing the job down: nothing in the result changes after it is renamed into
 * place, and a result written by the cleanup (the supervisor died) is there only once the cleanup has
 * written it. */
static int wait_local(CtlWait *w, const char *unit, const char *result_json) {
        _cleanup_close_ int watch = results_watch(w->paths);
        uint64_t next_query = 0, lost_since = 0;
        bool stop_pending = false;
        int handled = 0, r;

        if (watch < 0)
                log_debug_errno(watch, "Cannot watch %s, looking for the result every %llu ms: %m",
                                w->paths->results, CTL_WAIT_TICK_USEC / 1000);
        for (;;) {
                _cleanup_(ctl_unit_state_done) CtlUnitState st = {};
                uint64_t now = clock_usec(CLOCK_MONOTONIC), pause;
                int q = 1; /* the unit's state read now: 0; failed: < 0; not asked: 1 */

                if (cancel_requests > handled) {
                        if (handled++ > 0)
                                return give_up(w);
                        log_notice("Cancelling job %s (interrupt again to stop waiting)...", w->job_id);
                        stop_pending = true;
                        next_query = 0;
                }
                drain_log(w);
                /* The unit first, then the result: a result that appears in between is seen next time, and
                 * a stopped unit seen before a missing result really has none (cleanup writes one while the
                 * unit is still deactivating). */
                if (now >= next_query) {
                        if (stop_pending)
                                stop_pending = !unit_stop(unit);
                        q = unit_state(w, unit, &st);
                        if (q == -EINTR)
                                continue;
                        next_query = now + CTL_WAIT_UNIT_POLL_USEC;
                }
                /* A finished job's result is there without a bus. */
                if (access(result_json, F_OK) >= 0)
                        return 0;
                if (q < 0) {
                        r = bus_lost(w, unit, q, &lost_since);
                        if (r > 0)
                                return r;
                } else if (q == 0) {
                        lost_since = 0;
                        if (!ctl_unit_state_is_running(&st))
                                return report_no_result(w, unit);
                }
                pause = next_query > now ? next_query - now : 0;
                /* The log is followed at the tick; the result without a watch too. */
                if (w->log || watch < 0)
                        pause = MIN(pause, CTL_WAIT_TICK_USEC);
                results_wait(watch, pause);
        }
}

int ctl_wait(CtlWait *w) {
        _cleanup_free_ char *unit = NULL, *dir = NULL, *result_json = NULL, *err = NULL;
        _cleanup_json_ json_object *verified = NULL;
        struct sigaction sa = { .sa_handler = on_cancel_signal }, old_int, old_term;
        bool seen_running = false;
        int r;

        w->seen_running = &seen_running;
        if (unit_name(UNIT_JOB_SERVICE, w->job_id, &unit) < 0 ||
            (!w->fetch && ctl_result_dir(w->paths, w->job_id, &dir) < 0) ||
            (!w->fetch && asprintf(&result_json, "%s/%s", dir, RESULT_JSON_FILE) < 0))
                return log_oom();
        cancel_requests = 0;
        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGINT, &sa, &old_int);
        (void) sigaction(SIGTERM, &sa, &old_term);
        r = w->fetch ? wait_remote(w, unit) : wait_local(w, unit, result_json);
        (void) sigaction(SIGINT, &old_int, NULL);
        (void) sigaction(SIGTERM, &old_term, NULL);
        if (r > 0)
                goto finish;
        drain_log(w);
        if (w->fetch) {
                r = w->fetch(w, &dir, &verified, &err);
                if (r == -ENOENT && !seen_running)
                        r = ctl_fail(CTL_EXIT_NOT_FOUND, "Job %s has no result on the worker and no running "
                                     "unit: no such job.", w->job_id);
                else if (r == -ENOENT)
                        r = report_no_result(w, unit);
                else if (r == -EBADMSG)
                        r = ctl_fail_untrusted(CTL_EXIT_UNVERIFIED, "The result of job %s did not verify, and "
                                               "was not kept: %s", w->job_id, err ?: "unknown error");
                else if (r < 0)
                        r = CTL_EXIT_FAILED;
                if (r != 0)
                        goto finish;
        }
        r = finish(w, dir, verified);
finish:
        w->reconnected = sd_bus_flush_close_unref(w->reconnected);
        return r;
}
