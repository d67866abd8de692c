/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-oci.c: config.json for confined and unconfined jobs, the job environment, the seccomp policy check
 * against the real policy/seccomp.json, and the "host" image layout. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "oci/oci.h"
#include "policy/seccomp-check.h"
#include "rootfs/image.h"
#include "tests.h"

extern char **environ;

static char *command[] = { "python3", "-m", "pytest", NULL };
static char *spec_env[] = { "FOO=bar", "HOME=/workspace", "POND_JOB_ID=forged", "FOO=baz", NULL };

static ResolvedPolicy policy(bool confined, FsPosture fs, NetPosture net) {
        return (ResolvedPolicy) {
                .profile = confined ? "untrusted-code-write" : "none",
                .backend = "runc",
                .tier = "trusted",
                .confined = confined,
                .fs = fs,
                .net = net,
                .memory_bytes = 2ULL << 30,
                .cpus_milli = 1500,
                .pids_limit = 512,
                .host_pids_limit = 512,
                .tmpfs_bytes = 256ULL << 20,
                .image = "host",
                .nofile = 4096,
                .nproc = 1024,
        };
}

static JobSpec spec(void) {
        return (JobSpec) { .job_id = "job-42", .tenant = "t", .command = command, .env = spec_env };
}

static OciPaths paths(bool ws_ro, const char *netns) {
        return (OciPaths) {
                .rootfs = "/var/lib/pond/jobs/job-42/rootfs",
                .host_usr = "/usr",
                .etc = "/var/lib/pond/jobs/job-42/etc",
                .workspace = "/var/lib/pond/jobs/job-42/workspace",
                .workspace_readonly = ws_ro,
                .home = "/var/lib/pond/jobs/job-42/home",
                .netns = netns,
                .cgroups_path = "payload",
                .hostname = "pond",
        };
}

static json_object *seccomp_policy(void) {
        return json_object_from_file(POND_SOURCE_ROOT "/policy/seccomp.json");
}

/* "linux.resources.memory.limit" */
static json_object *jpath(json_object *o, const char *path) {
        char buf[256], *save = NULL;

        snprintf(buf, sizeof buf, "%s", path);
        for (char *k = strtok_r(buf, ".", &save); o && k; k = strtok_r(NULL, ".", &save))
                if (!json_object_object_get_ex(o, k, &o))
                        return NULL;
        return o;
}

static json_object *find_mount(json_object *c, const char *dest) {
        json_object *mounts = jpath(c, "mounts");

        for (size_t i = 0; mounts && i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                if (streq(json_object_get_string(jpath(m, "destination")), dest))
                        return m;
        }
        return NULL;
}

static bool has_string(json_object *a, const char *s) {
        for (size_t i = 0; a && i < json_object_array_length(a); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(a, i)), s))
                        return true;
        return false;
}

static json_object *find_namespace(json_object *c, const char *type) {
        json_object *ns = jpath(c, "linux.namespaces");

        for (size_t i = 0; ns && i < json_object_array_length(ns); i++) {
                json_object *n = json_object_array_get_idx(ns, i);
                if (streq(json_object_get_string(jpath(n, "type")), type))
                        return n;
        }
        return NULL;
}

static json_object *build(bool confined, FsPosture fs, NetPosture net, bool ws_ro, const char *netns) {
        _cleanup_json_ json_object *sc = seccomp_policy();
        ResolvedPolicy r = policy(confined, fs, net);
        JobSpec s = spec();
        OciPaths p = paths(ws_ro, netns);
        json_object *c = NULL;

        if (oci_config_build(&r, &s, sc, &p, &c) < 0)
                return NULL;
        return c;
}

/* A tty job's terminal is the runtime's to allocate (process.terminal); nothing else of the posture moves. */
TEST(tty_job_asks_for_a_terminal) {
        _cleanup_json_ json_object *sc = seccomp_policy(), *c = NULL;
        ResolvedPolicy r = policy(true, FS_OVERLAY, NET_ALLOWLIST);
        JobSpec s = spec();
        OciPaths p = paths(false, NULL);

        s.tty = true;
        ASSERT_OK(oci_config_build(&r, &s, sc, &p, &c));
        ASSERT_TRUE(json_object_get_boolean(jpath(c, "process.terminal")));
        ASSERT_TRUE(json_object_get_boolean(jpath(c, "process.noNewPrivileges")));
        ASSERT_EQ(1000, json_object_get_int(jpath(c, "process.user.uid")));
        ASSERT_TRUE(jpath(c, "linux.seccomp") != NULL);
}

