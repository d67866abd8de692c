/* probe-backend.c: whether each backend really runs a container here. A binary that exists proves
 * nothing (a runtime can be present and broken, or lack the kernel support it needs), so the probe runs a
 * trivial `true` container under it: runc and kata from a minimal bundle built from scratch, runsc
 * through `runsc do` on each platform in order of preference. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "config.h"
#include "fileio.h"
#include "log.h"
#include "probe.h"
#include "runtime.h"

#define PROBE_OUTPUT_MAX (64 * 1024)
#define PROBE_DEFAULT_TIMEOUT_USEC (30ULL * 1000 * 1000)
#define MIN(a, b) ((a) < (b) ? (a) : (b))

char *probe_strdupf(const char *fmt, ...) {
        char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
#pragma GCC diagnostic pop
        va_end(ap);
        return s;
}

static _noreturn_ void run_child(char **argv, int out) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

        if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
            dup2(out, STDERR_FILENO) < 0)
                _exit(127);
        runtime_exec_child(argv);
}

/* Collects the child's output until it exits or the deadline passes. Helpers a runtime leaves behind
 * may hold the pipe open, so the child's exit (its pidfd), not EOF, ends the wait. */
static void collect_output(pid_t pid, int pidfd, int fd, uint64_t timeout_usec, char *buf, size_t *len) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + timeout_usec;
        bool exited = false;

        (void) fcntl(fd, F_SETFL, O_NONBLOCK);
        for (;;) {
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
                uint64_t now = clock_usec(CLOCK_MONOTONIC);
                char scratch[4096];
                ssize_t n;

                if (!exited && now >= deadline) {
                        log_debug("probe: child %d timed out, killing it", (int) pid);
                        kill(pid, SIGKILL);
                        return;
                }
                if (poll(p, 2, exited ? 0 : (int) ((deadline - now) / 1000 + 1)) < 0 && errno != EINTR)
                        return;
                n = read(fd, scratch, sizeof scratch);
                if (n > 0) {
                        size_t keep = MIN((size_t) n, PROBE_OUTPUT_MAX - *len);
                        memcpy(buf + *len, scratch, keep);
                        *len += keep;
                        continue;
                }
                if (n == 0 || exited)
                        return;
                if (p[1].revents & POLLIN)
                        exited = true; /* one more pass drains what is buffered */
        }
}

int probe_run(char **argv, uint64_t timeout_usec, char **ret_output) {
        _cleanup_close_ int pidfd = -EBADF, rd = -EBADF, wr = -EBADF;
        _cleanup_free_ char *buf = malloc(PROBE_OUTPUT_MAX + 1);
        int pipefd[2], status;
        size_t len = 0;
        pid_t pid;

        if (!buf)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        rd = pipefd[0];
        wr = pipefd[1];
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                run_child(argv, wr);
        wr = safe_close(wr);
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return -errno;
        }
        collect_output(pid, pidfd, rd, timeout_usec, buf, &len);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        buf[len] = 0;
        if (ret_output)
                *ret_output = TAKE_PTR(buf);
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

/* The first (version) or last (error) non-empty line of a command's output, for a report. */
static char *output_line(const char *out, bool last) {
        const char *best = NULL;
        size_t best_len = 0;

        for (const char *p = out ?: ""; *p;) {
                size_t n = strcspn(p, "\n");
                if (n > 0 && strspn(p, " \t\r") < n) {
                        best = p;
                        best_len = MIN(n, (size_t) 200);
                        if (!last)
                                break;
                }
                p += n + (p[n] == '\n');
        }
        return best ? strndup(best, best_len) : strdup("(no output)");
}

static void backend_version(ProbeBackendResult *r) {
        _cleanup_free_ char *out = NULL;
        char *argv[] = { r->path, (char *) "--version", NULL };

        if (probe_run(argv, 10 * 1000 * 1000, &out) == 0)
                r->version = output_line(out, false);
}

/* A rootfs of nothing but mount points and the usual /usr-merge symlinks; /usr comes in read-only. */
static int bundle_rootfs(const char *bundle) {
        static const char *const dirs[] = {
                "rootfs", "rootfs/usr", "rootfs/proc", "rootfs/dev", "rootfs/tmp",
        };
        static const char *const links[][2] = {
                { "usr/bin", "rootfs/bin" }, { "usr/sbin", "rootfs/sbin" },
                { "usr/lib", "rootfs/lib" }, { "usr/lib64", "rootfs/lib64" },
        };
        _cleanup_close_ int dfd = open(bundle, O_DIRECTORY | O_CLOEXEC);

        if (dfd < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (mkdirat(dfd, dirs[i], 0755) < 0)
                        return -errno;
        for (size_t i = 0; i < ELEMENTSOF(links); i++)
                if (symlinkat(links[i][0], dfd, links[i][1]) < 0)
                        return -errno;
        return 0;
}

static json_object *strings(const char *const *v, size_t n) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < n; i++)
                if (json_object_array_add(a, json_object_new_string(v[i])) < 0)
                        return json_object_put(a), NULL;
        return a;
}

