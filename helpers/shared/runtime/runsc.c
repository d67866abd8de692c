/* runsc.c: the gVisor provider. The same bundle as runc, run in gVisor's user-space kernel. The platform
 * (systrap where this runsc has it and it works, else ptrace) is probed once per boot by running a trivial
 * sandbox, and cached under the runtime directory; a host where no platform works refuses the backend.
 * --oci-seccomp makes runsc apply the OCI seccomp profile inside the sandbox too (it ignores it
 * otherwise). */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "fileio.h"
#include "log.h"
#include "runtime.h"

#define RUNSC "runsc"
#define PROBE_USEC (60ULL * 1000 * 1000)

static const char *const platforms[] = { "systrap", "ptrace" };

static char *cache_path(void) {
        char *p = NULL;
        return asprintf(&p, "%s/runsc-platform", getenv("POND_RUNDIR") ?: POND_RUNDIR) < 0 ? NULL : p;
}

static int probe_platform(const char *platform) {
        _cleanup_strv_free_ char **argv = NULL;
        char root[] = "/tmp/pond-runsc-probe.XXXXXX";
        int r;

        if (!mkdtemp(root))
                return -errno;
        r = strv_build(&argv, RUNSC, "--root", root, "--network=none", "--platform", platform, "do", "true", NULL);
        if (r >= 0)
                r = runtime_exec(argv, PROBE_USEC);
        (void) rm_rf_at(AT_FDCWD, root);
        return r;
}

/* The platform this host runs gVisor with; cached so that only the first job of a boot pays for it. */
static int runsc_platform(const char **ret) {
        _cleanup_free_ char *cache = cache_path(), *cached = NULL;

        if (!cache)
                return -ENOMEM;
        if (read_full_file(cache, 64, &cached, NULL) >= 0)
                for (size_t i = 0; i < ELEMENTSOF(platforms); i++)
                        if (strncmp(cached, platforms[i], strlen(platforms[i])) == 0 &&
                            cached[strlen(platforms[i])] == '\n') {
                                *ret = platforms[i];
                                return 0;
                        }
        for (size_t i = 0; i < ELEMENTSOF(platforms); i++)
                if (probe_platform(platforms[i]) == 0) {
                        _cleanup_close_ int dfd = -EBADF;
                        char line[32];
                        char *slash = strrchr(cache, '/');

                        *slash = 0;
                        (void) mkdir_p(cache, 0700);
                        dfd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        snprintf(line, sizeof line, "%s\n", platforms[i]);
                        if (dfd >= 0)
                                (void) write_file_atomic_at(dfd, "runsc-platform", line, strlen(line), 0644);
                        *ret = platforms[i];
                        return 0;
                }
        return -EOPNOTSUPP;
}

static int runsc_check(char **ret_reason) {
        _cleanup_free_ char *path = NULL;
        const char *platform;
        int r;

        r = find_binary(RUNSC, &path);
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = strdup("runsc (gVisor) is not installed on this worker");
                return r;
        }
        r = runsc_platform(&platform);
        if (r < 0 && ret_reason)
                *ret_reason = strdup("runsc cannot run a sandbox on this worker (no working platform: systrap, ptrace)");
        return r;
}

/* "none": gVisor's netstack with loopback only. For a job namespace prepared by the supervisor the
 * sandbox is started inside it (the config names it) and uses that namespace's kernel stack ("host" is
 * relative to the sandbox's namespace): runsc's own netstack mode ("sandbox") cannot be used with
 * Debian's runsc 2022 on current kernels, whose every namespace has /proc/sys/net/core/rmem_default,
 * which that runsc takes for "the root namespace" and refuses. The nftables rules sit outside, on the
 * host side of the veth, either way. Profile none gets the host's network. */
static const char *runsc_network(const RuntimeJob *j) {
        return j->host_network || j->netns ? "--network=host" : "--network=none";
}

/* An operator's debugging aid: POND_RUNSC_DEBUG_LOG=DIR in pond-run's environment (a drop-in for
 * pond-job@.service) makes every runsc component write its debug log there. */
static const char *debug_flag(char *buf, size_t n) {
        const char *d = getenv("POND_RUNSC_DEBUG_LOG");
        if (!d || d[0] != '/')
                return "--debug=false";
        snprintf(buf, n, "--debug-log=%s/%%COMMAND%%.log", d);
        return buf;
}

static int runsc_create_argv(const RuntimeJob *j, char ***ret) {
        const char *platform;
        char dbg[PATH_MAX];
        int r = runsc_platform(&platform);

        if (r < 0)
                return r;
        return strv_build(ret, RUNSC, "--root", j->state_root, "--log", j->log_file, "--platform", platform,
                          runsc_network(j), "--oci-seccomp", debug_flag(dbg, sizeof dbg),
                          getenv("POND_RUNSC_DEBUG_LOG") ? "--debug" : "--debug=false", "create", "--bundle",
                          j->bundle, "--pid-file", j->pid_file, j->container_id, NULL);
}

/* runsc reads its global flags on every command, not from the container's state: start (which sets up
 * the sandbox's network) must get the same ones as create. */
static int runsc_start_argv(const RuntimeJob *j, char ***ret) {
        const char *platform;
        int r = runsc_platform(&platform);

        if (r < 0)
                return r;
        return strv_build(ret, RUNSC, "--root", j->state_root, "--log", j->log_file, "--platform", platform,
                          runsc_network(j), "--oci-seccomp", "start", j->container_id, NULL);
}

static int runsc_delete_argv(const RuntimeJob *j, char ***ret) {
        return strv_build(ret, RUNSC, "--root", j->state_root, "delete", "--force", j->container_id, NULL);
}

/* runsc keeps one state file per container: ROOT/ID_sandbox:ID.state (the root container names its sandbox). */
static bool runsc_has_state(const RuntimeJob *j) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/%s_sandbox:%s.state", j->state_root, j->container_id, j->container_id) >= 0 &&
               access(p, F_OK) == 0;
}

static void runsc_forget(const RuntimeJob *j) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s_sandbox:%s.lock", j->state_root, j->container_id, j->container_id) >= 0)
                (void) unlink(p);
}

const RuntimeProvider runtime_runsc = {
        .name = "runsc",
        .check = runsc_check,
        .create_argv = runsc_create_argv,
        .start_argv = runsc_start_argv,
        .delete_argv = runsc_delete_argv,
        .has_state = runsc_has_state,
        .forget = runsc_forget,
};
