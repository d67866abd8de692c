/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-landlock: a profile's landlock field (strict), the decision per backend and kernel ABI, pond-init's
 * command line and its parser (round trip), the rights each rule gets per ABI, and pond-init itself on
 * this kernel: a write and an exec outside its rules refused, the same allowed without it (the control). */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/json-strict.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "landlock-uapi.h"
#include "policy/landlock.h"
#include "ruleset.h"
#include "tests.h"

static int parse_profile(const char *json, LandlockProfile *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        int r = json_parse_strict(json, strlen(json), JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, ret_error);

        return r < 0 ? r : landlock_profile_parse(o, "landlock", ret, ret_error);
}

TEST(profile_parse) {
        static const struct {
                const char *json;
                const char *error; /* NULL: accepted */
        } cases[] = {
                { "{\"mode\":\"best-effort\"}", NULL },
                { "{\"mode\":\"required\",\"min_abi\":4,\"exec_allow\":[\"/usr\",\"/usr/bin/python3\"]}", NULL },
                { "{\"mode\":\"off\"}", NULL },
                { "{\"mode\":\"best-effort\",\"tcp_connect\":\"any\"}", NULL },
                { "{\"mode\":\"best-effort\",\"tcp_connect\":\"none\"}", "landlock.tcp_connect: must be" },
                { "{\"mode\":\"best-effort\",\"mqueue\":true}", NULL },
                { "{\"mode\":\"best-effort\",\"mqueue\":\"yes\"}", "landlock.mqueue" },
                { "{}", "landlock.mode: missing" },
                { "{\"mode\":\"strict\"}", "landlock.mode: must be" },
                { "{\"mode\":\"required\",\"min_abi\":8}", "landlock.min_abi" },
                { "{\"mode\":\"required\",\"min_abi\":0}", "landlock.min_abi" },
                { "{\"mode\":\"required\",\"exec\":[\"/usr\"]}", "unknown key 'exec'" },
                { "{\"mode\":\"required\",\"exec_allow\":[\"usr\"]}", "landlock.exec_allow[0]: must be an absolute" },
                { "{\"mode\":\"required\",\"exec_allow\":[\"/usr/../etc\"]}", "landlock.exec_allow[0]: must not" },
                { "{\"mode\":\"required\",\"exec_allow\":[7]}", "landlock.exec_allow[0]: must be a string" },
                { "{\"mode\":\"required\",\"exec_allow\":[]}", "landlock.exec_allow" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                LandlockProfile p = {};
                _cleanup_free_ char *err = NULL;
                int r = parse_profile(cases[i].json, &p, &err);

                printf("# %s -> %s\n", cases[i].json, err ?: "accepted");
                if (cases[i].error) {
                        EXPECT_TRUE(r < 0);
                        EXPECT_CONTAINS(cases[i].error, err ?: "");
                } else
                        EXPECT_OK(r);
                landlock_profile_done(&p);
        }
}

TEST(profile_absent_is_off) {
        LandlockProfile p = { .mode = LANDLOCK_REQUIRED };

        ASSERT_OK(landlock_profile_parse(NULL, "landlock", &p, NULL));
        EXPECT_EQ(LANDLOCK_OFF, p.mode);
}

TEST(decide) {
        static const struct {
                LandlockMode mode;
                unsigned min_abi;
                const char *backend;
                unsigned host_abi;
                int r;
                unsigned abi;
        } cases[] = {
                { LANDLOCK_BEST_EFFORT, 1, "runc", 7, 0, 7 },
                { LANDLOCK_BEST_EFFORT, 1, "runc", 3, 0, 3 },
                { LANDLOCK_BEST_EFFORT, 1, "runc", 9, 0, LANDLOCK_ABI_MAX },
                { LANDLOCK_BEST_EFFORT, 1, "runc", 0, 0, 0 },
                { LANDLOCK_BEST_EFFORT, 4, "runsc", 7, 0, 0 },
                { LANDLOCK_BEST_EFFORT, 1, "kata", 7, 0, 0 },
                { LANDLOCK_REQUIRED, 4, "runc", 7, 0, 7 },
                { LANDLOCK_REQUIRED, 4, "runc", 4, 0, 4 },
                { LANDLOCK_REQUIRED, 4, "runc", 3, -EOPNOTSUPP, 0 },
                { LANDLOCK_REQUIRED, 1, "runc", 0, -EOPNOTSUPP, 0 },
                { LANDLOCK_REQUIRED, 1, "runsc", 7, -EOPNOTSUPP, 0 },
                { LANDLOCK_OFF, 1, "runc", 7, 0, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                LandlockProfile p = { .mode = cases[i].mode, .min_abi = cases[i].min_abi };
                LandlockDecision d = {};
                _cleanup_free_ char *err = NULL;
                int r = landlock_decide(&p, cases[i].backend, cases[i].host_abi, "no landlock", &d, &err);

                printf("# %s %s min %u host %u -> %d abi %u %s\n", landlock_mode_to_string(cases[i].mode),
                       cases[i].backend, cases[i].min_abi, cases[i].host_abi, r, d.abi, err ?: d.reason ?: "");
                EXPECT_EQ(cases[i].r, r);
                EXPECT_EQ(cases[i].abi, d.abi);
                if (r < 0)
                        EXPECT_CONTAINS("requires Landlock ABI >=", err ?: "");
                else if (cases[i].mode != LANDLOCK_OFF && d.abi == 0)
                        EXPECT_TRUE(d.reason != NULL);
        }
}

TEST(rights_per_abi) {
        EXPECT_EQ(0, ruleset_handled_fs(1) & (LL_FS_REFER | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
        EXPECT_TRUE(ruleset_handled_fs(2) & LL_FS_REFER);
        EXPECT_TRUE(ruleset_handled_fs(3) & LL_FS_TRUNCATE);
        EXPECT_EQ(0, ruleset_handled_fs(4) & LL_FS_IOCTL_DEV);
        EXPECT_TRUE(ruleset_handled_fs(5) & LL_FS_IOCTL_DEV);
        EXPECT_EQ(0, ruleset_handled_net(3));
        EXPECT_EQ(LL_NET_CONNECT_TCP, ruleset_handled_net(4));
        EXPECT_EQ(0, ruleset_scoped(5));
        EXPECT_EQ(LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL, ruleset_scoped(6));
        EXPECT_EQ(ruleset_handled_fs(6), ruleset_handled_fs(7));
        for (unsigned abi = 1; abi <= RULESET_ABI_MAX; abi++)
                for (int k = 0; k < _RULE_KIND_MAX; k++)
                        for (int dir = 0; dir < 2; dir++) {
                                uint64_t a = ruleset_rule_access(k, abi, dir);

                                /* never more than the ABI handles (the kernel refuses it) */
                                EXPECT_EQ(0, a & ~ruleset_handled_fs(abi));
                                /* a file rule only has file rights (EINVAL otherwise) */
                                if (!dir)
                                        EXPECT_EQ(0, a & ~(LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE |
                                                           LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
                                /* execute comes from an exec rule only */
                                EXPECT_EQ(k == RULE_EXEC, !!(a & LL_FS_EXECUTE));
                                /* writes only from rw and device rules, things made only in rw */
                                if (k == RULE_READ || k == RULE_EXEC)
                                        EXPECT_EQ(0, a & (LL_FS_WRITE_FILE | LL_FS_MAKE_REG | LL_FS_REMOVE_FILE));
                                if (k == RULE_DEV)
                                        EXPECT_EQ(0, a & (LL_FS_MAKE_REG | LL_FS_MAKE_DIR | LL_FS_REMOVE_FILE));
                        }
        EXPECT_TRUE(ruleset_rule_access(RULE_RW, 7, true) & LL_FS_MAKE_REG);
        EXPECT_TRUE(ruleset_rule_access(RULE_RW, 2, true) & LL_FS_REFER);
        EXPECT_TRUE(ruleset_rule_access(RULE_DEV, 5, false) & LL_FS_IOCTL_DEV);
}

static int parse_argv(char **argv, Ruleset *rs, const char **err) {
        return ruleset_parse((int) strv_length(argv), argv, rs, err);
}

TEST(ruleset_parse_refusals) {
        static const char *const cases[][10] = {
                { "pond-init", "--rw", "/tmp", "--", "sh", NULL },          /* rules without --abi */
                { "pond-init", "--channel", "x", "--", "sh", NULL },
                { "pond-init", "--channel", "3", "--channel", "4", "--", "sh", NULL },
                { "pond-init", "--abi", "8", "--", "sh", NULL },            /* newer than pond-init */
                { "pond-init", "--abi", "0", "--", "sh", NULL },
                { "pond-init", "--abi", "7", "--rw", "tmp", "--", "sh", NULL },
                { "pond-init", "--abi", "7", "--rw", "/tmp/..", "--", "sh", NULL },
                { "pond-init", "--abi", "7", "--connect", "65536", "--", "sh", NULL },
                { "pond-init", "--abi", "7", "--write", "/tmp", "--", "sh", NULL },
                { "pond-init", "--abi", "7", "--", NULL },
                { "pond-init", "--abi", "7", NULL },
                { "pond-init", "--abi", NULL },
                { "pond-init", "--abi", "7", "--connect", "any", "--connect", "80", "--", "sh", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Ruleset rs;
                const char *err = NULL;

                EXPECT_ERROR(EINVAL, parse_argv((char **) cases[i], &rs, &err));
                EXPECT_TRUE(err != NULL);
                printf("# case %zu: %s\n", i, err ?: "(none)");
        }
}

/* The exec channel without Landlock (runsc, or a profile without it): no rules, no ABI. */
TEST(ruleset_parse_channel) {
        static const char *const plain[] = { "pond-init", "--channel", "0", "--", "sh", NULL };
        static const char *const both[] = { "pond-init", "--channel", "3", "--abi", "4", "--rw", "/tmp", "--", "sh",
                                            NULL };
        const char *err = NULL;
        Ruleset rs;

        ASSERT_OK(parse_argv((char **) plain, &rs, &err));
        EXPECT_EQ(0, rs.channel);
        EXPECT_EQ(0U, rs.abi);
        EXPECT_EQ(0U, rs.n_rules);
        EXPECT_STREQ("sh", rs.argv[0]);
        ASSERT_OK(parse_argv((char **) both, &rs, &err));
        EXPECT_EQ(3, rs.channel);
        EXPECT_EQ(4U, rs.abi);
        EXPECT_TRUE(rs.n_rules == 1);
}

static bool has_rule(const Ruleset *rs, RuleKind kind, const char *path) {
        for (unsigned i = 0; i < rs->n_rules; i++)
                if (rs->rules[i].kind == kind && streq(rs->rules[i].path, path))
                        return true;
        return false;
}

/* What pond writes, pond-init reads back: the same rules. */
static int round_trip(const LandlockProfile *p, const LandlockPaths *paths, char ***ret_argv, Ruleset *rs) {
        LandlockDecision d = { .decided = true, .mode = p->mode, .abi = 7 };
        int r = landlock_init_argv(&d, p, paths, ret_argv);
        const char *err = NULL;

        if (r < 0)
                return r;
        if (strv_push(ret_argv, strdup("true")) < 0)
                return -ENOMEM;
        r = parse_argv(*ret_argv, rs, &err);
        if (r < 0)
                printf("# %s\n", err);
        return r;
}

/* What oci_config_writable() reads from a write profile's config. */
static char *writable_write[] = { "/tmp", "/dev/shm", "/workspace", "/home/job", NULL };

TEST(init_argv_defaults) {
        _cleanup_strv_free_ char **argv = NULL;
        const uint16_t ports[] = { 8080, 3128 };
        LandlockProfile p = { .mode = LANDLOCK_BEST_EFFORT, .min_abi = 1 };
        LandlockPaths paths = { .writable = writable_write, .workspace = true, .home = true, .ports = ports,
                                .n_ports = 2 };
        Ruleset rs;

        ASSERT_OK(round_trip(&p, &paths, &argv, &rs));
        EXPECT_STREQ(LANDLOCK_INIT_PATH, argv[0]);
        EXPECT_EQ(7U, rs.abi);
        EXPECT_STREQ("true", rs.argv[0]);
        EXPECT_TRUE(has_rule(&rs, RULE_READ, "/"));
        EXPECT_TRUE(has_rule(&rs, RULE_RW, "/workspace"));
        EXPECT_TRUE(has_rule(&rs, RULE_RW, "/tmp"));
        EXPECT_TRUE(has_rule(&rs, RULE_RW, "/home/job"));
        EXPECT_TRUE(has_rule(&rs, RULE_RW, "/dev/shm"));
        EXPECT_TRUE(has_rule(&rs, RULE_DEV, "/dev/null"));
        EXPECT_FALSE(has_rule(&rs, RULE_RW, "/dev"));
        EXPECT_FALSE(has_rule(&rs, RULE_RW, "/dev/mqueue"));
        EXPECT_TRUE(has_rule(&rs, RULE_EXEC, "/usr"));
        EXPECT_TRUE(has_rule(&rs, RULE_EXEC, "/tmp"));
        EXPECT_TRUE(has_rule(&rs, RULE_EXEC, "/workspace"));
        EXPECT_TRUE(has_rule(&rs, RULE_EXEC, "/home/job"));
        EXPECT_FALSE(has_rule(&rs, RULE_EXEC, "/dev/shm"));
        EXPECT_FALSE(has_rule(&rs, RULE_EXEC, "/dev"));
        EXPECT_FALSE(has_rule(&rs, RULE_EXEC, "/etc"));
        ASSERT_EQ(2U, rs.n_ports);
        EXPECT_EQ(8080, rs.ports[0]);
        EXPECT_EQ(3128, rs.ports[1]);
}

/* mqueue: POSIX message queues, by a rule on the job's mqueue file system. */
TEST(init_argv_mqueue) {
        _cleanup_strv_free_ char **argv = NULL;
        LandlockProfile p = { .mode = LANDLOCK_BEST_EFFORT, .min_abi = 1, .mqueue = true };
        LandlockPaths paths = { .writable = writable_write, .workspace = true, .home = true };
        Ruleset rs;

        ASSERT_OK(round_trip(&p, &paths, &argv, &rs));
        EXPECT_TRUE(has_rule(&rs, RULE_RW, "/dev/mqueue"));
        EXPECT_FALSE(has_rule(&rs, RULE_EXEC, "/dev/mqueue"));
        EXPECT_FALSE(has_rule(&rs, RULE_RW, "/dev"));
}

/* A writable path a rule beneath which would open what the ruleset closes: refused, not applied. */
TEST(init_argv_refuses_wide_writable) {
        static const char *const bad[] = { "/", "/dev", "/proc", "/sys", "tmp", "/tmp/../dev" };
        LandlockProfile p = { .mode = LANDLOCK_BEST_EFFORT, .min_abi = 1 };
        LandlockDecision d = { .decided = true, .mode = LANDLOCK_BEST_EFFORT, .abi = 7 };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_strv_free_ char **argv = NULL;
                char *writable[] = { "/tmp", (char *) bad[i], NULL };
                LandlockPaths paths = { .writable = writable };

                printf("# writable %s\n", bad[i]);
                EXPECT_ERROR(EINVAL, landlock_init_argv(&d, &p, &paths, &argv));
                EXPECT_TRUE(argv == NULL);
        }
}

TEST(init_argv_readonly_workspace_and_allowlist) {
        _cleanup_strv_free_ char **argv = NULL;
        char *allow[] = { "/usr/bin/python3", "/usr/lib", NULL };
        char *writable[] = { "/tmp", "/dev/shm", "/home/job", NULL }; /* a read-only /workspace is not */
        LandlockProfile p = { .mode = LANDLOCK_REQUIRED, .min_abi = 4, .exec_allow = allow };
        LandlockPaths paths = { .writable = writable, .workspace = true, .home = true };
        Ruleset rs;

        ASSERT_OK(round_trip(&p, &paths, &argv, &rs));
        EXPECT_FALSE(has_rule(&rs, RULE_RW, "/workspace"));
        EXPECT_TRUE(has_rule(&rs, RULE_EXEC, "/usr/bin/python3"));
        EXPECT_TRUE(has_rule(&rs, RULE_EXEC, "/usr/lib"));
        /* the allowlist replaces the defaults */
        EXPECT_FALSE(has_rule(&rs, RULE_EXEC, "/usr"));
        EXPECT_FALSE(has_rule(&rs, RULE_EXEC, "/tmp"));
        EXPECT_FALSE(has_rule(&rs, RULE_EXEC, "/home/job"));
        EXPECT_EQ(0U, rs.n_ports);
        EXPECT_FALSE(rs.connect_any);
}

TEST(init_argv_connect_any) {
        _cleanup_strv_free_ char **argv = NULL;
        const uint16_t ports[] = { 8080 };
        LandlockProfile p = { .mode = LANDLOCK_BEST_EFFORT, .min_abi = 1, .connect_any = true };
        LandlockPaths paths = { .writable = writable_write, .home = true, .ports = ports, .n_ports = 1 };
        Ruleset rs;

        ASSERT_OK(round_trip(&p, &paths, &argv, &rs));
        EXPECT_TRUE(rs.connect_any);
        EXPECT_EQ(0U, rs.n_ports);
}

TEST(init_argv_needs_an_abi) {
        _cleanup_strv_free_ char **argv = NULL;
        LandlockProfile p = { .mode = LANDLOCK_BEST_EFFORT, .min_abi = 1 };
        LandlockDecision d = { .decided = true, .mode = LANDLOCK_BEST_EFFORT, .abi = 0 };
        LandlockPaths paths = {};

        EXPECT_ERROR(EINVAL, landlock_init_argv(&d, &p, &paths, &argv));
}

TEST(result_json) {
        char *allow[] = { "/usr", NULL };
        LandlockProfile p = { .mode = LANDLOCK_BEST_EFFORT, .exec_allow = allow };
        LandlockDecision none = { .decided = true, .mode = LANDLOCK_BEST_EFFORT,
                                  .reason = "gVisor implements no Landlock" };
        LandlockDecision off = { .decided = true, .mode = LANDLOCK_OFF };
        _cleanup_json_ json_object *o = landlock_decision_to_json(&none, &p);

        ASSERT_TRUE(o != NULL);
        EXPECT_STREQ("{\"mode\":\"best-effort\",\"abi\":0,\"applied\":false,\"reason\":\"gVisor implements no "
                     "Landlock\",\"exec_allow\":[\"\\/usr\"],\"tcp_connect\":\"sidecars\",\"mqueue\":false}",
                     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        EXPECT_TRUE(landlock_decision_to_json(&off, &p) == NULL);
}

/* pond-init on this kernel, as an unprivileged process may use it (no_new_privs is all Landlock needs). */
static int run_init(const char *dir, bool locked, const char *script) {
        const char *init = getenv("POND_INIT");
        char abi[16];
        pid_t pid;
        int status;

        snprintf(abi, sizeof abi, "%u", landlock_host_abi(&(const char *) { NULL }));
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                if (locked)
                        execl(init, init, "--abi", abi, "--read", "/", "--rw", dir, "--dev", "/dev/null",
                              "--exec", "/usr", "--exec", "/bin", "--exec", "/lib", "--exec", "/lib64",
                              "--", "sh", "-c", script, "sh", dir, (char *) NULL);
                else
                        execl("/bin/sh", "sh", "-c", script, "sh", dir, (char *) NULL);
                _exit(99);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(pond_init_applies) {
        char rw[] = "/tmp/test-landlock-rw.XXXXXX", out[] = "/tmp/test-landlock-out.XXXXXX";
        const char *reason = NULL;
        char script[512];

        if (!getenv("POND_INIT"))
                TEST_SKIP("POND_INIT is not set (meson sets it)");
        if (landlock_host_abi(&reason) == 0)
                TEST_SKIP(reason);
        if (landlock_host_abi(&reason) > RULESET_ABI_MAX)
                TEST_SKIP("the kernel's ABI is newer than pond-init's");
        ASSERT_TRUE(mkdtemp(rw) != NULL);
        ASSERT_TRUE(mkdtemp(out) != NULL);
        ASSERT_OK(chmod(out, 0777));
        /* inside the rules: write and exec beneath the writable directory's sibling rules */
        EXPECT_EQ(0, run_init(rw, true, "echo ok >\"$1/a\" && [ \"$(cat \"$1/a\")\" = ok ] && echo >/dev/null"));
        /* a write outside: refused by Landlock, allowed without (the control) */
        snprintf(script, sizeof script, "echo x >%s/b", out);
        EXPECT_EQ(2, run_init(rw, true, script));
        EXPECT_EQ(0, run_init(rw, false, script));
        /* an exec outside the exec rules (a copy of true in the writable directory): EACCES, status 126 */
        EXPECT_EQ(126, run_init(rw, true, "cp /bin/true \"$1/t\" && \"$1/t\""));
        EXPECT_EQ(0, run_init(rw, false, "\"$1/t\""));
        /* fds beyond stdio are closed */
        EXPECT_EQ(0, run_init(rw, true, "[ ! -e /proc/self/fd/9 ]"));
        (void) system("rm -rf /tmp/test-landlock-rw.* /tmp/test-landlock-out.*");
}

TEST_MAIN()
