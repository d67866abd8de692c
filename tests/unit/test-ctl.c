/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ctl.c: pondctl's pure parts: the spec `pondctl run` builds from its options (checked by the worker's
 * own parser), the checkout rewrite shared by submit and hash-input, generated job ids, the exit status a
 * result stands for, and reading the log index in order. */
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "basic/jobid.h"
#include "ctl.h"
#include "policy/spec.h"
#include "tests.h"

/* JSON written with ' for " (readable in C strings), parsed. */
static json_object *parse_q(const char *text) {
        _cleanup_free_ char *t = strdup(text);

        for (char *c = t; c && *c; c++)
                if (*c == '\'')
                        *c = '"';
        return t ? json_tokener_parse(t) : NULL;
}

/* Parses argv as `pondctl run` would and returns the spec it would submit, parsed back. */
static JobSpec *run_spec(int argc, char **argv, json_object *base, char **ret_buf) {
        _cleanup_(ctl_run_args_done) CtlRunArgs a = {};
        _cleanup_json_ json_object *spec = NULL;
        JobSpec *s = NULL;
        char *buf = NULL;
        size_t len;

        if (ctl_run_parse_argv(argc, argv, &a) < 0 || ctl_spec_build(base, &a.spec, &spec, NULL) < 0 ||
            ctl_spec_serialize(spec, &buf, &len) < 0)
                return NULL;
        if (ctl_spec_validate(buf, len, &s, NULL) < 0)
                s = NULL;
        if (ret_buf)
                *ret_buf = buf;
        else
                free(buf);
        return s;
}

TEST(run_options_build_a_valid_spec) {
        char *argv[] = { "run", "--profile", "untrusted-code-write", "--backend", "runc",
                         "--tier", "trusted", "--image", "host", "--checkout", "/tmp",
                         "--allow-host", "Registry.Example.org", "--allow-host", "*.git.example.net",
                         "--memory", "512M", "--cpus", "1.5", "--pids", "100", "--tmpfs-size", "64M",
                         "--timeout", "30", "--output", "out", "--output", "dist/a.whl",
                         "--env", "A=1", "--env", "B=x=y", "--job-id", "job-1", "--quiet",
                         "--", "make", "-j", "test", NULL };
        _cleanup_(job_spec_freep) JobSpec *s = run_spec(ELEMENTSOF(argv) - 1, argv, NULL, NULL);
        json_object *ov;

        ASSERT_TRUE(s);
        ASSERT_STREQ("job-1", s->job_id);
        ASSERT_STREQ("local", s->tenant);
        ASSERT_STREQ("make", s->command[0]);
        ASSERT_STREQ("-j", s->command[1]);
        ASSERT_STREQ("test", s->command[2]);
        ASSERT_TRUE(!s->command[3]);
        ASSERT_STREQ("/tmp", s->checkout);
        ASSERT_STREQ("untrusted-code-write", s->sandbox.profile);
        ASSERT_STREQ("runc", s->sandbox.backend);
        ASSERT_STREQ("trusted", s->sandbox.tier);
        ASSERT_STREQ("registry.example.org", s->sandbox.allow_hosts[0]);
        ASSERT_STREQ("*.git.example.net", s->sandbox.allow_hosts[1]);
        ASSERT_EQ(30, s->limits.wall_clock_s);
        ASSERT_STREQ("out", s->outputs[0]);
        ASSERT_STREQ("dist/a.whl", s->outputs[1]);
        ASSERT_STREQ("A=1", s->env[0]);
        ASSERT_STREQ("B=x=y", s->env[1]);
        ov = s->sandbox.overrides;
        ASSERT_STREQ("512M", json_object_get_string(json_object_object_get(ov, "memory")));
        ASSERT_STREQ("64M", json_object_get_string(json_object_object_get(ov, "tmpfs_size")));
        ASSERT_STREQ("host", json_object_get_string(json_object_object_get(ov, "image")));
        ASSERT_EQ(1500, (int) (json_object_get_double(json_object_object_get(ov, "cpus")) * 1000));
        ASSERT_EQ(100, json_object_get_int(json_object_object_get(ov, "pids_limit")));
}

