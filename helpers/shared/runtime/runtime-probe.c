/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runtime-probe.c: what the providers' probe() share. A binary that exists proves nothing (a runtime can be
 * present and broken, or lack the kernel support it needs), so each provider runs a trivial `true`
 * container: runc and kata-runtime from a minimal bundle built here from scratch, runsc through `runsc do`
 * (runsc.c). */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "runtime/runtime.h"

#define RUNTIME_DELETE_PROBE_USEC (10ULL * 1000 * 1000)

void runtime_probe_done(RuntimeProbe *p) {
        free(p->platform);
        free(p->reason);
        *p = (RuntimeProbe) {};
}

char *runtime_output_line(const char *out, bool last) {
        const char *best = NULL;
        size_t best_len = 0;

        for (const char *p = out ?: ""; *p;) {
                size_t n = strcspn(p, "\n");
                if (n > 0 && strspn(p, " \t\r") < n) {
                        best = p;
                        best_len = n < 200 ? n : 200;
                        if (!last)
                                break;
                }
                p += n + (p[n] == '\n');
        }
        return best ? strndup(best, best_len) : strdup("(no output)");
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
        _cleanup_free_ char *bundle = NULL;
        _cleanup_close_ int dfd = -EBADF;
        const char *text;
        int r;

        if (asprintf(&bundle, "%s/bundle", dir) < 0)
                return -ENOMEM;
        if (!config || !(text = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN)))
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

void runtime_probe_run(char **argv, uint64_t timeout_usec, RuntimeProbe *ret) {
        _cleanup_free_ char *out = NULL, *line = NULL;
        int k = runtime_exec_output(argv, timeout_usec, &out);

        if (k == 0) {
                ret->works = true;
                return;
        }
        line = runtime_output_line(out, true);
        if (k < 0) {
                if (asprintf(&ret->reason, "trivial container could not be started: %s", strerror(-k)) < 0)
                        ret->reason = NULL;
        } else if (asprintf(&ret->reason, "trivial container failed (exit status %d): %s", k,
                            line ?: "?") < 0)
                ret->reason = NULL;
}

void runtime_probe_oci_cli(const char *binary, const char *tmpdir, uint64_t timeout_usec, RuntimeProbe *ret) {
        _cleanup_free_ char *bundle = NULL, *state = NULL, *id = NULL;
        int k;

        if (asprintf(&state, "%s/state", tmpdir) < 0 || asprintf(&id, "probe-%d", (int) getpid()) < 0)
                return;
        k = bundle_create(tmpdir, &bundle);
        if (k < 0) {
                if (asprintf(&ret->reason, "could not build the probe bundle: %s", strerror(-k)) < 0)
                        ret->reason = NULL;
                return;
        }
        char *argv[] = { (char *) binary, (char *) "--root", state, (char *) "run", (char *) "--bundle",
                         bundle, id, NULL };
        runtime_probe_run(argv, timeout_usec, ret);
        if (!ret->works) {
                /* A killed or failed run may leave its container behind; the state dir goes with tmpdir. */
                char *del[] = { (char *) binary, (char *) "--root", state, (char *) "delete",
                                (char *) "--force", id, NULL };
                (void) runtime_exec_output(del, RUNTIME_DELETE_PROBE_USEC, NULL);
        }
}