TEST(process_has_no_privileges) {
        _cleanup_json_ json_object *c = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);
        static const char *const sets[] = { "bounding", "effective", "inheritable", "permitted", "ambient" };
        char key[64];

        ASSERT_TRUE(c);
        ASSERT_STREQ("1.0.2", json_object_get_string(jpath(c, "ociVersion")));
        for (size_t i = 0; i < ELEMENTSOF(sets); i++) {
                snprintf(key, sizeof key, "process.capabilities.%s", sets[i]);
                ASSERT_TRUE(json_object_is_type(jpath(c, key), json_type_array));
                ASSERT_EQ(0, json_object_array_length(jpath(c, key)));
        }
        ASSERT_TRUE(json_object_get_boolean(jpath(c, "process.noNewPrivileges")));
        ASSERT_FALSE(json_object_get_boolean(jpath(c, "process.terminal")));
        ASSERT_EQ(1000, json_object_get_int(jpath(c, "process.user.uid")));
        ASSERT_EQ(1000, json_object_get_int(jpath(c, "process.user.gid")));
        ASSERT_EQ(0, json_object_array_length(jpath(c, "process.user.additionalGids")));
        ASSERT_TRUE(json_object_get_boolean(jpath(c, "root.readonly")));
        ASSERT_STREQ("/workspace", json_object_get_string(jpath(c, "process.cwd")));
        ASSERT_STREQ("python3",
                     json_object_get_string(json_object_array_get_idx(jpath(c, "process.args"), 0)));
        ASSERT_EQ(3, json_object_array_length(jpath(c, "process.args")));
}

TEST(rlimits) {
        _cleanup_json_ json_object *c = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);
        json_object *rl = c ? jpath(c, "process.rlimits") : NULL;
        int found = 0;

        ASSERT_TRUE(rl);
        for (size_t i = 0; i < json_object_array_length(rl); i++) {
                json_object *l = json_object_array_get_idx(rl, i);
                const char *type = json_object_get_string(jpath(l, "type"));
                int64_t want = streq(type, "RLIMIT_NOFILE") ? 4096 : streq(type, "RLIMIT_NPROC") ? 1024 : 0;

                ASSERT_EQ(want, json_object_get_int64(jpath(l, "hard")));
                ASSERT_EQ(want, json_object_get_int64(jpath(l, "soft")));
                found++;
        }
        ASSERT_EQ(3, found);
}

/* A job with a uid range of its own: the user namespace joined by path, first (runc joins namespaces in the
 * config's order, and the network namespace it owns only after it), the mappings runc checks its ids against,
 * and no rlimits (the create step's own: oci_job_rlimits() has the same values). */