TEST(run_minimal_generates_id_and_no_sandbox) {
        char *argv[] = { "run", "--", "true", NULL };
        _cleanup_(job_spec_freep) JobSpec *s = run_spec(3, argv, NULL, NULL);

        ASSERT_TRUE(s);
        ASSERT_TRUE(job_id_is_valid(s->job_id));
        ASSERT_TRUE(strncmp(s->job_id, "j-", 2) == 0);
        ASSERT_EQ(26, strlen(s->job_id));
        ASSERT_EQ('T', s->job_id[10]);
        ASSERT_EQ('-', s->job_id[17]);
        ASSERT_EQ(8, strspn(s->job_id + 18, "0123456789abcdef"));
        ASSERT_TRUE(!s->sandbox.profile); /* left to the policy, which refuses a missing profile */
        ASSERT_TRUE(!s->sandbox.overrides);
}

TEST(job_ids_differ) {
        _cleanup_free_ char *a = NULL, *b = NULL;

        ASSERT_OK(ctl_job_id_generate(&a));
        ASSERT_OK(ctl_job_id_generate(&b));
        ASSERT_TRUE(!streq(a, b));
}

TEST(options_override_spec_file) {
        static const char *base_text = "{'job_id': 'from-file', 'tenant': 'acme', 'command': ['a'],"
                                       " 'env': {'A': '1', 'B': '2'}, 'sandbox': {'profile': 'none',"
                                       " 'overrides': {'memory': '1G', 'pids_limit': 10}},"
                                       " 'outputs': ['x']}";
        char *argv[] = { "run", "--profile", "untrusted-code-read", "--env", "B=3", "--pids", "20",
                         "--output", "y", "--", "b", "c", NULL };
        _cleanup_json_ json_object *base = parse_q(base_text);
        _cleanup_(job_spec_freep) JobSpec *s = run_spec(ELEMENTSOF(argv) - 1, argv, base, NULL);
        json_object *ov;

        ASSERT_TRUE(s);
        ASSERT_STREQ("from-file", s->job_id);
        ASSERT_STREQ("acme", s->tenant);
        ASSERT_STREQ("b", s->command[0]);
        ASSERT_STREQ("untrusted-code-read", s->sandbox.profile);
        ASSERT_STREQ("A=1", s->env[0]);
        ASSERT_STREQ("B=3", s->env[1]);
        ASSERT_STREQ("y", s->outputs[0]);
        ASSERT_TRUE(!s->outputs[1]);
        ov = s->sandbox.overrides;
        ASSERT_STREQ("1G", json_object_get_string(json_object_object_get(ov, "memory")));
        ASSERT_EQ(20, json_object_get_int(json_object_object_get(ov, "pids_limit")));
        /* The base object itself is left alone. */
        ASSERT_STREQ("none", json_object_get_string(json_object_object_get(
                json_object_object_get(base, "sandbox"), "profile")));
}

