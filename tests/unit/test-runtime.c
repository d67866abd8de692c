/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-runtime: the one provider table (every provider complete, iterated in order, looked up by name
 * only), each provider's binary lookup and its one candidate list, a policy naming a backend no provider
 * implements refused at load, and the runner every runtime step goes through: exit status, timeout, a
 * clean environment and no inherited fds. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "config.h"
#include "policy/policy.h"
#include "runtime/runtime.h"
#include "tests.h"

#define POLICY_DIR POND_SOURCE_ROOT "/policy"

TEST(table_lists_every_provider) {
        static const char *const names[] = { "runc", "runsc", "kata" };
        size_t i = 0;

        ASSERT_EQ(ELEMENTSOF(names), runtime_provider_count());
        RUNTIME_PROVIDER_FOREACH(p) {
                ASSERT_TRUE(i < ELEMENTSOF(names));
                ASSERT_STREQ(names[i], p->name);
                ASSERT_TRUE(runtime_provider_find(names[i]) == p);
                ASSERT_TRUE(p->locate && p->probe && p->check && p->create_argv && p->start_argv &&
                            p->delete_argv && p->has_state);
                i++;
        }
        ASSERT_EQ(ELEMENTSOF(names), i);
        ASSERT_TRUE(runtime_provider_find("runc ") == NULL);
}

static void touch_exe(const char *dir, const char *name) {
        char p[256];
        int fd;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
        safe_close(fd);
}

static void rm_in(const char *dir, const char *name) {
        char p[256];

        snprintf(p, sizeof p, "%s/%s", dir, name);
        (void) unlink(p);
}

/* locate() with PATH set to dir alone (and POND_KATA_RUNTIME unset); PATH is restored before returning. */
static int locate_in(const RuntimeProvider *p, const char *dir, char **ret_path, char **ret_reason) {
        _cleanup_free_ char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
        int r;

        setenv("PATH", dir, 1);
        unsetenv("POND_KATA_RUNTIME");
        r = p->locate(ret_path, ret_reason);
        if (saved)
                setenv("PATH", saved, 1);
        else
                unsetenv("PATH");
        return r;
}

/* kata: kata-runtime (what pond drives) before the containerd shim (found so the probe can say why it
 * does not work); neither: a reason naming both and the variable. */
TEST(kata_candidates_in_order) {
        char dir[] = "/tmp/pond-test-runtime.XXXXXX";
        _cleanup_free_ char *both = NULL, *shim = NULL, *none = NULL, *reason = NULL;
        int r_both, r_shim, r_none;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        touch_exe(dir, "kata-runtime");
        touch_exe(dir, "containerd-shim-kata-v2");
        r_both = locate_in(&runtime_kata, dir, &both, NULL);
        rm_in(dir, "kata-runtime");
        r_shim = locate_in(&runtime_kata, dir, &shim, NULL);
        rm_in(dir, "containerd-shim-kata-v2");
        r_none = locate_in(&runtime_kata, dir, &none, &reason);
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
        ASSERT_OK(r_both);
        ASSERT_CONTAINS("/kata-runtime", both);
        ASSERT_OK(r_shim);
        ASSERT_CONTAINS("/containerd-shim-kata-v2", shim);
        ASSERT_ERROR(ENOENT, r_none);
        ASSERT_TRUE(none == NULL);
        ASSERT_CONTAINS("no Kata runtime", reason);
        ASSERT_CONTAINS("POND_KATA_RUNTIME", reason);
}