TEST(user_namespace_of_the_jobs_range) {
        _cleanup_json_ json_object *sc = seccomp_policy();
        ResolvedPolicy r = policy(true, FS_OVERLAY, NET_ALLOWLIST);
        JobSpec s = spec();
        OciPaths p = paths(false, "/run/netns/pond-job-42");
        _cleanup_json_ json_object *c = NULL, *plain = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);
        struct rlimit limits[OCI_JOB_RLIMITS];
        int resources[OCI_JOB_RLIMITS];
        json_object *ns, *map;

        p.userns = "/run/pond/jobs/job-42/userns";
        p.userns_base = 0x70010000;
        p.userns_size = 65536;
        ASSERT_OK(oci_config_build(&r, &s, sc, &p, &c));
        ns = jpath(c, "linux.namespaces");
        ASSERT_STREQ("user", json_object_get_string(jpath(json_object_array_get_idx(ns, 0), "type")));
        ASSERT_STREQ(p.userns, json_object_get_string(jpath(json_object_array_get_idx(ns, 0), "path")));
        ASSERT_STREQ("/run/netns/pond-job-42", json_object_get_string(jpath(find_namespace(c, "network"), "path")));
        for (int i = 0; i < 2; i++) {
                map = jpath(c, i ? "linux.gidMappings" : "linux.uidMappings");
                ASSERT_EQ(1, json_object_array_length(map));
                map = json_object_array_get_idx(map, 0);
                ASSERT_EQ(0, json_object_get_int64(jpath(map, "containerID")));
                ASSERT_EQ(0x70010000, json_object_get_int64(jpath(map, "hostID")));
                ASSERT_EQ(65536, json_object_get_int64(jpath(map, "size")));
        }
        ASSERT_FALSE(jpath(c, "process.rlimits"));
        ASSERT_EQ(1000, json_object_get_int(jpath(c, "process.user.uid")));
        oci_job_rlimits(&r, resources, limits);
        ASSERT_EQ(RLIMIT_NOFILE, resources[0]);
        ASSERT_EQ(4096, (int64_t) limits[0].rlim_max);
        ASSERT_EQ(RLIMIT_NPROC, resources[1]);
        ASSERT_EQ(1024, (int64_t) limits[1].rlim_cur);
        ASSERT_EQ(0, (int64_t) limits[2].rlim_max);
        /* without one: no user namespace, no mappings */
        ASSERT_TRUE(plain);
        ASSERT_FALSE(find_namespace(plain, "user"));
        ASSERT_FALSE(jpath(plain, "linux.uidMappings"));
        /* a range must be a range: never host root, and uid 1000 inside it */
        p.userns_base = 0;
        json_object_put(TAKE_PTR(c));
        ASSERT_ERROR(EINVAL, oci_config_build(&r, &s, sc, &p, &c));
        p.userns_base = 0x70010000;
        p.userns_size = 1000;
        ASSERT_ERROR(EINVAL, oci_config_build(&r, &s, sc, &p, &c));
}

TEST(mounts_read_posture) {
        _cleanup_json_ json_object *c = build(true, FS_READONLY, NET_BROKER_ONLY, true, NULL);
        json_object *ws, *tmp;

        ASSERT_TRUE(c);
        ws = find_mount(c, "/workspace");
        ASSERT_TRUE(ws);
        ASSERT_TRUE(has_string(jpath(ws, "options"), "ro"));
        ASSERT_FALSE(has_string(jpath(ws, "options"), "rw"));
        ASSERT_TRUE(has_string(jpath(ws, "options"), "nosuid"));
        tmp = find_mount(c, "/tmp");
        ASSERT_TRUE(tmp);
        ASSERT_STREQ("tmpfs", json_object_get_string(jpath(tmp, "type")));
        ASSERT_TRUE(has_string(jpath(tmp, "options"), "size=268435456"));
        ASSERT_TRUE(find_mount(c, "/proc"));
        ASSERT_TRUE(find_mount(c, "/dev"));
        ASSERT_TRUE(find_mount(c, "/dev/pts"));
        ASSERT_TRUE(has_string(jpath(find_mount(c, "/usr"), "options"), "ro"));
        ASSERT_TRUE(has_string(jpath(find_mount(c, "/etc"), "options"), "ro"));
        ASSERT_TRUE(has_string(jpath(find_mount(c, "/sys"), "options"), "ro"));
}