static json_object *mount_entry(const char *dest, const char *type, const char *source,
                                const char *const *opts, size_t n) {
        json_object *m = json_object_new_object();

        if (!m)
                return NULL;
        json_object_object_add(m, "destination", json_object_new_string(dest));
        json_object_object_add(m, "type", json_object_new_string(type));
        json_object_object_add(m, "source", json_object_new_string(source));
        json_object_object_add(m, "options", strings(opts, n));
        return m;
}

static json_object *config_linux(void) {
        static const char *const ns[] = { "pid", "ipc", "uts", "mount", "network" };
        json_object *l = json_object_new_object(), *nss = json_object_new_array();

        for (size_t i = 0; l && nss && i < ELEMENTSOF(ns); i++) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "type", json_object_new_string(ns[i]));
                json_object_array_add(nss, e);
        }
        json_object_object_add(l, "namespaces", nss);
        return l;
}

/* config.json from scratch: `true` as uid 1000, no capabilities, no_new_privs, read-only root. */
static json_object *probe_config(void) {
        static const char *const args[] = { "true" };
        static const char *const env[] = { "PATH=/usr/bin:/bin" };
        static const char *const proc_opts[] = { "nosuid", "noexec", "nodev" };
        static const char *const dev_opts[] = { "nosuid", "strictatime", "mode=755", "size=65536k" };
        static const char *const usr_opts[] = { "rbind", "ro", "nosuid", "nodev" };
        json_object *c = json_object_new_object(), *proc = json_object_new_object();
        json_object *user = json_object_new_object(), *root = json_object_new_object();
        json_object *mounts = json_object_new_array();

        json_object_object_add(user, "uid", json_object_new_int(1000));
        json_object_object_add(user, "gid", json_object_new_int(1000));
        json_object_object_add(proc, "user", user);
        json_object_object_add(proc, "args", strings(args, ELEMENTSOF(args)));
        json_object_object_add(proc, "env", strings(env, ELEMENTSOF(env)));
        json_object_object_add(proc, "cwd", json_object_new_string("/"));
        json_object_object_add(proc, "noNewPrivileges", json_object_new_boolean(true));
        json_object_object_add(root, "path", json_object_new_string("rootfs"));
        json_object_object_add(root, "readonly", json_object_new_boolean(true));
        json_object_array_add(mounts, mount_entry("/proc", "proc", "proc", proc_opts, ELEMENTSOF(proc_opts)));
        json_object_array_add(mounts, mount_entry("/dev", "tmpfs", "tmpfs", dev_opts, ELEMENTSOF(dev_opts)));
        json_object_array_add(mounts, mount_entry("/usr", "bind", "/usr", usr_opts, ELEMENTSOF(usr_opts)));
        json_object_object_add(c, "ociVersion", json_object_new_string("1.0.2"));
        json_object_object_add(c, "process", proc);
        json_object_object_add(c, "root", root);
        json_object_object_add(c, "hostname", json_object_new_string("pond-probe"));
        json_object_object_add(c, "mounts", mounts);
        json_object_object_add(c, "linux", config_linux());
        return c;
}

static int bundle_create(const char *dir, char **ret_bundle) {
        _cleanup_json_ json_object *config = probe_config();
        _cleanup_free_ char *bundle = probe_strdupf("%s/bundle", dir);
        _cleanup_close_ int dfd = -EBADF;
        const char *text;
        int r;

        if (!config || !bundle || !(text = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN)))
                return -ENOMEM;
        if (mkdir(bundle, 0755) < 0)
                return -errno;
        r = bundle_rootfs(bundle);
        if (r < 0)
                return r;
        dfd = open(bundle, O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        r = write_file_atomic_at(dfd, "config.json", text, strlen(text), 0644);
        if (r < 0)
                return r;
        *ret_bundle = TAKE_PTR(bundle);
        return 0;
}

/* Runs argv; 0 and works, or the reason it did not (the last line of its output). */
static void trivial_run(ProbeBackendResult *r, char **argv, uint64_t timeout_usec) {
        _cleanup_free_ char *out = NULL, *line = NULL;
        int k = probe_run(argv, timeout_usec, &out);

        if (k == 0) {
                r->works = true;
                return;
        }
        line = output_line(out, true);
        if (k < 0)
                r->reason = probe_strdupf("trivial container could not be started: %s", strerror(-k));
        else
                r->reason = probe_strdupf("trivial container failed (exit status %d): %s", k, line ?: "?");
}

