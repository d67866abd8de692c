/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-runsc.c: the gVisor provider's facts about gVisor: the seccomp profile rewritten into what its
 * converter applies as written (ENOSYS as SCMP_ACT_TRACE, everything else untouched, errnos it cannot say
 * refused), run on the real policy/seccomp.json; the release date read from `runsc --version`; and a
 * sandbox's end told apart from its payload's (killed, crashed, or the payload's exit). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/json-util.h"
#include "basic/macro.h"
#include "oci/oci.h"
#include "policy/seccomp-check.h"
#include "runtime/runtime.h"
#include "tests.h"

static json_object *seccomp_policy(void) {
        return json_object_from_file(POND_SOURCE_ROOT "/policy/seccomp.json");
}

static json_object *rule_for(json_object *seccomp, const char *name) {
        json_object *syscalls = json_get(seccomp, "syscalls");

        for (size_t i = 0; i < json_object_array_length(syscalls); i++) {
                json_object *rule = json_object_array_get_idx(syscalls, i), *names = json_get(rule, "names");
                for (size_t k = 0; k < json_object_array_length(names); k++)
                        if (streq(json_object_get_string(json_object_array_get_idx(names, k)), name))
                                return rule;
        }
        return NULL;
}

/* The profile as it stands: clone3 (ENOSYS under runc) becomes SCMP_ACT_TRACE, and nothing else moves. */
TEST(policy_file_adapted) {
        _cleanup_json_ json_object *sc = seccomp_policy(), *orig = seccomp_policy();
        _cleanup_free_ char *err = NULL;
        json_object *syscalls, *before;
        json_object *clone3;

        ASSERT_TRUE(sc && orig);
        ASSERT_OK(seccomp_policy_check(sc, NULL));
        clone3 = rule_for(orig, "clone3");
        ASSERT_STREQ("SCMP_ACT_ERRNO", json_get_str(clone3, "action"));
        ASSERT_EQ(38, json_object_get_int(json_get(clone3, "errnoRet")));

        ASSERT_OK(runsc_seccomp_adapt(sc, &err));
        ASSERT_TRUE(err == NULL);
        clone3 = rule_for(sc, "clone3");
        ASSERT_STREQ("SCMP_ACT_TRACE", json_get_str(clone3, "action"));
        ASSERT_TRUE(json_get(clone3, "errnoRet") == NULL);
        ASSERT_EQ(1, json_object_array_length(json_get(clone3, "names")));

        /* every other rule, the default and the architectures exactly as they were */
        ASSERT_TRUE(json_object_equal(json_get(orig, "architectures"), json_get(sc, "architectures")));
        ASSERT_STREQ(json_get_str(orig, "defaultAction"), json_get_str(sc, "defaultAction"));
        syscalls = json_get(sc, "syscalls");
        before = json_get(orig, "syscalls");
        ASSERT_EQ(json_object_array_length(before), json_object_array_length(syscalls));
        for (size_t i = 0; i < json_object_array_length(syscalls); i++) {
                json_object *a = json_object_array_get_idx(before, i), *b = json_object_array_get_idx(syscalls, i);
                if (a == rule_for(orig, "clone3"))
                        continue;
                EXPECT_TRUE(json_object_equal(a, b));
        }
        /* clone keeps its namespace-flag filter; ptrace and unshare stay refused (no rule: the default) */
        ASSERT_TRUE(json_get(rule_for(sc, "clone"), "args") != NULL);
        ASSERT_TRUE(rule_for(sc, "ptrace") == NULL);
        ASSERT_TRUE(rule_for(sc, "unshare") == NULL);
}

static json_object *parse(const char *s) {
        return json_tokener_parse(s);
}

TEST(errnos_gvisor_cannot_say_refused) {
        _cleanup_json_ json_object *eacces = parse("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
                                                   "{\"names\":[\"chmod\"],\"action\":\"SCMP_ACT_ERRNO\","
                                                   "\"errnoRet\":13}]}");
        _cleanup_json_ json_object *def = parse("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,"
                                                "\"syscalls\":[]}");
        _cleanup_json_ json_object *eperm = parse("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,"
                                                  "\"syscalls\":[{\"names\":[\"chmod\"],"
                                                  "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1}]}");
        _cleanup_free_ char *e1 = NULL, *e2 = NULL;

        ASSERT_ERROR(EOPNOTSUPP, runsc_seccomp_adapt(eacces, &e1));
        ASSERT_CONTAINS("syscalls[0].errnoRet", e1);
        ASSERT_ERROR(EOPNOTSUPP, runsc_seccomp_adapt(def, &e2));
        ASSERT_CONTAINS("defaultErrnoRet", e2);
        /* EPERM is what gVisor says anyway: left as it is */
        ASSERT_OK(runsc_seccomp_adapt(eperm, NULL));
        ASSERT_STREQ("SCMP_ACT_ERRNO", json_get_str(json_object_array_get_idx(json_get(eperm, "syscalls"), 0),
                                                    "action"));
}

/* SCMP_ACT_TRACE is ENOSYS only while no tracer can attach. */
TEST(refused_when_ptrace_allowed) {
        _cleanup_json_ json_object *sc = parse("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
                                               "{\"names\":[\"read\",\"ptrace\"],\"action\":\"SCMP_ACT_ALLOW\"},"
                                               "{\"names\":[\"clone3\"],\"action\":\"SCMP_ACT_ERRNO\","
                                               "\"errnoRet\":38}]}");
        _cleanup_free_ char *err = NULL;

        ASSERT_ERROR(EPERM, runsc_seccomp_adapt(sc, &err));
        ASSERT_CONTAINS("ptrace", err);
}

/* The provider does it to the config it is given (job-write-bundle.c); profile none has no filter. */
TEST(adjust_config) {
        char *cmd[] = { (char *) "true", NULL }, *none[] = { NULL };
        ResolvedPolicy r = { .profile = (char *) "untrusted-code-write", .backend = (char *) "runsc",
                             .tier = (char *) "trusted", .confined = true, .fs = FS_OVERLAY, .net = NET_ALLOWLIST,
                             .memory_bytes = 1ULL << 30, .cpus_milli = 1000, .pids_limit = 256, .host_pids_limit = 256,
                             .tmpfs_bytes = 64ULL << 20, .image = (char *) "host", .nofile = 1024, .nproc = 512 };
        JobSpec s = { .job_id = (char *) "g1", .tenant = (char *) "t", .command = cmd, .env = none, .outputs = none };
        OciPaths p = { .rootfs = "/r", .host_usr = "/usr", .etc = "/e", .workspace = "/w",
                       .cgroups_path = "/pond.slice/pond-g1.scope/payload", .hostname = "pond",
                       .home = "/h" };
        _cleanup_json_ json_object *sc = seccomp_policy(), *c = NULL, *open = NULL;

        ASSERT_TRUE(sc);
        ASSERT_TRUE(runtime_runsc.adjust_config != NULL);
        ASSERT_OK(oci_config_build(&r, &s, sc, &p, &c));
        ASSERT_OK(runtime_runsc.adjust_config(&r, c));
        ASSERT_STREQ("SCMP_ACT_TRACE", json_get_str(rule_for(json_get(json_get(c, "linux"), "seccomp"), "clone3"),
                                                    "action"));
        /* the policy's own object is a copy's source, never changed */
        ASSERT_STREQ("SCMP_ACT_ERRNO", json_get_str(rule_for(sc, "clone3"), "action"));

        r.profile = (char *) "none";
        r.confined = false;
        r.fs = FS_HOST;
        r.net = NET_OPEN;
        ASSERT_OK(oci_config_build(&r, &s, NULL, &p, &open));
        ASSERT_OK(runtime_runsc.adjust_config(&r, open));
        ASSERT_TRUE(json_get(json_get(open, "linux"), "seccomp") == NULL);
}

TEST(release_from_version_output) {
        unsigned rel = 0;

        ASSERT_OK(runsc_release("runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n", &rel));
        ASSERT_EQ(20221219U, rel);
        ASSERT_OK(runsc_release("runsc version 0.0~20240729.0\nspec: 1.0.2-dev\n", &rel));
        ASSERT_EQ(20240729U, rel);
        ASSERT_OK(runsc_release("runsc version release-20250512.0\nspec: 1.1.0\n", &rel));
        ASSERT_EQ(20250512U, rel);
        ASSERT_ERROR(EINVAL, runsc_release("runsc version VERSION_MISSING\nspec: 1.1.0\n", &rel));
        ASSERT_ERROR(EINVAL, runsc_release("spec: 1.0.2-dev 20240729\n", &rel));
        ASSERT_ERROR(EINVAL, runsc_release("runsc version 0.0~202407291.0\n", &rel));
        ASSERT_ERROR(EINVAL, runsc_release("", &rel));
}

/* A probe directory whose prober is dead (a supervisor killed during the probe) goes at the next forget,
 * one whose prober lives stays. */
TEST(stale_probe_dirs_swept) {
        char dead[64], alive[64];
        RuntimeJob rj = { .state_root = "/nonexistent", .container_id = "pond-x" };
        pid_t pid = fork();
        struct stat st;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0)
                _exit(0);
        ASSERT_EQ(pid, waitpid(pid, NULL, 0));
        snprintf(dead, sizeof dead, "/tmp/pond-runsc-probe.%d.test%d", (int) pid, (int) getpid());
        snprintf(alive, sizeof alive, "/tmp/pond-runsc-probe.%d.test", (int) getpid());
        ASSERT_OK(mkdir(dead, 0700));
        ASSERT_OK(mkdir(alive, 0700));
        runtime_runsc.forget(&rj);
        ASSERT_TRUE(stat(dead, &st) < 0 && errno == ENOENT);
        ASSERT_OK(stat(alive, &st));
        ASSERT_OK(rmdir(alive));
}

