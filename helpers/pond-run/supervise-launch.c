/* supervise-launch.c: from an accepted job to a running container. The runtime's create step is exec'd by
 * a child that systemd has already moved into pond-ID.scope, so the container's cgroup nests below the
 * scope, while this supervisor stays in the job's service: an OOM or fork bomb in the payload cannot
 * reach the process that must clean up and sign. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <time.h>

#include "fileio.h"
#include "log.h"
#include "oci.h"
#include "scope.h"
#include "supervise-launch.h"

#define RUNTIME_STEP_USEC (60ULL * 1000 * 1000)

static void *input_hash_thread(void *p) {
        InputHash *h = p;
        h->r = input_sha_compute(h->spec, h->spec_len, h->checkout_fd, h->hex);
        return NULL;
}

/* input_sha covers the checkout as issued: the read-only lower view cannot change under the job, so it
 * is hashed concurrently and the payload does not wait for it. */
static int start_input_hash(Job *j) {
        const char *dir = j->stage.lower ?: j->spec->checkout;

        if (j->input.fixed)
                return 0;
        j->input.spec = j->spec_buf;
        j->input.spec_len = j->spec_len;
        if (dir) {
                j->input.checkout_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (j->input.checkout_fd < 0)
                        return log_error_errno(errno, "Cannot open the checkout %s: %m", dir);
        }
        if (!j->stage.lower && j->spec->checkout) {
                /* Profile none edits in place: no immutable view, so hash before the payload runs. */
                input_hash_thread(&j->input);
                return j->input.r < 0 ? log_error_errno(j->input.r, "Cannot hash the checkout: %m") : 0;
        }
        if (pthread_create(&j->input.thread, NULL, input_hash_thread, &j->input) != 0)
                return log_error_errno(EAGAIN, "Cannot start the input hash: %m");
        j->input.started = true;
        return 0;
}

/* What the job is told about its network: where the proxy is (allowlist), that the broker is reached
 * directly, and where the image's CA bundle is, so pip, npm, git and curl work unchanged. */