/* runc and kata-runtime share the OCI CLI: --root STATE run --bundle B ID. */
static void probe_oci_cli(ProbeBackendResult *r, const char *tmp, uint64_t timeout_usec) {
        _cleanup_free_ char *bundle = NULL, *state = probe_strdupf("%s/state", tmp);
        _cleanup_free_ char *id = probe_strdupf("probe-%d", (int) getpid());
        int k;

        if (!state || !id)
                return;
        k = bundle_create(tmp, &bundle);
        if (k < 0) {
                r->reason = probe_strdupf("could not build the probe bundle: %s", strerror(-k));
                return;
        }
        char *argv[] = { r->path, (char *) "--root", state, (char *) "run", (char *) "--bundle", bundle, id,
                         NULL };
        trivial_run(r, argv, timeout_usec);
        if (!r->works) {
                /* A killed or failed run may leave its container behind; the state dir goes with tmp. */
                char *del[] = { r->path, (char *) "--root", state, (char *) "delete", (char *) "--force", id,
                                NULL };
                (void) probe_run(del, 10 * 1000 * 1000, NULL);
        }
}

/* systrap is gVisor's fast platform but unknown to older runsc; ptrace works wherever ptrace does. */
static void probe_runsc(ProbeBackendResult *r, const char *tmp, uint64_t timeout_usec) {
        static const char *const platforms[] = { "systrap", "ptrace" };
        _cleanup_free_ char *tried = NULL;

        for (size_t i = 0; i < ELEMENTSOF(platforms); i++) {
                _cleanup_free_ char *root = probe_strdupf("%s/runsc-%s", tmp, platforms[i]);
                _cleanup_free_ char *opt = probe_strdupf("--platform=%s", platforms[i]);
                char *prev;

                if (!root || !opt || mkdir(root, 0700) < 0)
                        return;
                char *argv[] = { r->path, (char *) "--root", root, (char *) "--network=none", opt,
                                 (char *) "do", (char *) "true", NULL };
                free(r->reason);
                r->reason = NULL;
                trivial_run(r, argv, timeout_usec);
                if (r->works) {
                        r->platform = strdup(platforms[i]);
                        return;
                }
                prev = tried;
                tried = probe_strdupf("%s%s%s: %s", prev ?: "", prev ? "; " : "", platforms[i], r->reason);
                free(prev);
        }
        free(r->reason);
        r->reason = TAKE_PTR(tried);
}

static const char *kata_candidates[] = { "containerd-shim-kata-v2", "kata-runtime" };

static int backend_locate(ProbeBackend b, const ProbeOptions *o, ProbeBackendResult *r) {
        const char *name = b == PROBE_BACKEND_RUNC ? (o->runc ?: POND_RUNC) :
                           b == PROBE_BACKEND_RUNSC ? (o->runsc ?: "runsc") :
                           (o->kata ?: getenv("POND_KATA_RUNTIME"));

        if (name && *name) {
                if (find_binary(name, &r->path) >= 0)
                        return 0;
                r->reason = probe_strdupf("%s not found or not executable", name);
                return -ENOENT;
        }
        for (size_t i = 0; i < ELEMENTSOF(kata_candidates); i++)
                if (find_binary(kata_candidates[i], &r->path) >= 0)
                        return 0;
        r->reason = strdup("no Kata runtime: neither containerd-shim-kata-v2 nor kata-runtime is in PATH and "
                           "POND_KATA_RUNTIME is not set");
        return -ENOENT;
}

/* Kata is a VM: without KVM it cannot run at all, and the containerd shim cannot be driven without
 * containerd, so only kata-runtime's OCI CLI gets a trivial run. */
static bool kata_runnable(ProbeBackendResult *r) {
        _cleanup_close_ int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        const char *base = strrchr(r->path, '/') ? strrchr(r->path, '/') + 1 : r->path;

        if (kvm < 0) {
                r->reason = probe_strdupf("Kata requires KVM: /dev/kvm: %s", strerror(errno));
                return false;
        }
        if (streq(base, "containerd-shim-kata-v2")) {
                r->platform = strdup("containerd-shim-v2");
                r->reason = strdup("containerd-shim-kata-v2 runs only under containerd; pond drives "
                                   "kata-runtime");
                return false;
        }
        r->platform = strdup("kata-runtime");
        return true;
}

void probe_backend(ProbeBackend b, const ProbeOptions *o, ProbeBackendResult *r) {
        uint64_t timeout = o->timeout_usec ?: PROBE_DEFAULT_TIMEOUT_USEC;
        char tmp[] = "/tmp/pond-probe.XXXXXX";

        *r = (ProbeBackendResult) {};
        if (backend_locate(b, o, r) < 0)
                return;
        r->present = true;
        backend_version(r);
        if (b == PROBE_BACKEND_KATA && !kata_runnable(r))
                return;
        if (!mkdtemp(tmp)) {
                r->reason = probe_strdupf("cannot create a temporary directory: %s", strerror(errno));
                return;
        }
        if (b == PROBE_BACKEND_RUNSC)
                probe_runsc(r, tmp, timeout);
        else
                probe_oci_cli(r, tmp, timeout);
        if (rm_rf_at(AT_FDCWD, tmp) < 0)
                log_debug("probe: could not remove %s", tmp);
}