/* The sandbox's end judged (the evidence measured in the box, tests/integration/test-faults.sh): a signal is
 * the sandbox killed; an exit status is the payload's, unless the panic log holds a crash report, whose first
 * line is quoted; an empty or absent panic log is no crash. */
TEST(init_failed) {
        char dir[] = "/tmp/test-runsc-XXXXXX", log[64];
        RuntimeJob rj = { .panic_log = log };
        siginfo_t killed = {}, dumped = {}, exited = {};
        char *why = NULL;
        FILE *f;

        /* Field by field: si_pid and si_status are members of a union's members, and designated initializers
         * of two of them keep only the last. */
        killed.si_code = CLD_KILLED;
        killed.si_pid = 42;
        killed.si_status = SIGKILL;
        dumped = killed;
        dumped.si_code = CLD_DUMPED;
        dumped.si_status = SIGSEGV;
        exited = killed;
        exited.si_code = CLD_EXITED;
        exited.si_status = 2;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(log, sizeof log, "%s/panic.log", dir);
        ASSERT_TRUE(runtime_runsc.init_failed != NULL);
        ASSERT_TRUE(runtime_runc.init_failed == NULL); /* runc's init is the payload's own process */

        ASSERT_EQ(1, runtime_runsc.init_failed(&rj, &killed, &why));
        ASSERT_STREQ("the gVisor sandbox process (pid 42) was killed by SIGKILL", why);
        free(TAKE_PTR(why));
        ASSERT_EQ(1, runtime_runsc.init_failed(&rj, &dumped, &why));
        ASSERT_CONTAINS("killed by SIGSEGV", why);
        free(TAKE_PTR(why));

        ASSERT_EQ(0, runtime_runsc.init_failed(&rj, &exited, &why)); /* no panic log at all */
        ASSERT_TRUE(why == NULL);
        f = fopen(log, "we");
        ASSERT_TRUE(f != NULL);
        fclose(f);
        ASSERT_EQ(0, runtime_runsc.init_failed(&rj, &exited, &why)); /* an empty one */
        ASSERT_TRUE(why == NULL);

        f = fopen(log, "we");
        ASSERT_TRUE(f != NULL);
        fputs("\npanic: User workload triggered a panic via afs_syscall.\n\ngoroutine 25 [running]:\n", f);
        fclose(f);
        ASSERT_EQ(1, runtime_runsc.init_failed(&rj, &exited, &why));
        ASSERT_STREQ("the gVisor sandbox crashed (it exited 2 and reported: panic: User workload triggered a panic "
                     "via afs_syscall.)", why);
        free(TAKE_PTR(why));

        rj.panic_log = NULL; /* no panic log configured: the status alone, an exit */
        ASSERT_EQ(0, runtime_runsc.init_failed(&rj, &exited, &why));
        ASSERT_OK(unlink(log));
        ASSERT_OK(rmdir(dir));
}

/* runsc up to 20240729 refuses gVisor's netstack in any namespace that has /proc/sys/net/core/rmem_default,
 * which on Linux 6.x is every one (google/gvisor#10704): its start step runs where /proc/sys/net is empty
 * (checked through the step's own runner), and the caller's /proc/sys/net is untouched. */
TEST(start_step_sees_no_proc_sys_net) {
        char *probe[] = { (char *) "sh", (char *) "-c",
                          (char *) "test ! -e /proc/sys/net/core/rmem_default && test -z \"$(ls -A /proc/sys/net)\" && "
                                   "! touch /proc/sys/net/x 2>/dev/null", NULL };

        if (geteuid() != 0)
                TEST_SKIP("needs root for a mount namespace");
        if (access("/proc/sys/net/core/rmem_default", F_OK) < 0)
                TEST_SKIP("no /proc/sys/net/core/rmem_default here to hide");
        ASSERT_TRUE(runtime_runsc.start_child_setup != NULL);
        ASSERT_EQ(0, runtime_exec_setup(probe, 10 * 1000 * 1000, runtime_runsc.start_child_setup));
        ASSERT_OK(access("/proc/sys/net/core/rmem_default", F_OK));
}

TEST_MAIN()
