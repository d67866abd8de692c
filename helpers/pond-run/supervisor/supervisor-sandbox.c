/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* supervisor-sandbox.c: the supervisor's mount sandbox. systemd builds it once per worker, from the mount
 * directives of pond-sandbox.service (ProtectSystem=strict, ProtectHome=, PrivateDevices=, the kernel
 * protections, ...), around that unit's one process, a sleep; every pond-run of a pond-job@ unit, the job's
 * supervisor and its cleanup, starts in a private copy of it: setns() into the holder's namespace, then
 * unshare(). Built by systemd 252 for each command of each pond-job@ unit, the same namespace cost 40-60 ms
 * of CPU before every job and every cleanup (docs/benchmarks.md). What pond-run mounts stays in its copy,
 * as it stayed in the unit's namespace: the copy is a slave of the holder's, which is one of the host's.
 * A sandbox that is starting, restarting or momentarily out of reach (the system bus refusing a connection
 * while a burst of jobs holds its connections for root, a call timing out while systemd starts hundreds of
 * units) is waited for, within the caller's bound: only one that cannot run at all refuses the job. */
#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <time.h>
#include <unistd.h>

#include "basic/dirs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "scope/scope.h"
#include "supervisor/supervisor-sandbox.h"

#define SANDBOX_PAUSE_MAX_USEC (500ULL * 1000)

/* What the sandbox leaves writable (pond-sandbox.service's ReadWritePaths=, its BindPaths=): a holder
 * started before one of them was made, or before one was replaced, has a namespace that no longer matches
 * the host's, and is restarted rather than used. */
static const char *const sandbox_fixed_paths[] = { "/run/netns", "/run/pond-egress", "/run/pond-broker" };

/* The same directory as the host's (the manager's namespace: PID 1's root), and writable here. */
static bool path_current(const char *path) {
        _cleanup_free_ char *host_path = NULL;
        struct stat here, host;
        struct statvfs vfs;
        bool on_host;

        if (asprintf(&host_path, "/proc/1/root%s", path) < 0)
                return false;
        on_host = stat(host_path, &host) >= 0;
        if (stat(path, &here) < 0)
                return !on_host;
        return on_host && here.st_dev == host.st_dev && here.st_ino == host.st_ino && statvfs(path, &vfs) >= 0 &&
               !(vfs.f_flag & ST_RDONLY);
}

static const char *stale_path(void) {
        if (!path_current(pond_dir(POND_DIR_STATE)))
                return pond_dir(POND_DIR_STATE);
        if (!path_current(pond_dir(POND_DIR_RUN)))
                return pond_dir(POND_DIR_RUN);
        for (size_t i = 0; i < ELEMENTSOF(sandbox_fixed_paths); i++)
                if (!path_current(sandbox_fixed_paths[i]))
                        return sandbox_fixed_paths[i];
        return NULL;
}

/* The unit is running (active), or started here if it is not and nothing is starting it: -EAGAIN while its
 * start is under way (activating: its namespace may not be built yet, and is not joined), the start's error
 * if systemd cannot start it (masked, failed: permanent, -EPERM). */
static int holder_running(sd_bus *bus) {
        _cleanup_free_ char *state = NULL;
        UnitStart *s = NULL;
        int r;

        r = unit_active_state(bus, SUPERVISOR_SANDBOX_UNIT, &state);
        if (r < 0)
                return log_debug_errno(r, "Cannot read the state of %s: %m", SUPERVISOR_SANDBOX_UNIT);
        if (streq(state, "active") || streq(state, "reloading"))
                return 0;
        if (!streq(state, "inactive") && !streq(state, "failed"))
                return log_debug_errno(EAGAIN, "%s is %s: waiting for it.", SUPERVISOR_SANDBOX_UNIT, state);
        /* Stopped (a restart between its stop and start, an operator's stop): started as pond-job@'s Wants=
         * would, and waited for. A start systemd refuses (masked, a unit that fails) is not waited for. */
        log_info("%s is %s: starting it.", SUPERVISOR_SANDBOX_UNIT, state);
        r = unit_start_begin(bus, SUPERVISOR_SANDBOX_UNIT, &s);
        if (r < 0)
                return r;
        r = unit_start_finish(bus, s);
        if (r == -EIO)
                return log_error_errno(EPERM, "%s did not start.", SUPERVISOR_SANDBOX_UNIT);
        if (r < 0)
                return r;
        /* A start that is "done" and left it stopped: a condition of the unit failed. */
        free(state);
        state = NULL;
        r = unit_active_state(bus, SUPERVISOR_SANDBOX_UNIT, &state);
        if (r < 0)
                return r;
        if (streq(state, "inactive") || streq(state, "failed"))
                return log_error_errno(EPERM, "%s was started and is %s (does a condition of it fail?).",
                                       SUPERVISOR_SANDBOX_UNIT, state);
        return streq(state, "active") ? 0 : -EAGAIN;
}