TEST(missing_binaries_say_what_was_looked_for) {
        char dir[] = "/tmp/pond-test-runtime.XXXXXX";
        _cleanup_free_ char *p_runc = NULL, *p_runsc = NULL, *p_kata = NULL;
        _cleanup_free_ char *runc = NULL, *runsc = NULL, *kata = NULL;
        int r_runc, r_runsc, r_kata;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        r_runc = locate_in(&runtime_runc, dir, &p_runc, &runc);
        r_runsc = locate_in(&runtime_runsc, dir, &p_runsc, &runsc);
        setenv("POND_KATA_RUNTIME", "/nonexistent/kata-runtime", 1);
        r_kata = runtime_kata.locate(&p_kata, &kata);
        unsetenv("POND_KATA_RUNTIME");
        rmdir(dir);
        /* -Drunc= may name an absolute path, which PATH does not hide. */
        if (!strchr(POND_RUNC, '/'))
                ASSERT_TRUE(r_runc < 0 && p_runc == NULL);
        if (r_runc < 0)
                ASSERT_CONTAINS("not found or not executable", runc);
        ASSERT_TRUE(r_runsc < 0 && p_runsc == NULL);
        ASSERT_STREQ("runsc not found or not executable", runsc);
        ASSERT_TRUE(r_kata < 0 && p_kata == NULL);
        ASSERT_STREQ("/nonexistent/kata-runtime not found or not executable", kata);
}

/* A copy of the shipped policy in which profile "none" also allows a backend no provider implements. */
static int policy_with_unknown_backend(const char *dir) {
        _cleanup_json_ json_object *profiles = json_object_from_file(POLICY_DIR "/profiles.json");
        _cleanup_json_ json_object *seccomp = json_object_from_file(POLICY_DIR "/seccomp.json");
        json_object *backends = NULL, *profs = NULL, *none = NULL, *allowed = NULL;
        char p[256];

        if (!profiles || !seccomp || !json_object_object_get_ex(profiles, "backends", &backends) ||
            !json_object_object_get_ex(profiles, "profiles", &profs) ||
            !json_object_object_get_ex(profs, "none", &none) ||
            !json_object_object_get_ex(none, "backends", &allowed))
                return -EINVAL;
        json_object_object_add(backends, "firecracker", json_object_new_object());
        json_object_array_add(allowed, json_object_new_string("firecracker"));
        snprintf(p, sizeof p, "%s/profiles.json", dir);
        if (json_object_to_file(p, profiles) < 0)
                return -EIO;
        snprintf(p, sizeof p, "%s/seccomp.json", dir);
        return json_object_to_file(p, seccomp) < 0 ? -EIO : 0;
}

TEST(policy_refuses_a_backend_without_provider) {
        char dir[] = "/tmp/pond-test-runtime.XXXXXX";
        _cleanup_(policy_freep) Policy *shipped = NULL, *p = NULL;
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        int r;

        ASSERT_OK(policy_load(POLICY_DIR, &shipped, &err2));
        ASSERT_TRUE(mkdtemp(dir) != NULL);
        r = policy_with_unknown_backend(dir);
        if (r >= 0)
                r = policy_load(dir, &p, &err);
        (void) rm_rf_at(AT_FDCWD, dir);
        ASSERT_ERROR(EINVAL, r);
        ASSERT_TRUE(p == NULL);
        ASSERT_CONTAINS("profile none", err);
        ASSERT_CONTAINS("'firecracker'", err);
        ASSERT_CONTAINS("runc, runsc, kata", err);
}

TEST(exec_status_and_timeout) {
        char *three[] = { (char *) "sh", (char *) "-c", (char *) "exit 3", NULL };
        char *slow[] = { (char *) "sleep", (char *) "10", NULL };
        char *missing[] = { (char *) "/nonexistent/runtime", NULL };
        uint64_t t0;

        ASSERT_EQ(3, runtime_exec(three, 5 * 1000 * 1000));
        ASSERT_EQ(127, runtime_exec(missing, 5 * 1000 * 1000));
        t0 = clock_usec(CLOCK_MONOTONIC);
        ASSERT_ERROR(ECANCELED, runtime_exec(slow, 200 * 1000));
        ASSERT_TRUE(clock_usec(CLOCK_MONOTONIC) - t0 < 5 * 1000 * 1000);
}