TEST(bad_options_are_refused) {
        char *env[] = { "run", "--env", "NOEQUALS", "--", "true", NULL };
        char *cpus[] = { "run", "--cpus", "-1", "--", "true", NULL };
        char *pids[] = { "run", "--pids", "0x10", "--", "true", NULL };
        char *mem[] = { "run", "--memory", "lots", "--", "true", NULL };
        char *nocmd[] = { "run", "--profile", "none", NULL };
        char *badid[] = { "run", "--job-id", "../x", "--", "true", NULL };
        _cleanup_(ctl_run_args_done) CtlRunArgs a = {};
        _cleanup_free_ char *err = NULL;
        json_object *spec = NULL;

        ASSERT_OK(ctl_run_parse_argv(5, env, &a));
        ASSERT_ERROR(EINVAL, ctl_spec_build(NULL, &a.spec, &spec, &err));
        ASSERT_CONTAINS("--env", err);
        ASSERT_TRUE(ctl_run_parse_argv(5, cpus, &(CtlRunArgs) {}) < 0);
        ASSERT_TRUE(ctl_run_parse_argv(5, pids, &(CtlRunArgs) {}) < 0);
        ASSERT_TRUE(ctl_run_parse_argv(5, mem, &(CtlRunArgs) {}) < 0);
        ASSERT_TRUE(ctl_run_parse_argv(3, nocmd, &(CtlRunArgs) {}) < 0);
        /* Well-formed options, but the worker's parser refuses the spec: refused before submitting. */
        ASSERT_TRUE(!run_spec(5, badid, NULL, NULL));
}

TEST(checkout_rewrite_is_verbatim_without_checkout) {
        static const char *text = "{ \"job_id\":\"a\",\"tenant\":\"t\",\"command\":[\"x\"] }";
        _cleanup_free_ char *out = NULL, *out2 = NULL;
        _cleanup_json_ json_object *o = NULL;
        size_t len, len2;

        ASSERT_OK(ctl_spec_rewrite(text, strlen(text), NULL, &out, &len, NULL));
        ASSERT_EQ(strlen(text), len);
        ASSERT_STREQ(text, out);
        ASSERT_OK(ctl_spec_rewrite(text, strlen(text), "/srv/co", &out2, &len2, NULL));
        ASSERT_EQ('\n', out2[len2 - 1]);
        ASSERT_OK(ctl_spec_validate(out2, len2, NULL, NULL));
        o = json_tokener_parse(out2);
        ASSERT_STREQ("/srv/co", json_object_get_string(json_object_object_get(o, "checkout")));
}

/* The exit status of a result; *ret_why (a copy: the reason lives in the result) if asked. */
static int exit_of(const char *json, char **ret_why) {
        _cleanup_json_ json_object *o = parse_q(json);
        const char *why = NULL;
        int r = ctl_exit_status_from_result(o, &why);

        if (ret_why)
                *ret_why = why ? strdup(why) : NULL;
        return r;
}

TEST(exit_status_from_result) {
        _cleanup_free_ char *w1 = NULL, *w2 = NULL, *w3 = NULL, *w4 = NULL;

        ASSERT_EQ(0, exit_of("{'status':'completed','exit':{'rc':0,'signal':null,'timed_out':false}}", &w1));
        ASSERT_TRUE(!w1);
        ASSERT_EQ(3, exit_of("{'status':'completed','exit':{'rc':3,'signal':null}}", NULL));
        ASSERT_EQ(128 + 9, exit_of("{'status':'completed','exit':{'rc':null,'signal':'SIGKILL'}}", NULL));
        ASSERT_EQ(128 + 15, exit_of("{'status':'completed','exit':{'signal':'SIGTERM'}}", NULL));
        ASSERT_EQ(126, exit_of("{'status':'completed','exit':{'signal':'?'}}", NULL));
        ASSERT_EQ(124, exit_of("{'status':'completed','exit':{'signal':'SIGKILL','timed_out':true}}", &w2));
        ASSERT_TRUE(w2);
        ASSERT_EQ(125, exit_of("{'status':'refused','reason':'sandbox.profile: missing','exit':{}}", &w3));
        ASSERT_STREQ("sandbox.profile: missing", w3);
        ASSERT_EQ(126, exit_of("{'status':'failed','reason':'runtime broke'}", &w4));
        ASSERT_STREQ("runtime broke", w4);
        ASSERT_EQ(130, exit_of("{'status':'cancelled','exit':{'signal':'SIGKILL','cancelled':true}}", NULL));
        ASSERT_EQ(126, exit_of("{'status':'weird'}", NULL));
        ASSERT_EQ(126, exit_of("{'exit':{'rc':0}}", NULL));
        ASSERT_EQ(126, exit_of("{'status':'completed','exit':{}}", NULL));
}

