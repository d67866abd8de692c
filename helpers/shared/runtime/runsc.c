/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runsc.c: the gVisor provider. The same bundle as runc, run in gVisor's user-space kernel. The platform
 * (systrap where this runsc has it and it works, else ptrace) is probed by running a trivial sandbox: once
 * per boot for jobs, cached under the runtime directory, and afresh by pondctl probe; a host where no
 * platform works refuses the backend.
 * A runsc older than RUNSC_MIN_RELEASE is refused by the same probe. --oci-seccomp makes runsc apply the
 * OCI seccomp profile inside the sandbox too (it ignores it otherwise), in the form runsc-seccomp.c gives
 * it. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "basic/dirs.h"
#include "basic/fileio.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "runtime/runtime.h"

#define RUNSC "runsc"
#define PLATFORM_PROBE_USEC (60ULL * 1000 * 1000)
#define PROBE_DIR_PREFIX "/tmp/pond-runsc-probe"
#define VERSION_USEC (10ULL * 1000 * 1000)

/* The oldest gVisor release pond runs. Debian 12's own runsc (20221219) fails real workloads whatever the
 * profile: it rejects statx(AT_NO_AUTOMOUNT), so `ls -l`, `stat` and `find -printf` fail on every path,
 * and it knows pselect6 only as "pselect", so the profile's pselect6 rule is dropped and pselect(3) gets
 * EPERM. 20240729 is bookworm-backports' (and Debian 13's); tools/install-deps installs it. */
#define RUNSC_MIN_RELEASE 20240729U

/* In order of preference: systrap is gVisor's fast platform but unknown to older runsc; ptrace works
 * wherever ptrace does. */
static const char *const platforms[] = { "systrap", "ptrace" };

static int runsc_locate(char **ret_path, char **ret_reason) {
        int r = find_binary(RUNSC, ret_path);

        if (r < 0 && ret_reason)
                *ret_reason = strdup(RUNSC " not found or not executable");
        return r;
}

int runsc_release(const char *version_output, unsigned *ret) {
        _cleanup_free_ char *line = runtime_output_line(version_output, false);
        const char *p = line ? strstr(line, "version ") : NULL;

        if (!line)
                return -ENOMEM;
        /* The first run of exactly 8 digits: 0.0~YYYYMMDD.N or release-YYYYMMDD.N */
        while (p && *p) {
                size_t n = strspn(p, "0123456789");
                if (n == 8 && strncmp(p, "20", 2) == 0) {
                        *ret = (unsigned) strtoul(p, NULL, 10);
                        return 0;
                }
                p += n ?: 1;
        }
        return -EINVAL;
}

/* NULL unless binary names a release older than pond runs, else why not (malloc'd). A build without a
 * version stamp cannot be dated and is let through (its --version line shows in pondctl probe), and so is
 * a binary whose --version fails: the platform probe then says what is wrong with it. */
static char *release_refusal(const char *binary, uint64_t timeout_usec) {
        _cleanup_free_ char *out = NULL;
        char *argv[] = { (char *) binary, (char *) "--version", NULL };
        unsigned release;

        if (runtime_exec_output(argv, timeout_usec, &out) != 0 || runsc_release(out, &release) < 0 ||
            release >= RUNSC_MIN_RELEASE)
                return NULL;
        return strdupf("runsc release %u is older than %u, the oldest pond runs (statx with AT_NO_AUTOMOUNT "
                       "fails there, so `ls -l` and `stat` do)", release, RUNSC_MIN_RELEASE);
}

/* Each platform in turn runs `runsc do true` in a root of its own below tmpdir; the first that works is
 * the platform, else the reason names what each one said. Used by the job path (once per boot, cached)
 * and by pondctl probe (every time). */