static int setup_fails(void) {
        return -EPERM;
}

static int setup_marks(void) {
        /* only system calls, as in the supervisor's child */
        return mkdir("/tmp/pond-test-runtime-setup-mark", 0700) < 0 ? -errno : 0;
}

/* A start step's child setup runs in the child before the exec; its failure is the step's 127 and nothing
 * of argv runs. */
TEST(exec_setup_runs_in_the_child_first) {
        const char *mark = "/tmp/pond-test-runtime-setup-mark";
        char *check[] = { (char *) "sh", (char *) "-c", (char *) "test -d /tmp/pond-test-runtime-setup-mark", NULL };
        char *write_ran[] = { (char *) "sh", (char *) "-c", (char *) "echo ran >/tmp/pond-test-runtime-setup-ran",
                          NULL };

        (void) rmdir(mark);
        (void) unlink("/tmp/pond-test-runtime-setup-ran");
        ASSERT_EQ(127, runtime_exec_setup(write_ran, 5 * 1000 * 1000, setup_fails));
        ASSERT_TRUE(access("/tmp/pond-test-runtime-setup-ran", F_OK) < 0 && errno == ENOENT);
        ASSERT_EQ(0, runtime_exec_setup(check, 5 * 1000 * 1000, setup_marks));
        ASSERT_OK(rmdir(mark));
        ASSERT_EQ(1, runtime_exec_setup(check, 5 * 1000 * 1000, NULL)); /* no setup: no mark */
}

TEST(exec_output_captures_and_times_out) {
        _cleanup_free_ char *out = NULL;
        char *echo[] = { (char *) "sh", (char *) "-c", (char *) "echo hello; echo err >&2; exit 3", NULL };
        char *slow[] = { (char *) "sleep", (char *) "10", NULL };
        uint64_t t0;

        ASSERT_EQ(3, runtime_exec_output(echo, 5 * 1000 * 1000, &out));
        ASSERT_CONTAINS("hello", out);
        ASSERT_CONTAINS("err", out);
        t0 = clock_usec(CLOCK_MONOTONIC);
        ASSERT_EQ(128 + 9, runtime_exec_output(slow, 200 * 1000, NULL));
        ASSERT_TRUE(clock_usec(CLOCK_MONOTONIC) - t0 < 5 * 1000 * 1000);
}

/* The runtime sees none of the caller's environment (NOTIFY_SOCKET would make runc wait for READY=1) and
 * none of its fds. */
TEST(exec_clean_environment_and_fds) {
        char *env[] = { (char *) "sh", (char *) "-c", (char *) "test -z \"$NOTIFY_SOCKET\"", NULL };
        char *fds[] = { (char *) "sh", (char *) "-c", (char *) "test ! -e /proc/self/fd/57", NULL };
        int fd = open("/dev/null", O_RDONLY), r_env, r_fds;

        setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
        r_env = runtime_exec_output(env, 5 * 1000 * 1000, NULL);
        unsetenv("NOTIFY_SOCKET");
        ASSERT_TRUE(fd >= 0 && dup2(fd, 57) == 57); /* no O_CLOEXEC: only the fork helper closes it */
        r_fds = runtime_exec(fds, 5 * 1000 * 1000);
        close(57);
        safe_close(fd);
        ASSERT_EQ(0, r_env);
        ASSERT_EQ(0, r_fds);
}

TEST(output_line) {
        _cleanup_free_ char *first = runtime_output_line("\n  \nrunc version 1.1\ncommit: x\n", false);
        _cleanup_free_ char *last = runtime_output_line("a\nerror: it failed\n\n", true);
        _cleanup_free_ char *none = runtime_output_line(NULL, true);

        ASSERT_STREQ("runc version 1.1", first);
        ASSERT_STREQ("error: it failed", last);
        ASSERT_STREQ("(no output)", none);
}

TEST_MAIN()