TEST(index_line_parse) {
        CtlIndexEntry e;
        static const char *line = "1 stdout 0 6 1700000000000000\n";

        ASSERT_OK(ctl_index_line_parse(line, strlen(line), &e));
        ASSERT_EQ(1, e.seq);
        ASSERT_EQ(OUTPUT_STDOUT, e.stream);
        ASSERT_EQ(0, e.offset);
        ASSERT_EQ(6, e.length);
        ASSERT_EQ(1700000000000000LL, e.usec);
        ASSERT_OK(ctl_index_line_parse("12 stderr 4096 10 5", 19, &e));
        ASSERT_EQ(OUTPUT_STDERR, e.stream);
        ASSERT_EQ(4096, e.offset);
        /* Only a prefix of the buffer counts: the line need not be NUL-terminated. */
        ASSERT_OK(ctl_index_line_parse("3 stdout 1 2 3 garbage", 14, &e));
        ASSERT_EQ(3, e.usec);

        static const char *const bad[] = {
                "", "1 stdout 0 6", "1 stdin 0 6 7", "1 stdout -1 6 7", "1 stdout 0 6 7 8",
                "1  stdout 0 6 7",
                "x stdout 0 6 7", "1 stdout 0 6 7x", "1 stdout 99999999999999999999999 1 1",
                "1 stdout 18446744073709551615 1 1", " 1 stdout 0 6 7",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (ctl_index_line_parse(bad[i], strlen(bad[i]), &e) >= 0)
                        TEST_FAIL_("accepted bad index line '%s'", bad[i]);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static int put(const char *dir, const char *name, const char *content) {
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t) strlen(content))
                return -EIO;
        return 0;
}

static void slurp(int fd, char *buf, size_t size) {
        ssize_t n = pread(fd, buf, size - 1, 0);
        buf[n < 0 ? 0 : n] = 0;
}

TEST(log_follower_replays_in_index_order) {
        char dir[] = "/tmp/pond-test-ctl-XXXXXX", out[256], err[256];
        _cleanup_(ctl_log_follower_done) CtlLogFollower f = CTL_LOG_FOLLOWER_NULL;
        _cleanup_close_ int o = -EBADF, e = -EBADF;
        _cleanup_free_ char *logdir = NULL;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_TRUE(asprintf(&logdir, "%s/log", dir) > 0);
        o = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        e = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ASSERT_TRUE(o >= 0 && e >= 0);
        ASSERT_OK(ctl_log_follower_init(&f, logdir, o, e));
        ASSERT_OK(ctl_log_follower_drain(&f)); /* no log dir yet: nothing, no error */
        ASSERT_EQ(0, mkdir(logdir, 0700));
        ASSERT_OK(put(logdir, "stdout", "hello world\n"));
        ASSERT_OK(put(logdir, "stderr", "warn\n"));
        /* A partial last line is not consumed until it is complete. */
        ASSERT_OK(put(logdir, "index", "1 stdout 0 6 1\n2 stderr 0 5 2\n3 stdout 6 6"));
        ASSERT_OK(ctl_log_follower_drain(&f));
        slurp(o, out, sizeof out);
        slurp(e, err, sizeof err);
        ASSERT_STREQ("hello ", out);
        ASSERT_STREQ("warn\n", err);
        ASSERT_OK(put(logdir, "index", " 3\n"));
        ASSERT_OK(ctl_log_follower_drain(&f));
        slurp(o, out, sizeof out);
        ASSERT_STREQ("hello world\n", out);
        ASSERT_EQ(3, f.chunks);
        /* An index naming bytes that are not there is corrupt. */
        ASSERT_OK(put(logdir, "index", "4 stdout 100 5 4\n"));
        ASSERT_ERROR(EBADMSG, ctl_log_follower_drain(&f));
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TEST_MAIN()