static void runsc_probe(const char *binary, const char *tmpdir, uint64_t timeout_usec, RuntimeProbe *ret) {
        _cleanup_free_ char *tried = NULL;

        *ret = (RuntimeProbe) {};
        ret->reason = release_refusal(binary, timeout_usec < VERSION_USEC ? timeout_usec : VERSION_USEC);
        if (ret->reason)
                return;
        for (size_t i = 0; i < ELEMENTSOF(platforms); i++) {
                _cleanup_free_ char *root = NULL, *opt = NULL, *prev = NULL;
                RuntimeProbe one = {};

                if (asprintf(&root, "%s/runsc-%s", tmpdir, platforms[i]) < 0 ||
                    asprintf(&opt, "--platform=%s", platforms[i]) < 0 || mkdir(root, 0700) < 0)
                        return;
                char *argv[] = { (char *) binary, (char *) "--root", root, (char *) "--network=none", opt,
                                 (char *) "do", (char *) "true", NULL };
                runtime_probe_run(argv, timeout_usec, &one);
                if (one.works) {
                        runtime_probe_done(&one);
                        ret->works = true;
                        ret->platform = strdup(platforms[i]);
                        return;
                }
                prev = TAKE_PTR(tried);
                if (asprintf(&tried, "%s%s%s: %s", prev ?: "", prev ? "; " : "", platforms[i],
                             one.reason ?: "?") < 0)
                        tried = NULL;
                runtime_probe_done(&one);
        }
        ret->reason = TAKE_PTR(tried);
}

static char *cache_path(void) {
        char *p = NULL;
        return asprintf(&p, "%s/runsc-platform", pond_dir(POND_DIR_RUN)) < 0 ? NULL : p;
}

static const char *cache_read(const char *cache) {
        _cleanup_free_ char *cached = NULL;

        if (read_full_file(cache, 64, &cached, NULL) < 0)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(platforms); i++) {
                size_t n = strlen(platforms[i]);
                if (strncmp(cached, platforms[i], n) == 0 && cached[n] == '\n')
                        return platforms[i];
        }
        return NULL;
}

static void cache_write(char *cache, const char *platform) {
        _cleanup_close_ int dfd = -EBADF;
        char line[32];
        char *slash = strrchr(cache, '/');

        *slash = 0;
        (void) mkdir_p(cache, 0700);
        dfd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(line, sizeof line, "%s\n", platform);
        if (dfd >= 0)
                (void) write_file_atomic_at(dfd, "runsc-platform", line, strlen(line), 0644);
}

/* The platform this host runs gVisor with; cached so that only the first job of a boot pays for the probe
 * (and its release check). On failure, *ret_reason (if not NULL) says why. */
static int runsc_platform_reason(const char **ret, char **ret_reason) {
        _cleanup_(runtime_probe_done) RuntimeProbe probe = {};
        _cleanup_free_ char *cache = cache_path();
        _cleanup_free_ char *root = NULL;
        const char *cached;

        if (!cache)
                return -ENOMEM;
        cached = cache_read(cache);
        if (cached) {
                *ret = cached;
                return 0;
        }
        /* Named by this process: a probe whose prober was killed is found and removed (runsc_forget()). */
        if (asprintf(&root, "%s.%d.XXXXXX", PROBE_DIR_PREFIX, (int) getpid()) < 0)
                return -ENOMEM;
        if (!mkdtemp(root))
                return -errno;
        runsc_probe(RUNSC, root, PLATFORM_PROBE_USEC, &probe);
        (void) rm_rf_at(AT_FDCWD, root);
        for (size_t i = 0; probe.works && i < ELEMENTSOF(platforms); i++)
                if (probe.platform && streq(probe.platform, platforms[i])) {
                        cache_write(cache, platforms[i]);
                        *ret = platforms[i];
                        return 0;
                }
        if (ret_reason)
                *ret_reason = TAKE_PTR(probe.reason);
        return -EOPNOTSUPP;
}

static int runsc_platform(const char **ret) {
        return runsc_platform_reason(ret, NULL);
}

static int runsc_check(char **ret_reason) {
        _cleanup_free_ char *path = NULL, *why = NULL;
        const char *platform;
        int r;

        r = runsc_locate(&path, NULL);
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = strdup("runsc (gVisor) is not installed on this worker");
                return r;
        }
        r = runsc_platform_reason(&platform, &why);
        if (r < 0 && ret_reason)
                *ret_reason = strdupf("runsc cannot run a sandbox on this worker: %s",
                                      why ?: "no working platform (systrap, ptrace)");
        return r;
}