/* Into the holder's namespace, through a pidfd: the pid is the holder's only while that process lives, which
 * the pidfd pins; then checked to be pond-sandbox.service's. -ESRCH: not (or no longer) running, which a
 * restart under way explains. */
static int join_holder(sd_bus *bus) {
        _cleanup_free_ char *unit = NULL;
        _cleanup_close_ int pidfd = -EBADF;
        uint32_t pid = 0;
        int r;

        r = holder_running(bus);
        if (r < 0)
                return r;
        r = unit_main_pid(bus, SUPERVISOR_SANDBOX_UNIT, &pid);
        if (r < 0)
                return r;
        if (pid == 0)
                return log_debug_errno(ESRCH, "%s is not running.", SUPERVISOR_SANDBOX_UNIT);
        pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
        if (pidfd < 0)
                return log_debug_errno(ESRCH, "Cannot open the process of %s: %m", SUPERVISOR_SANDBOX_UNIT);
        r = sd_pid_get_unit((pid_t) pid, &unit);
        if (r < 0 || !streq(unit, SUPERVISOR_SANDBOX_UNIT) || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
                return log_debug_errno(ESRCH, "Process %u is not %s's.", pid, SUPERVISOR_SANDBOX_UNIT);
        if (setns(pidfd, CLONE_NEWNS) < 0)
                return log_error_errno(errno, "Cannot join the mount namespace of %s: %m", SUPERVISOR_SANDBOX_UNIT);
        return 0;
}

static int holder_restart(sd_bus *bus, const char *why) {
        UnitStart *s = NULL;
        int r;

        log_info("%s in the sandbox is not the host's directory, or not writable (made or replaced after the "
                 "sandbox started): restarting %s.", why, SUPERVISOR_SANDBOX_UNIT);
        r = unit_restart_begin(bus, SUPERVISOR_SANDBOX_UNIT, &s);
        if (r >= 0)
                r = unit_start_finish(bus, s);
        if (r < 0)
                return log_error_errno(r, "Cannot restart %s: %m", SUPERVISOR_SANDBOX_UNIT);
        return 0;
}

/* The unit's credentials (its keys) are a mount below /run/credentials, which systemd makes inaccessible in
 * the holder's namespace (no unit there has any): a clone of that mount, taken before leaving the unit's
 * namespace, is attached in the copy at the same path, alone, as systemd shows a unit with a namespace of its
 * own only its credentials. None (run without LoadCredential=, or an ExecStopPost= given none): -EBADF. */
static int credentials_clone(void) {
        const char *creds = getenv("CREDENTIALS_DIRECTORY");
        int fd;

        if (!creds)
                return -EBADF;
        fd = (int) syscall(SYS_open_tree, AT_FDCWD, creds, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0) {
                log_debug_errno(errno, "No credentials to carry over from %s: %m", creds);
                return -EBADF;
        }
        return fd;
}

static int credentials_attach(int tree) {
        const char *creds = getenv("CREDENTIALS_DIRECTORY"), *slash;
        _cleanup_free_ char *parent = NULL;

        if (tree < 0 || !creds)
                return 0;
        slash = strrchr(creds, '/');
        if (!slash || slash == creds)
                return log_error_errno(EINVAL, "Credentials at %s: not below a directory.", creds);
        parent = strndup(creds, (size_t) (slash - creds));
        if (!parent)
                return -ENOMEM;
        if (mount("tmpfs", parent, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") < 0 ||
            mkdir(creds, 0700) < 0 ||
            syscall(SYS_move_mount, tree, "", AT_FDCWD, creds, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return log_error_errno(errno, "Cannot bring the unit's credentials to %s: %m", creds);
        return 0;
}

/* A copy of the holder's namespace of this process's own: a slave of the holder's (what the host mounts
 * later still arrives) and shared within itself, as a unit's namespace is; nothing mounted here reaches the
 * holder or another supervisor. Then a /tmp and /var/tmp of its own (the holder's PrivateTmp= is every
 * supervisor's). */
static int private_copy(int credentials) {
        static const char *const private_tmp[] = { "/tmp", "/var/tmp" };
        int r;

        if (unshare(CLONE_NEWNS) < 0)
                return log_error_errno(errno, "Cannot copy the sandbox's mount namespace: %m");
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0 || mount(NULL, "/", NULL, MS_SHARED | MS_REC, NULL) < 0)
                return log_error_errno(errno, "Cannot set the propagation of the sandbox's copy: %m");
        for (size_t i = 0; i < ELEMENTSOF(private_tmp); i++)
                if (mount("tmpfs", private_tmp[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
                        return log_error_errno(errno, "Cannot mount a private %s: %m", private_tmp[i]);
        r = credentials_attach(credentials);
        if (r < 0)
                return r;
        if (chdir("/") < 0)
                return -errno;
        return 0;
}

/* Joined and copied; on a failure, back in the unit's own namespace (host_ns), never left in the holder's. */
static int enter(sd_bus *bus, int host_ns, int credentials) {
        const char *stale;
        int r;

        r = join_holder(bus);
        if (r < 0)
                return r;
        stale = stale_path();
        if (stale) {
                /* Back where systemd started us, and once more into a namespace made now. */
                if (setns(host_ns, CLONE_NEWNS) < 0)
                        return -errno;
                r = holder_restart(bus, stale);
                if (r >= 0)
                        r = join_holder(bus);
                if (r < 0)
                        return r;
                stale = stale_path();
                if (stale)
                        return log_error_errno(ESTALE, "%s in %s is still not the host's (is it missing there?).",
                                               stale, SUPERVISOR_SANDBOX_UNIT);
        }
        return private_copy(credentials);
}

bool supervisor_sandbox_error_transient(int r) {
        switch (-r) {
        case EAGAIN:       /* the unit is starting, or was started here */
        case ESRCH:        /* its process is gone or not yet there (a restart) */
        case ENOBUFS:      /* the bus refused: LimitsExceeded, dbus-daemon's max_connections_per_user for root */
        case ETIMEDOUT:    /* systemd did not answer within sd-bus's call timeout (busy starting units) */
        case ECONNRESET:
        case ECONNREFUSED:
        case ENOTCONN:
        case EPIPE:
                return true;
        default:
                return false;
        }
}

int supervisor_sandbox_enter(const char *service, uint64_t wait_usec, sd_bus **bus) {
        _cleanup_free_ char *unit = NULL;
        _cleanup_close_ int host_ns = -EBADF, credentials = -EBADF;
        uint64_t start = clock_usec(CLOCK_MONOTONIC), pause = 10ULL * 1000;
        unsigned tries = 0;
        int r;

        /* Run by hand (tests, a demo) there is no unit, and no sandbox either, as before. */
        if (sd_pid_get_unit(0, &unit) < 0 || !streq(unit, service))
                return 0;
        host_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (host_ns < 0)
                return -errno;
        credentials = credentials_clone();
        for (;;) {
                r = *bus ? 0 : sd_bus_open_system(bus);
                if (r >= 0)
                        r = enter(*bus, host_ns, credentials);
                if (r >= 0)
                        break;
                if (setns(host_ns, CLONE_NEWNS) < 0)
                        return log_error_errno(errno, "Cannot return to the unit's own mount namespace: %m");
                if (!supervisor_sandbox_error_transient(r) ||
                    clock_usec(CLOCK_MONOTONIC) - start + pause >= wait_usec)
                        return log_error_errno(r, "%s is not available (%u tries in %" PRIu64 " s): %m",
                                               SUPERVISOR_SANDBOX_UNIT, tries + 1,
                                               (clock_usec(CLOCK_MONOTONIC) - start) / (1000 * 1000));
                /* A connection the bus refused (at its Hello) or that timed out is not used again. */
                if (r != -EAGAIN && r != -ESRCH && r != -ESTALE)
                        *bus = sd_bus_flush_close_unref(*bus);
                if (tries++ == 0)
                        log_info("Waiting for %s: %s.", SUPERVISOR_SANDBOX_UNIT, strerror(-r));
                /* The start timeout is extended as the admission queue does: the rest of the start-up keeps its
                 * own time (ignored for the cleanup, which is not the unit's main process). */
                (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64 "\nSTATUS=waiting for %s", wait_usec,
                                  SUPERVISOR_SANDBOX_UNIT);
                (void) nanosleep(&(struct timespec) { .tv_sec = pause / (1000 * 1000),
                                                      .tv_nsec = (long) (pause % (1000 * 1000)) * 1000 },
                                 NULL);
                pause = MIN(pause * 2, SANDBOX_PAUSE_MAX_USEC);
        }
        if (tries > 0)
                log_info("Joined %s after %u tries in %" PRIu64 " ms.", SUPERVISOR_SANDBOX_UNIT, tries + 1,
                         (clock_usec(CLOCK_MONOTONIC) - start) / 1000);
        return 0;
}