static bool strv_has(char **l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

/* A confined job's private home at /home/job (rw, nosuid, nodev) and HOME pointing there; without a home
 * a confined config is refused; profile none keeps HOME=/tmp. */
TEST(home_mount_and_environment) {
        _cleanup_json_ json_object *c = build(true, FS_READONLY, NET_BROKER_ONLY, true, NULL), *sc = seccomp_policy();
        ResolvedPolicy r = policy(true, FS_OVERLAY, NET_ALLOWLIST), none = policy(false, FS_HOST, NET_OPEN);
        _cleanup_strv_free_ char **env = NULL, **env_none = NULL;
        JobSpec s = spec();
        OciPaths p = paths(false, NULL);
        json_object *home, *c2 = NULL;
        char *no_env[] = { NULL };

        ASSERT_TRUE(c);
        home = find_mount(c, "/home/job");
        ASSERT_TRUE(home);
        ASSERT_STREQ("/var/lib/pond/jobs/job-42/home", json_object_get_string(jpath(home, "source")));
        ASSERT_TRUE(has_string(jpath(home, "options"), "rw"));
        ASSERT_TRUE(has_string(jpath(home, "options"), "nosuid"));
        ASSERT_TRUE(has_string(jpath(home, "options"), "nodev"));
        p.home = NULL;
        ASSERT_ERROR(EINVAL, oci_config_build(&r, &s, sc, &p, &c2));
        s.env = no_env;
        ASSERT_OK(oci_job_environment(&r, &s, NULL, &env));
        ASSERT_TRUE(strv_has(env, "HOME=/home/job"));
        ASSERT_OK(oci_job_environment(&none, &s, NULL, &env_none));
        ASSERT_TRUE(strv_has(env_none, "HOME=/tmp"));
}

/* Under a Landlock profile pond-init is the process, the command after its "--", bound read-only; its
 * command line goes in front once the config is complete. */
TEST(pond_init_in_front_of_the_command) {
        _cleanup_json_ json_object *sc = seccomp_policy(), *c = NULL, *c2 = NULL;
        ResolvedPolicy r = policy(true, FS_OVERLAY, NET_ALLOWLIST), none = policy(false, FS_HOST, NET_OPEN);
        char *init_argv[] = { "/dev/.pond-init", "--abi", "7", "--", NULL };
        char *no_dashes[] = { "/dev/.pond-init", "--abi", "7", NULL };
        char *elsewhere[] = { "/tmp/pond-init", "--", NULL };
        JobSpec s = spec();
        OciPaths p = paths(false, NULL);
        json_object *args, *m;

        p.init = "/opt/pond/libexec/pond-init";
        ASSERT_OK(oci_config_build(&r, &s, sc, &p, &c));
        EXPECT_STREQ("python3", json_object_get_string(json_object_array_get_idx(jpath(c, "process.args"), 0)));
        EXPECT_ERROR(EINVAL, oci_config_set_init(c, no_dashes));
        EXPECT_ERROR(EINVAL, oci_config_set_init(c, elsewhere));
        ASSERT_OK(oci_config_set_init(c, init_argv));
        args = jpath(c, "process.args");
        ASSERT_EQ((size_t) 7, json_object_array_length(args));
        EXPECT_STREQ("/dev/.pond-init", json_object_get_string(json_object_array_get_idx(args, 0)));
        EXPECT_STREQ("--", json_object_get_string(json_object_array_get_idx(args, 3)));
        EXPECT_STREQ("python3", json_object_get_string(json_object_array_get_idx(args, 4)));
        EXPECT_STREQ("pytest", json_object_get_string(json_object_array_get_idx(args, 6)));
        /* once */
        EXPECT_ERROR(EEXIST, oci_config_set_init(c, init_argv));
        m = find_mount(c, "/dev/.pond-init");
        ASSERT_TRUE(m);
        EXPECT_STREQ("/opt/pond/libexec/pond-init", json_object_get_string(jpath(m, "source")));
        EXPECT_TRUE(has_string(jpath(m, "options"), "ro"));
        EXPECT_TRUE(has_string(jpath(m, "options"), "nosuid"));
        /* never for profile none */
        EXPECT_ERROR(EINVAL, oci_config_build(&none, &s, NULL, &p, &c2));
        /* without it: the command itself, and no command line for an init that is not bound */
        json_object_put(c);
        p.init = NULL;
        ASSERT_OK(oci_config_build(&r, &s, sc, &p, &c));
        EXPECT_STREQ("python3", json_object_get_string(json_object_array_get_idx(jpath(c, "process.args"), 0)));
        EXPECT_TRUE(find_mount(c, "/dev/.pond-init") == NULL);
        EXPECT_ERROR(EINVAL, oci_config_set_init(c, init_argv));
}

/* Where the job may write, read back from its config (its Landlock rules): the read-write tmpfs and bind
 * mounts, never /dev, the kernel's file systems or a read-only mount. */
TEST(writable_mounts) {
        _cleanup_json_ json_object *w = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);
        _cleanup_json_ json_object *rd = build(true, FS_READONLY, NET_BROKER_ONLY, false, NULL);
        _cleanup_strv_free_ char **lw = NULL, **lr = NULL;

        ASSERT_TRUE(w && rd);
        ASSERT_OK(oci_config_writable(w, &lw));
        ASSERT_TRUE(lw != NULL);
        EXPECT_TRUE(strv_has(lw, "/tmp"));
        EXPECT_TRUE(strv_has(lw, "/dev/shm"));
        EXPECT_TRUE(strv_has(lw, "/workspace"));
        EXPECT_TRUE(strv_has(lw, "/home/job"));
        EXPECT_EQ((size_t) 4, strv_length(lw));
        EXPECT_FALSE(strv_has(lw, "/dev"));
        EXPECT_FALSE(strv_has(lw, "/proc"));
        EXPECT_FALSE(strv_has(lw, "/dev/mqueue"));
        EXPECT_FALSE(strv_has(lw, "/dev/pts"));
        EXPECT_FALSE(strv_has(lw, "/usr"));
        EXPECT_FALSE(strv_has(lw, "/etc"));
        /* the read-only posture's workspace is not */
        ASSERT_OK(oci_config_writable(rd, &lr));
        EXPECT_FALSE(strv_has(lr, "/workspace"));
        EXPECT_TRUE(strv_has(lr, "/tmp"));
        EXPECT_TRUE(strv_has(lr, "/home/job"));
}