/* "none": gVisor's netstack with loopback only. For a job namespace prepared by the supervisor, "sandbox":
 * gVisor's own netstack, started inside that namespace (the config names it), takes the namespace's veth
 * end with its address and routes (runsc moves the address off the host kernel's side) and reaches it
 * through an AF_PACKET socket: the host kernel's TCP/IP is out of the payload's path, the sentry moves raw
 * frames only. The nftables rules sit on the host side of the veth either way. Profile none: the host's
 * network, through the host's stack. */
static const char *runsc_network(const RuntimeJob *j) {
        return j->host_network ? "--network=host" : j->netns ? "--network=sandbox" : "--network=none";
}

/* The start step sets the sandbox's network up, and runsc first refuses to do that in "the root network
 * namespace", which runsc up to 20240729 recognizes by /proc/sys/net/core/rmem_default existing: since
 * Linux 6.x every network namespace has it (google/gvisor#10704), so a job's namespace is taken for the
 * root one and the job would not start. In the step's own mount namespace /proc/sys/net is an empty
 * read-only directory, so the test finds no such file; the step reads nothing else there (it scrapes the
 * interfaces, addresses and routes over netlink), and nothing it starts outlives it. */
static int runsc_start_child_setup(void) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0 ||
            mount("none", "/proc/sys/net", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,nr_inodes=1,mode=0555") < 0)
                return -errno;
        return 0;
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

/* --panic-log: the sandbox's and the gofer's Go runtime messages (a sentry panic's report) go to a file of
 * the job's, where runsc_init_failed() finds them; without it they go to the sandbox's stderr, /dev/null. */
static int runsc_create_argv(const RuntimeJob *j, char ***ret) {
        _cleanup_free_ char *panic = NULL;
        const char *platform;
        char dbg[PATH_MAX];
        int r = runsc_platform(&platform);

        if (r < 0)
                return r;
        if (asprintf(&panic, "--panic-log=%s", j->panic_log ?: "/dev/null") < 0)
                return -ENOMEM;
        if (j->console_socket)
                return strv_build(ret, RUNSC, "--root", j->state_root, "--log", j->log_file, panic, "--platform",
                                  platform, runsc_network(j), "--oci-seccomp", debug_flag(dbg, sizeof dbg),
                                  getenv("POND_RUNSC_DEBUG_LOG") ? "--debug" : "--debug=false", "create",
                                  "--bundle", j->bundle, "--pid-file", j->pid_file, "--console-socket",
                                  j->console_socket, j->container_id, NULL);
        return strv_build(ret, RUNSC, "--root", j->state_root, "--log", j->log_file, panic, "--platform", platform,
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

/* The same global flags again (see start); the process file gives user, capabilities, cwd and env. */
static int runsc_exec_argv(const RuntimeJob *j, const char *process_file, char ***ret) {
        const char *platform;
        int r = runsc_platform(&platform);

        if (r < 0)
                return r;
        return strv_build(ret, RUNSC, "--root", j->state_root, "--log", j->log_file, "--platform", platform,
                          runsc_network(j), "--oci-seccomp", "exec", "--process", process_file, j->container_id,
                          NULL);
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

/* The first non-empty line of the panic log, or NULL when it is empty (or cannot be read). */
static char *panic_report(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        char buf[4096];
        ssize_t n;

        if (!path)
                return NULL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return NULL;
        n = loop_read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return NULL;
        buf[n] = 0;
        return runtime_output_line(buf, false);
}

/* The sandbox process is the container's init, and it reports its payload's end as its exit status (an
 * application killed by signal N as 128 + N, measured): a sandbox that ended by a signal was killed itself,
 * from outside (the payload has no way to it). A sentry that crashed exits 2, as a payload's `exit 2` does,
 * but it has written its report to the panic log first, which is otherwise empty. */
static int runsc_init_failed(const RuntimeJob *j, const siginfo_t *init, char **ret_reason) {
        _cleanup_free_ char *report = NULL;

        if (init->si_code == CLD_KILLED || init->si_code == CLD_DUMPED) {
                const char *name = sigabbrev_np(init->si_status);
                *ret_reason = strdupf("the gVisor sandbox process (pid %d) was killed by SIG%s", (int) init->si_pid,
                                      name ?: "?");
                return *ret_reason ? 1 : -ENOMEM;
        }
        report = panic_report(j->panic_log);
        if (!report)
                return 0;
        *ret_reason = strdupf("the gVisor sandbox crashed (it exited %d and reported: %s)", init->si_status, report);
        return *ret_reason ? 1 : -ENOMEM;
}

/* Probe directories (runsc_platform_reason()) whose prober is gone: a supervisor killed during the probe
 * leaves its own behind. Pid reuse only keeps one longer. */
static void sweep_probe_dirs(void) {
        const char *base = strrchr(PROBE_DIR_PREFIX, '/') + 1;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t len = strlen(base);

        d = opendir("/tmp");
        if (!d)
                return;
        while ((de = readdir(d))) {
                char *end;
                long pid;

                if (strncmp(de->d_name, base, len) != 0 || de->d_name[len] != '.')
                        continue;
                pid = strtol(de->d_name + len + 1, &end, 10);
                if (end == de->d_name + len + 1 || *end != '.' || pid <= 0 || pid > INT_MAX)
                        continue;
                if (kill((pid_t) pid, 0) < 0 && errno == ESRCH)
                        (void) rm_rf_at(dirfd(d), de->d_name);
        }
}

static void runsc_forget(const RuntimeJob *j) {
        _cleanup_free_ char *p = NULL, *sock = NULL;
        if (asprintf(&p, "%s/%s_sandbox:%s.lock", j->state_root, j->container_id, j->container_id) >= 0)
                (void) unlink(p);
        /* The sandbox's control socket: left behind when the sandbox was killed before it could remove it. */
        if (asprintf(&sock, "%s/runsc-%s.sock", j->state_root, j->container_id) >= 0)
                (void) unlink(sock);
        sweep_probe_dirs();
}

/* The seccomp profile in the form gVisor's converter reads as pond means it (runsc-seccomp.c). */
static int runsc_adjust_config(const ResolvedPolicy *r, json_object *config) {
        json_object *seccomp = json_get(json_get(config, "linux"), "seccomp");
        _cleanup_free_ char *err = NULL;
        int k;

        if (!seccomp)
                return r->confined ? -EINVAL : 0;
        k = runsc_seccomp_adapt(seccomp, &err);
        if (k < 0)
                log_debug("runsc: the seccomp profile cannot be expressed: %s", err ?: "?");
        return k;
}

/* A gVisor sandbox's host tasks per payload task, and its fixed share (sentry, gofer, Go runtime threads):
 * measured with a fork bomb and a thread bomb held at nproc (docs/threat-model.md, "Task limits"). */
#define RUNSC_HOST_TASKS_PER_TASK 8
#define RUNSC_HOST_TASKS_BASE 256

/* The host-side limit bounds the sentry, gofer and systrap stubs (a stub process per guest address space,
 * and their threads): sized so that a payload held at its nproc can never make the sandbox itself fail to
 * create a thread (gVisor issue 2490). */
static uint64_t runsc_host_tasks(uint64_t pids_limit) {
        return pids_limit * RUNSC_HOST_TASKS_PER_TASK + RUNSC_HOST_TASKS_BASE;
}

const RuntimeProvider runtime_runsc = {
        .name = "runsc",
        .locate = runsc_locate,
        .probe = runsc_probe,
        .check = runsc_check,
        .create_argv = runsc_create_argv,
        .start_argv = runsc_start_argv,
        .start_child_setup = runsc_start_child_setup,
        .delete_argv = runsc_delete_argv,
        .exec_argv = runsc_exec_argv,
        /* measured: `runsc create` passes the container's init its stdio and no other fd */
        .init_channel = RUNTIME_INIT_CHANNEL_STDIN,
        .has_state = runsc_has_state,
        .forget = runsc_forget,
        .init_failed = runsc_init_failed,
        .adjust_config = runsc_adjust_config,
        .console_socket = true,
        .proc_view = VIEW_SOURCE_GVISOR,
        /* measured (tests/integration/test-landlock.sh): landlock_create_ruleset is ENOSYS in the Sentry of
         * runsc 20240729 */
        .landlock_absent = "gVisor implements no Landlock (landlock_create_ruleset: ENOSYS)",
        .host_tasks = runsc_host_tasks,
        .init_killable_inside = true,
        .watch_task_set = true,
};