static int posture_environment(Job *j) {
        char host[INET_ADDRSTRLEN];
        const char *ca = "/etc/ssl/certs/ca-certificates.crt";
        char *v[16] = {};
        size_t n = 0;
        int r = 0;

        inet_ntop(AF_INET, &j->net.lease.host_addr, host, sizeof host);
        if (j->resolved->net == NET_ALLOWLIST) {
                static const char *const proxy_vars[] = { "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy" };
                for (size_t i = 0; r >= 0 && i < ELEMENTSOF(proxy_vars); i++)
                        r = asprintf(&v[n++], "%s=http://%s:%u", proxy_vars[i], host, NET_PROXY_PORT);
        }
        if (r >= 0)
                r = asprintf(&v[n++], "NO_PROXY=%s", host);
        if (r >= 0)
                r = asprintf(&v[n++], "no_proxy=%s", host);
        if (r >= 0)
                r = asprintf(&v[n++], "POND_BROKER_ADDR=%s:%u", host, NET_BROKER_PORT);
        static const char *const ca_vars[] = { "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                                               "GIT_SSL_CAINFO", "CURL_CA_BUNDLE" };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ca_vars); i++)
                r = asprintf(&v[n++], "%s=%s", ca_vars[i], ca);
        j->posture_env = calloc(n + 1, sizeof(char *));
        if (r < 0 || !j->posture_env) {
                for (size_t i = 0; i < n; i++)
                        free(v[i]);
                return -ENOMEM;
        }
        memcpy(j->posture_env, v, n * sizeof(char *));
        return 0;
}

/* Confined postures: the job's own namespace and the host-side rules, before anything runs. */
static int prepare_network(Job *j) {
        static const uint16_t broker_only[] = { NET_BROKER_PORT }, allowlist[] = { NET_BROKER_PORT, NET_PROXY_PORT };
        _cleanup_free_ char *err = NULL;
        int r;

        if (j->resolved->net == NET_OPEN)
                return 0;
        r = job_net_setup(j->id, j->paths.rundir, j->resolved->net == NET_ALLOWLIST ? allowlist : broker_only,
                          j->resolved->net == NET_ALLOWLIST ? 2 : 1, &j->net, &err);
        if (r < 0) {
                j->reason = strdup("cannot set up the job's network");
                return log_error_errno(r, "Cannot set up the job's network: %s", err ?: strerror(-r));
        }
        j->net_up = true;
        r = posture_environment(j);
        if (r < 0)
                return r;
        return job_broker_configure(j);
}

static int write_bundle(Job *j) {
        _cleanup_json_ json_object *config = NULL;
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *cgpath = NULL;
        const char *s;
        OciPaths paths = {
                .rootfs = j->image.rootfs,
                .host_usr = j->image.host_usr,
                .etc = j->image.etc,
                .workspace = j->stage.workspace,
                .workspace_readonly = j->stage.readonly,
                .hostname = IMAGE_HOSTNAME,
                .netns = j->net_up ? j->net.netns_path : NULL,
                .posture_env = j->posture_env,
        };
        int r;

        /* Absolute, below the scope. A relative path would nest below the runtime's cgroup in each
         * hierarchy, but on a hybrid (v1) host systemd realizes the scope only in some of them: in the
         * others (the unified one included) the payload would land outside the scope, which systemd would
         * then see as empty and stop. */
        if (asprintf(&cgpath, "%s/payload", j->paths.scope_cgroup) < 0)
                return -ENOMEM;
        paths.cgroups_path = cgpath;
        r = oci_config_build(j->resolved, j->spec, j->policy->seccomp, &paths, &config);
        if (r >= 0 && j->provider->adjust_config)
                r = j->provider->adjust_config(j->resolved, config);
        if (r < 0)
                return log_error_errno(r, "Cannot build the OCI config: %m");
        if (mkdir(j->paths.bundle, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create %s: %m", j->paths.bundle);
        dfd = open(j->paths.bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        s = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        return write_file_atomic_at(dfd, "config.json", s, strlen(s), 0600);
}

static int prepare(Job *j) {
        _cleanup_free_ char *err = NULL;
        int r;

        sd_notify(false, "STATUS=staging");
        r = mkdir_p(j->paths.runtime_root, 0700);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", j->paths.runtime_root);
        r = mkdir_p(j->paths.run, 0700);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", j->paths.run);
        r = stage_setup(j->paths.run, j->spec->checkout, j->resolved->fs, j->resolved->tmpfs_bytes, &j->stage);
        if (r < 0) {
                j->reason = strdup("cannot stage the checkout");
                return log_error_errno(r, "Cannot stage the checkout %s: %m", j->spec->checkout ?: "(none)");
        }
        j->staged = true;
        r = j->image.rootfs ? 0 : image_prepare(j->resolved->image, j->paths.images, j->paths.run, &j->image, &err);
        if (r < 0) {
                j->reason = err ? TAKE_PTR(err) : strdup("cannot prepare the image");
                return log_error_errno(r, "Cannot prepare image %s: %s", j->resolved->image, j->reason ?: "");
        }
        r = prepare_network(j);
        if (r < 0)
                return r;
        r = write_bundle(j);
        if (r < 0)
                return r;
        return start_input_hash(j);
}

/* The child that becomes the runtime's create step: it waits until systemd has moved it into the scope. */
static int fork_runtime_create(Job *j, char **argv, int *ret_go_fd) {
        int go[2];
        pid_t pid;

        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                safe_close(go[0]);
                safe_close(go[1]);
                return -errno;
        }
        if (pid == 0) {
                char c;
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(j->out_pipe[1], STDOUT_FILENO) < 0 ||
                    dup2(j->err_pipe[1], STDERR_FILENO) < 0)
                        _exit(127);
                if (read(go[0], &c, 1) != 1)
                        _exit(127); /* the supervisor gave up: never run outside the scope */
                runtime_exec_child(argv);
        }
        safe_close(go[0]);
        j->create_pid = pid;
        *ret_go_fd = go[1];
        return 0;
}

static int wait_create(Job *j) {
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, j->create_pid, 0);
        int status;

        if (pidfd >= 0) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                if (poll(&p, 1, (int) (RUNTIME_STEP_USEC / 1000)) == 0)
                        kill(j->create_pid, SIGKILL);
        }
        while (waitpid(j->create_pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        j->create_pid = 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EIO;
        return 0;
}

static int read_init_pid(Job *j, const char *pid_file) {
        _cleanup_free_ char *buf = NULL;
        int pid, r;

        r = read_full_file(pid_file, 64, &buf, NULL);
        if (r < 0)
                return r;
        if (sscanf(buf, "%d", &pid) != 1 || pid <= 1)
                return -EINVAL;
        /* It must be ours (re-parented to this subreaper), or waiting for it would be meaningless. */
        if (waitid(P_PID, (id_t) pid, &(siginfo_t) {}, WEXITED | WNOHANG | WNOWAIT) < 0)
                return -ECHILD;
        j->init_pid = pid;
        return 0;
}

/* Both levels: the limit may be hit in the payload's own memcg or in the scope's. */
static void watch_oom(Job *j) {
        _cleanup_free_ char *payload = NULL;

        if (asprintf(&payload, "%s/payload", j->paths.scope_cgroup) < 0)
                return;
        if (cgroup_oom_watch(j->paths.scope_cgroup, &j->oom_fds[0]) < 0 ||
            cgroup_oom_watch(payload, &j->oom_fds[1]) < 0)
                log_debug("No v1 memory OOM notification here; relying on the OOM counters.");
}

static const char *bound_service(const Job *j, char **buf) {
        _cleanup_free_ char *unit = NULL;

        if (sd_pid_get_unit(0, &unit) < 0 || asprintf(buf, "pond-job@%s.service", j->id) < 0)
                return NULL;
        return streq(unit, *buf) ? *buf : NULL;
}

static int launch_runtime(Job *j) {
        _cleanup_strv_free_ char **create = NULL, **start = NULL;
        _cleanup_free_ char *pid_file = NULL, *bound = NULL, *desc = NULL, *log_file = NULL;
        _cleanup_close_ int go = -EBADF;
        ScopeLimits limits = { j->resolved->memory_bytes, j->resolved->cpus_milli, j->resolved->pids_limit };
        RuntimeJob rj = { .state_root = j->paths.runtime_root, .bundle = j->paths.bundle,
                          .container_id = j->paths.container, .host_network = j->resolved->net == NET_OPEN,
                          .netns = j->net_up ? j->net.netns_path : NULL };
        int r;

        if (asprintf(&pid_file, "%s/init.pid", j->paths.run) < 0 ||
            asprintf(&log_file, "%s/runtime.log", j->paths.run) < 0 ||
            asprintf(&desc, "pond job %s payload", j->id) < 0)
                return -ENOMEM;
        rj.pid_file = pid_file;
        rj.log_file = log_file;
        r = j->provider->create_argv(&rj, &create);
        if (r >= 0)
                r = j->provider->start_argv(&rj, &start);
        if (r < 0)
                return r;
        if (pipe2(j->out_pipe, O_CLOEXEC) < 0 || pipe2(j->err_pipe, O_CLOEXEC) < 0)
                return -errno;
        r = fork_runtime_create(j, create, &go);
        if (r < 0)
                return log_error_errno(r, "Cannot fork the runtime: %m");
        j->out_pipe[1] = safe_close(j->out_pipe[1]);
        j->err_pipe[1] = safe_close(j->err_pipe[1]);

        r = scope_start(j->bus, j->paths.scope, j->create_pid, &limits, bound_service(j, &bound), desc);
        if (r < 0)
                return log_error_errno(r, "Cannot create the transient scope %s: %m", j->paths.scope);
        r = unit_cgroup_path(j->bus, j->paths.scope, &j->scope_cgroup);
        if (r < 0 || !streq(j->scope_cgroup, j->paths.scope_cgroup))
                return log_error_errno(r < 0 ? r : EXDEV, "Scope %s is not at %s, where the payload's cgroup was "
                                       "configured: refusing to run it elsewhere.", j->paths.scope,
                                       j->paths.scope_cgroup);
        if (write(go, "g", 1) != 1)
                return -errno;
        r = wait_create(j);
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;
                (void) read_full_file(log_file, 16 * 1024, &msg, NULL);
                return log_error_errno(r, "The runtime %s could not create the container: %s",
                                       j->provider->name, msg ?: "(no message)");
        }
        watch_oom(j);
        r = read_init_pid(j, pid_file);
        if (r < 0)
                return log_error_errno(r, "Cannot find the container's init: %m");
        r = job_egress_wait(j);
        if (r >= 0)
                r = job_broker_wait(j);
        if (r < 0)
                return r;
        j->started_usec = clock_usec(CLOCK_REALTIME);
        j->started_mono = clock_usec(CLOCK_MONOTONIC);
        r = runtime_exec(start, RUNTIME_STEP_USEC);
        if (r != 0)
                return log_error_errno(r < 0 ? r : EIO, "The runtime %s could not start the container.",
                                       j->provider->name);
        return 0;
}

int job_launch(Job *j) {
        _cleanup_close_ int log_dfd = -EBADF;
        _cleanup_free_ char *log_dir = NULL;
        int r;

        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return -errno;
        r = sd_bus_open_system(&j->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus: %m");
        r = prepare(j);
        if (r < 0)
                return r;
        if (asprintf(&log_dir, "%s/log", j->paths.spool) < 0)
                return -ENOMEM;
        if (mkdir(log_dir, 0750) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create %s: %m", log_dir);
        log_dfd = open(log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (log_dfd < 0)
                return -errno;
        r = output_log_open(log_dfd, j->id, j->spec->limits.output_bytes, true, &j->log);
        if (r < 0)
                return log_error_errno(r, "Cannot open the job's log: %m");
        j->log_open = true;
        r = job_egress_start(j);
        if (r >= 0)
                r = job_broker_start(j);
        if (r < 0)
                return r;
        sd_notify(false, "STATUS=launching");
        r = launch_runtime(j);
        if (r < 0)
                return r;
        audit_event(&j->audit, POND_EVENT_STARTED, AUDIT_NO_RC, "started: %s in %s (memory %llu, cpus %.2f, "
                    "pids %llu)", j->provider->name, j->paths.scope, (unsigned long long) j->resolved->memory_bytes,
                    j->resolved->cpus_milli / 1000.0, (unsigned long long) j->resolved->pids_limit);
        sd_notifyf(false, "READY=1\nSTATUS=running %s", j->paths.container);
        return 0;
}