TEST(workspace_readonly_posture_wins_over_paths) {
        _cleanup_json_ json_object *c = build(true, FS_READONLY, NET_BROKER_ONLY, false, NULL);

        ASSERT_TRUE(c);
        ASSERT_TRUE(has_string(jpath(find_mount(c, "/workspace"), "options"), "ro"));
}

TEST(mounts_overlay_posture) {
        _cleanup_json_ json_object *c = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);

        ASSERT_TRUE(c);
        ASSERT_TRUE(has_string(jpath(find_mount(c, "/workspace"), "options"), "rw"));
        ASSERT_FALSE(has_string(jpath(find_mount(c, "/workspace"), "options"), "ro"));
}

TEST(confined_has_seccomp_and_netns) {
        _cleanup_json_ json_object *c =
                build(true, FS_OVERLAY, NET_ALLOWLIST, false, "/run/netns/pond-job-42");
        _cleanup_json_ json_object *fresh = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);
        json_object *net;

        ASSERT_TRUE(c && fresh);
        ASSERT_STREQ("SCMP_ACT_ERRNO", json_object_get_string(jpath(c, "linux.seccomp.defaultAction")));
        ASSERT_OK(seccomp_policy_check(jpath(c, "linux.seccomp"), NULL));
        /* Only the native ABI: others (32-bit compat included) hit the bad-architecture action. */
        ASSERT_EQ(1, json_object_array_length(jpath(c, "linux.seccomp.architectures")));
        ASSERT_STREQ(seccomp_native_arch_name(),
                     json_object_get_string(json_object_array_get_idx(jpath(c, "linux.seccomp.architectures"), 0)));
        net = find_namespace(c, "network");
        ASSERT_TRUE(net);
        ASSERT_STREQ("/run/netns/pond-job-42", json_object_get_string(jpath(net, "path")));
        net = find_namespace(fresh, "network");
        ASSERT_TRUE(net);
        ASSERT_FALSE(jpath(net, "path"));
        ASSERT_TRUE(find_namespace(c, "pid") && find_namespace(c, "ipc") && find_namespace(c, "uts") &&
                    find_namespace(c, "mount") && find_namespace(c, "cgroup"));
        ASSERT_STREQ("payload", json_object_get_string(jpath(c, "linux.cgroupsPath")));
}

TEST(profile_none_has_no_seccomp_and_host_network) {
        _cleanup_json_ json_object *c = build(false, FS_HOST, NET_OPEN, false, NULL);

        ASSERT_TRUE(c);
        ASSERT_FALSE(jpath(c, "linux.seccomp"));
        ASSERT_FALSE(find_namespace(c, "network"));
        ASSERT_TRUE(find_namespace(c, "pid"));
        ASSERT_EQ(0, json_object_array_length(jpath(c, "process.capabilities.bounding")));
}

TEST(resources_equal_policy) {
        _cleanup_json_ json_object *c = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);
        json_object *dev;

        ASSERT_TRUE(c);
        ASSERT_EQ(2LL << 30, json_object_get_int64(jpath(c, "linux.resources.memory.limit")));
        ASSERT_EQ(2LL << 30, json_object_get_int64(jpath(c, "linux.resources.memory.swap")));
        ASSERT_EQ(150000, json_object_get_int64(jpath(c, "linux.resources.cpu.quota")));
        ASSERT_EQ(100000, json_object_get_int64(jpath(c, "linux.resources.cpu.period")));
        ASSERT_EQ(512, json_object_get_int64(jpath(c, "linux.resources.pids.limit")));
        dev = json_object_array_get_idx(jpath(c, "linux.resources.devices"), 0);
        ASSERT_FALSE(json_object_get_boolean(jpath(dev, "allow")));
        ASSERT_STREQ("rwm", json_object_get_string(jpath(dev, "access")));
        ASSERT_FALSE(jpath(dev, "type"));
}

TEST(masked_and_readonly_paths) {
        _cleanup_json_ json_object *c = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);

        ASSERT_TRUE(c);
        ASSERT_TRUE(has_string(jpath(c, "linux.maskedPaths"), "/proc/kcore"));
        ASSERT_TRUE(has_string(jpath(c, "linux.maskedPaths"), "/proc/keys"));
        ASSERT_TRUE(has_string(jpath(c, "linux.maskedPaths"), "/proc/key-users"));
        ASSERT_TRUE(has_string(jpath(c, "linux.maskedPaths"), "/proc/locks"));
        ASSERT_TRUE(has_string(jpath(c, "linux.maskedPaths"), "/sys/firmware"));
        ASSERT_TRUE(has_string(jpath(c, "linux.readonlyPaths"), "/proc/sys"));
        ASSERT_TRUE(has_string(jpath(c, "linux.readonlyPaths"), "/proc/sysrq-trigger"));
}

static const char *env_get(json_object *env, const char *key) {
        size_t n = strlen(key);

        for (size_t i = 0; env && i < json_object_array_length(env); i++) {
                const char *e = json_object_get_string(json_object_array_get_idx(env, i));
                if (strncmp(e, key, n) == 0 && e[n] == '=')
                        return e + n + 1;
        }
        return NULL;
}

TEST(environment_from_scratch) {
        static const char *const expected_keys[] = {
                "PATH", "HOME", "LANG", "TMPDIR", "USER", "TZ", "SOURCE_DATE_EPOCH", "POND_JOB_ID", "FOO",
        };
        _cleanup_json_ json_object *c = NULL;
        json_object *env;

        ASSERT_OK(setenv("POND_LEAK_CANARY", "leaked", 1));
        c = build(true, FS_OVERLAY, NET_ALLOWLIST, false, NULL);
        ASSERT_TRUE(c);
        env = jpath(c, "process.env");
        ASSERT_EQ(ELEMENTSOF(expected_keys), json_object_array_length(env));
        for (size_t i = 0; i < ELEMENTSOF(expected_keys); i++)
                ASSERT_TRUE(env_get(env, expected_keys[i]));
        ASSERT_FALSE(env_get(env, "POND_LEAK_CANARY"));
        for (char **e = environ; *e; e++)
                if (strncmp(*e, "PATH=", 5) && strncmp(*e, "HOME=", 5) && strncmp(*e, "LANG=", 5) &&
                    strncmp(*e, "USER=", 5) && strncmp(*e, "TMPDIR=", 7) && strncmp(*e, "TZ=", 3) &&
                    strncmp(*e, "SOURCE_DATE_EPOCH=", 18))
                        ASSERT_FALSE(has_string(env, *e));
        ASSERT_STREQ("job-42", env_get(env, "POND_JOB_ID"));
        ASSERT_STREQ("UTC", env_get(env, "TZ"));
        ASSERT_STREQ("315532800", env_get(env, "SOURCE_DATE_EPOCH"));
        ASSERT_STREQ("baz", env_get(env, "FOO"));
        ASSERT_STREQ("/workspace", env_get(env, "HOME"));
        ASSERT_STREQ("/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", env_get(env, "PATH"));
        unsetenv("POND_LEAK_CANARY");
}

TEST(refuses_zero_and_unsafe_inputs) {
        _cleanup_json_ json_object *sc = seccomp_policy();
        ResolvedPolicy r = policy(true, FS_OVERLAY, NET_ALLOWLIST);
        JobSpec s = spec();
        OciPaths p = paths(false, NULL);
        json_object *c = NULL;
        uint64_t *knobs[] = {
                &r.memory_bytes, &r.cpus_milli, &r.pids_limit, &r.host_pids_limit, &r.tmpfs_bytes, &r.nofile, &r.nproc,
        };

        ASSERT_TRUE(sc);
        for (size_t i = 0; i < ELEMENTSOF(knobs); i++) {
                uint64_t saved = *knobs[i];
                *knobs[i] = 0;
                ASSERT_ERROR(EINVAL, oci_config_build(&r, &s, sc, &p, &c));
                *knobs[i] = saved;
        }
        ASSERT_TRUE(c == NULL);
        ASSERT_ERROR(EINVAL, oci_config_build(&r, &s, NULL, &p, &c));
        p.cgroups_path = "/pond.slice/../escape";
        ASSERT_ERROR(EINVAL, oci_config_build(&r, &s, sc, &p, &c));
        p.cgroups_path = "../escape";
        ASSERT_ERROR(EINVAL, oci_config_build(&r, &s, sc, &p, &c));
        ASSERT_TRUE(c == NULL);
}

static int check_modified(json_object *good, void (*mutate)(json_object *), const char *error) {
        _cleanup_json_ json_object *copy = NULL;
        _cleanup_free_ char *msg = NULL;
        int r;

        if (json_object_deep_copy(good, &copy, NULL) < 0)
                return -1;
        mutate(copy);
        r = seccomp_policy_check(copy, &msg);
        if (r != -EINVAL || !msg || !strstr(msg, error)) {
                printf("# wanted -EINVAL with \"%s\", got %d \"%s\"\n", error, r, msg ?: "(null)");
                return -1;
        }
        return 0;
}

static void allow_default(json_object *o) {
        json_object_object_add(o, "defaultAction", json_object_new_string("SCMP_ACT_ALLOW"));
}
static void allow_mount(json_object *o) {
        json_object *names = jpath(json_object_array_get_idx(jpath(o, "syscalls"), 0), "names");
        json_object_array_add(names, json_object_new_string("mount"));
}
static void allow_unknown(json_object *o) {
        json_object *names = jpath(json_object_array_get_idx(jpath(o, "syscalls"), 0), "names");
        json_object_array_add(names, json_object_new_string("no_such_syscall"));
}
static void allow_unshare_logged(json_object *o) {
        json_object *rule = json_object_new_object();
        json_object *names = json_object_new_array();
        json_object_array_add(names, json_object_new_string("unshare"));
        json_object_object_add(rule, "names", names);
        json_object_object_add(rule, "action", json_object_new_string("SCMP_ACT_LOG"));
        json_object_array_add(jpath(o, "syscalls"), rule);
}
static void allow_clone_unfiltered(json_object *o) {
        json_object *names = jpath(json_object_array_get_idx(jpath(o, "syscalls"), 0), "names");
        json_object_array_add(names, json_object_new_string("clone"));
}
static void errno_runsc_cannot_say(json_object *o) {
        json_object *rule = json_object_new_object();
        json_object *names = json_object_new_array();
        json_object_array_add(names, json_object_new_string("chmod"));
        json_object_object_add(rule, "names", names);
        json_object_object_add(rule, "action", json_object_new_string("SCMP_ACT_ERRNO"));
        json_object_object_add(rule, "errnoRet", json_object_new_int(13));
        json_object_array_add(jpath(o, "syscalls"), rule);
}
static void unknown_action(json_object *o) {
        json_object_object_add(json_object_array_get_idx(jpath(o, "syscalls"), 0), "action",
                               json_object_new_string("SCMP_ACT_MAYBE"));
}

TEST(seccomp_policy_file) {
        _cleanup_json_ json_object *sc = seccomp_policy();
        _cleanup_free_ char *msg = NULL;

        ASSERT_TRUE(sc);
        ASSERT_OK(seccomp_policy_check(sc, &msg));
        ASSERT_TRUE(msg == NULL);
        ASSERT_OK(check_modified(sc, allow_default, "defaultAction"));
        ASSERT_OK(check_modified(sc, allow_mount, "\"mount\" is forbidden"));
        ASSERT_OK(check_modified(sc, allow_unknown, "unknown syscall \"no_such_syscall\""));
        ASSERT_OK(check_modified(sc, allow_unshare_logged, "\"unshare\" is forbidden"));
        ASSERT_OK(check_modified(sc, allow_clone_unfiltered, "clone may only be allowed"));
        ASSERT_OK(check_modified(sc, unknown_action, "syscalls[0].action"));
        ASSERT_OK(check_modified(sc, errno_runsc_cannot_say, "].errnoRet: must be 1 (EPERM) or 38"));
}

TEST(image_host_layout) {
        char dir[] = "/tmp/test-oci-XXXXXX", path[PATH_MAX], link[PATH_MAX];
        _cleanup_free_ char *passwd = NULL, *error = NULL;
        ImageLayout l = {};
        struct stat st;
        ssize_t n;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_OK(image_prepare("host", NULL, dir, &l, &error));
        snprintf(path, sizeof path, "%s/rootfs", dir);
        ASSERT_STREQ(path, l.rootfs);
        ASSERT_STREQ("/usr", l.host_usr);
        snprintf(path, sizeof path, "%s/etc/passwd", dir);
        ASSERT_OK(read_full_file(path, 65536, &passwd, NULL));
        ASSERT_CONTAINS("\njob:x:1000:1000:", passwd);
        snprintf(path, sizeof path, "%s/rootfs/bin", dir);
        n = readlink(path, link, sizeof link - 1);
        ASSERT_TRUE(n > 0);
        link[n > 0 ? n : 0] = 0;
        ASSERT_STREQ("usr/bin", link);
        snprintf(path, sizeof path, "%s/rootfs/workspace", dir);
        ASSERT_OK(stat(path, &st));
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        snprintf(path, sizeof path, "%s/rootfs/home/job", dir);
        ASSERT_OK(stat(path, &st));
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        snprintf(path, sizeof path, "%s/etc/os-release", dir);
        ASSERT_OK(lstat(path, &st));
        ASSERT_TRUE(S_ISLNK(st.st_mode));
        /* again over the leftovers: replaced, not refused */
        image_layout_done(&l);
        ASSERT_OK(image_prepare("host", NULL, dir, &l, &error));
        image_layout_done(&l);
        ASSERT_OK(image_cleanup(dir));
        ASSERT_OK(image_cleanup(dir));
        snprintf(path, sizeof path, "%s/rootfs", dir);
        ASSERT_ERROR(ENOENT, RET_NERRNO(lstat(path, &st)));
        ASSERT_OK(rmdir(dir));
}

TEST(image_directory_refusals) {
        char dir[] = "/tmp/test-oci-XXXXXX", path[PATH_MAX];
        _cleanup_free_ char *error = NULL;
        ImageLayout l = {};

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_ERROR(EINVAL, image_prepare("../etc", dir, dir, &l, &error));
        ASSERT_CONTAINS("must be", error);
        ASSERT_ERROR(EINVAL, image_prepare("Upper", dir, dir, &l, &error));
        ASSERT_ERROR(ENOENT, image_prepare("absent", dir, dir, &l, &error));
        snprintf(path, sizeof path, "%s/img", dir);
        ASSERT_OK(mkdir(path, 0755));
        ASSERT_ERROR(ENOENT, image_prepare("img", dir, dir, &l, &error));
        ASSERT_CONTAINS("usr", error);
        ASSERT_TRUE(l.rootfs == NULL);
        ASSERT_OK(rmdir(path));
        ASSERT_OK(rmdir(dir));
}

TEST_MAIN()
