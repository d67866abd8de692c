/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ctl-cli.c: pondctl as scripts use it: --help on every verb and bare pondctl (where the usage goes,
 * which exit status), usage errors against refusals, list's filters and their parsing, the JSON shapes of
 * list, status and wait (every key there, null when not known), submit's spec from stdin, and the log
 * follower's switch from the live log to the result's copy without a repeated or a lost chunk. */
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "basic/strv.h"
#include "ctl.h"
#include "tests.h"

static json_object *parse_q(const char *text) {
        _cleanup_free_ char *t = strdup(text);

        for (char *c = t; c && *c; c++)
                if (*c == '\'')
                        *c = '"';
        return t ? json_tokener_parse(t) : NULL;
}

/* ctl_main(argv) with stdout and stderr captured (TAP owns the real stdout); their sizes in *ret_out and
 * *ret_err, the first bytes of stdout in out (may be NULL). */
static int run_main(char **argv, size_t *ret_out, size_t *ret_err, char *out, size_t out_size) {
        int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO), argc = 0, r;
        int o = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        int e = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ssize_t n;

        while (argv[argc])
                argc++;
        fflush(stdout);
        fflush(stderr);
        dup2(o, STDOUT_FILENO);
        dup2(e, STDERR_FILENO);
        r = ctl_main(argc, argv);
        fflush(stdout);
        fflush(stderr);
        dup2(saved_out, STDOUT_FILENO);
        dup2(saved_err, STDERR_FILENO);
        *ret_out = (size_t) lseek(o, 0, SEEK_END);
        *ret_err = (size_t) lseek(e, 0, SEEK_END);
        if (out) {
                n = pread(o, out, out_size - 1, 0);
                out[n < 0 ? 0 : n] = 0;
        }
        close(o);
        close(e);
        close(saved_out);
        close(saved_err);
        return r;
}

TEST(bare_pondctl_is_a_usage_error_on_stderr) {
        char *argv[] = { "pondctl", NULL };
        size_t out, err;

        ASSERT_EQ(CTL_EXIT_USAGE, run_main(argv, &out, &err, NULL, 0));
        ASSERT_EQ(0, out);
        ASSERT_TRUE(err > 0);
}

TEST(help_goes_to_stdout_with_status_0) {
        static const char *const verbs[] = {
                "run", "submit", "status", "logs", "wait", "cancel", "list", "result", "verify", "keygen",
                "hash-input", "image", "probe", "seal", "bundle", "dispatch-check",
        };
        char buf[256];
        size_t out, err;

        ASSERT_EQ(0, run_main((char *[]) { "pondctl", "--help", NULL }, &out, &err, buf, sizeof buf));
        ASSERT_TRUE(out > 0);
        ASSERT_EQ(0, err);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                _cleanup_free_ char *want = NULL;

                ASSERT_EQ(0, run_main((char *[]) { "pondctl", (char *) verbs[i], "--help", NULL }, &out, &err,
                                      buf, sizeof buf));
                ASSERT_EQ(0, err);
                ASSERT_TRUE(asprintf(&want, "Usage: pondctl %s ", verbs[i]) > 0);
                ASSERT_CONTAINS(want, buf);
                ASSERT_TRUE(ctl_verb_usage_args(verbs[i]) != NULL);
        }
        /* -h too, and after other arguments; not after "--", where the job's command starts. */
        ASSERT_EQ(0, run_main((char *[]) { "pondctl", "status", "j-1", "-h", NULL }, &out, &err, buf, sizeof buf));
        ASSERT_CONTAINS("Usage: pondctl status ", buf);
        ASSERT_FALSE(ctl_wants_help(4, (char *[]) { "run", "--", "grep", "--help", NULL }));
        ASSERT_TRUE(ctl_wants_help(3, (char *[]) { "run", "--help", "--", NULL }));
        ASSERT_TRUE(ctl_verb_usage_args("nosuchverb") == NULL);
}

TEST(usage_errors_are_64_refusals_125) {
        size_t out, err;

        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "nosuchverb", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "--bogus", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "status", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "status", "a", "b", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "status", "../x", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "logs", "--bogus", "j", NULL }, &out, &err,
                                           NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "wait", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "submit", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "list", "extra", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "list", "--state", "done", NULL }, &out, &err,
                                           NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "list", "--since", "yesterday", NULL }, &out,
                                           &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "image", "nosuch", NULL }, &out, &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "run", "--bogus", "--", "true", NULL }, &out,
                                           &err, NULL, 0));
        ASSERT_EQ(CTL_EXIT_USAGE, run_main((char *[]) { "pondctl", "run", "--profile", "p", NULL }, &out, &err,
                                           NULL, 0));
        /* A bad value is a refused spec, as before (tests and scripts expect 125). */
        ASSERT_EQ(CTL_EXIT_REFUSED, run_main((char *[]) { "pondctl", "run", "--pids", "0", "--", "true", NULL },
                                             &out, &err, NULL, 0));
        ASSERT_EQ(0, out);
}

TEST(no_such_job_is_4) {
        char dir[] = "/tmp/pond-test-cli-XXXXXX";
        size_t out, err;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_EQ(0, setenv("POND_STATEDIR", dir, 1));
        ASSERT_EQ(CTL_EXIT_NOT_FOUND, run_main((char *[]) { "pondctl", "status", "--json", "j-none", NULL }, &out,
                                               &err, NULL, 0));
        ASSERT_EQ(0, out);
        ASSERT_EQ(CTL_EXIT_NOT_FOUND, run_main((char *[]) { "pondctl", "logs", "j-none", NULL }, &out, &err, NULL,
                                               0));
        ASSERT_EQ(CTL_EXIT_NOT_FOUND, run_main((char *[]) { "pondctl", "cancel", "j-none", NULL }, &out, &err,
                                               NULL, 0));
        ASSERT_EQ(CTL_EXIT_NOT_FOUND, run_main((char *[]) { "pondctl", "wait", "--json", "j-none", NULL }, &out,
                                               &err, NULL, 0));
        /* Nothing was ever submitted: list --json is an empty array, not an error. */
        char buf[64];
        ASSERT_EQ(0, run_main((char *[]) { "pondctl", "list", "--json", NULL }, &out, &err, buf, sizeof buf));
        _cleanup_json_ json_object *a = json_tokener_parse(buf);
        ASSERT_TRUE(json_object_is_type(a, json_type_array));
        ASSERT_EQ(0, json_object_array_length(a));
        unsetenv("POND_STATEDIR");
        rmdir(dir);
}

TEST(since_parse) {
        uint64_t now = 1800000000ULL * 1000000, t;

        ASSERT_OK(ctl_since_parse("@1700000000", now, &t));
        ASSERT_EQ(1700000000ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("2023-11-14", now, &t));
        ASSERT_EQ(1699920000ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("2023-11-14T22:13:20", now, &t));
        ASSERT_EQ(1700000000ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("2023-11-14T22:13:20Z", now, &t));
        ASSERT_EQ(1700000000ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("2023-11-14T22:13", now, &t));
        ASSERT_EQ(1699999980ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("90s", now, &t));
        ASSERT_EQ(now - 90ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("30m", now, &t));
        ASSERT_EQ(now - 1800ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("2h", now, &t));
        ASSERT_EQ(now - 7200ULL * 1000000, t);
        ASSERT_OK(ctl_since_parse("1d", now, &t));
        ASSERT_EQ(now - 86400ULL * 1000000, t);

        static const char *const bad[] = {
                "", "@", "@-1", "@1x", "h", "2x", "-1h", "1.5h", "2023-11-14T", "2023-11-14 22:13",
                "2023-13-01", "2023-11-14T22:13:20+01:00", "yesterday", "2023-11-14Tx",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (ctl_since_parse(bad[i], now, &t) >= 0)
                        TEST_FAIL_("accepted --since '%s'", bad[i]);
}

TEST(list_args_and_filter) {
        _cleanup_(ctl_list_args_done) CtlListArgs a = {};
        char *argv[] = { "list", "--json", "--state", "running,failed", "--state", "failed", "--since", "@100",
                         "--profile", "p", NULL };
        CtlJobInfo i = { .job_id = "j", .state = "running", .profile = "p", .submitted_usec = 100000000 };

        ASSERT_OK(ctl_list_parse_argv(ELEMENTSOF(argv) - 1, argv, 0, &a));
        ASSERT_TRUE(a.json);
        ASSERT_STREQ("running", a.filter.states[0]);
        ASSERT_STREQ("failed", a.filter.states[1]);
        ASSERT_TRUE(a.filter.states[2] == NULL); /* named twice, kept once */
        ASSERT_EQ(100000000, a.filter.since_usec);
        ASSERT_STREQ("p", a.filter.profile);

        ASSERT_TRUE(ctl_list_filter_match(&a.filter, &i));
        i.state = "completed";
        ASSERT_FALSE(ctl_list_filter_match(&a.filter, &i));
        i.state = "failed";
        i.submitted_usec = 99999999;
        ASSERT_FALSE(ctl_list_filter_match(&a.filter, &i));
        i.submitted_usec = 0; /* unknown submission time: not shown as recent */
        ASSERT_FALSE(ctl_list_filter_match(&a.filter, &i));
        i.submitted_usec = 200000000;
        i.profile = NULL;
        ASSERT_FALSE(ctl_list_filter_match(&a.filter, &i));
        i.profile = "p";
        ASSERT_TRUE(ctl_list_filter_match(&a.filter, &i));
        ASSERT_TRUE(ctl_list_filter_match(&(CtlListFilter) {}, &(CtlJobInfo) { .job_id = "x", .state = "unknown" }));

        char **states = NULL;
        ASSERT_ERROR(EINVAL, ctl_states_add("running,", &states));
        states = strv_free(states);
        ASSERT_ERROR(EINVAL, ctl_states_add("Running", &states));
        states = strv_free(states);
}

TEST(job_state) {
        CtlUnitState pending = { .loaded = true, .job_pending = true, .active_state = "inactive" };
        CtlUnitState running = { .loaded = true, .active_state = "active" };
        CtlUnitState gone = { .active_state = "inactive" };
        _cleanup_json_ json_object *done = parse_q("{'status':'completed'}"), *odd = parse_q("{'status':'odd'}");

        ASSERT_STREQ("completed", ctl_job_state(done, &running));
        ASSERT_STREQ("failed", ctl_job_state(odd, NULL));
        ASSERT_STREQ("pending", ctl_job_state(NULL, &pending));
        ASSERT_STREQ("running", ctl_job_state(NULL, &running));
        ASSERT_STREQ("failed", ctl_job_state(NULL, &gone));
        ASSERT_STREQ("unknown", ctl_job_state(NULL, NULL));
}

static const char *str(json_object *o, const char *key) {
        return json_object_get_string(json_object_object_get(o, key));
}

static bool has_null(json_object *o, const char *key) {
        json_object *v = NULL;

        return json_object_object_get_ex(o, key, &v) && !v;
}

TEST(list_entry_json) {
        _cleanup_json_ json_object *result = parse_q("{'status':'completed','profile':'untrusted-code-write',"
                                                     "'exit':{'rc':3,'signal':null}}");
        _cleanup_json_ json_object *o = NULL, *k = NULL;
        CtlJobInfo i = { .job_id = "j-1", .state = "completed", .submitted_usec = 1700000000000000ULL };

        ctl_job_info_from_result(&i, result);
        ASSERT_OK(ctl_job_info_to_json(&i, &o));
        ASSERT_STREQ("j-1", str(o, "job_id"));
        ASSERT_STREQ("completed", str(o, "state"));
        ASSERT_STREQ("untrusted-code-write", str(o, "profile"));
        ASSERT_EQ(3, json_object_get_int(json_object_object_get(o, "rc")));
        ASSERT_TRUE(has_null(o, "signal"));
        ASSERT_EQ(1700000000000000LL, json_object_get_int64(json_object_object_get(o, "submitted_usec")));
        ASSERT_EQ(6, json_object_object_length(o));

        /* Killed by a signal: rc null, signal named. Nothing known: every key still there, null. */
        json_object_put(result);
        result = parse_q("{'status':'completed','exit':{'rc':null,'signal':'SIGKILL'}}");
        i = (CtlJobInfo) { .job_id = "j-2", .state = "completed" };
        ctl_job_info_from_result(&i, result);
        ASSERT_OK(ctl_job_info_to_json(&i, &k));
        ASSERT_TRUE(has_null(k, "rc"));
        ASSERT_STREQ("SIGKILL", str(k, "signal"));
        ASSERT_TRUE(has_null(k, "profile"));
        ASSERT_TRUE(has_null(k, "submitted_usec"));
}

TEST(status_json) {
        _cleanup_json_ json_object *result = parse_q("{'status':'refused','reason':'sandbox.profile: missing'}");
        _cleanup_json_ json_object *o = NULL, *n = NULL;
        CtlUnitState st = { .loaded = true, .active_state = "active", .sub_state = "running",
                            .status_text = "running" };
        CtlJobInfo i = { .job_id = "j-1", .state = "refused" };
        json_object *res;

        ASSERT_OK(ctl_status_to_json(&i, "pond-job@j-1.service", &st, result, &o));
        ASSERT_STREQ("j-1", str(o, "job_id"));
        ASSERT_STREQ("pond-job@j-1.service", str(o, "unit"));
        ASSERT_STREQ("active", str(o, "active_state"));
        ASSERT_STREQ("running", str(o, "sub_state"));
        ASSERT_STREQ("running", str(o, "status_text"));
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(o, "loaded")));
        res = json_object_object_get(o, "result");
        ASSERT_STREQ("refused", str(res, "status"));
        ASSERT_EQ(125, json_object_get_int(json_object_object_get(res, "exit_status")));
        ASSERT_STREQ("sandbox.profile: missing", str(res, "reason"));
        ASSERT_FALSE(json_object_get_boolean(json_object_object_get(res, "verified")));

        /* No bus and no result: the unit's keys and result are null, not missing. */
        i = (CtlJobInfo) { .job_id = "j-2", .state = "unknown" };
        ASSERT_OK(ctl_status_to_json(&i, "pond-job@j-2.service", NULL, NULL, &n));
        ASSERT_TRUE(has_null(n, "active_state"));
        ASSERT_TRUE(has_null(n, "sub_state"));
        ASSERT_TRUE(has_null(n, "loaded"));
        ASSERT_TRUE(has_null(n, "status_text"));
        ASSERT_TRUE(has_null(n, "result"));
        ASSERT_STREQ("unknown", str(n, "state"));
}

TEST(wait_json) {
        _cleanup_json_ json_object *result = parse_q("{'status':'completed','exit':{'rc':null,'signal':'SIGKILL',"
                                                     "'timed_out':true}}");
        _cleanup_json_ json_object *o = NULL, *u = NULL;

        ASSERT_OK(ctl_wait_to_json("j-1", "/var/lib/pond/results/j-1", 124, result, &o));
        ASSERT_STREQ("j-1", str(o, "job_id"));
        ASSERT_EQ(124, json_object_get_int(json_object_object_get(o, "exit_status")));
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(o, "verified")));
        ASSERT_STREQ("completed", str(o, "status"));
        ASSERT_STREQ("the job ran out of wall-clock time", str(o, "reason"));
        ASSERT_STREQ("/var/lib/pond/results/j-1", str(o, "result_dir"));
        ASSERT_STREQ("SIGKILL", str(json_object_object_get(json_object_object_get(o, "result"), "exit"), "signal"));

        ASSERT_OK(ctl_wait_to_json("j-2", "/r/j-2", 127, NULL, &u));
        ASSERT_FALSE(json_object_get_boolean(json_object_object_get(u, "verified")));
        ASSERT_EQ(127, json_object_get_int(json_object_object_get(u, "exit_status")));
        ASSERT_TRUE(has_null(u, "status"));
        ASSERT_TRUE(has_null(u, "reason"));
        ASSERT_TRUE(has_null(u, "result"));
}

TEST(spec_from_stdin) {
        static const char spec[] = "{\"job_id\": \"j-in\", \"command\": [\"true\"]}\n";
        _cleanup_free_ char *buf = NULL, *err = NULL;
        int fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600), saved = dup(STDIN_FILENO);
        int pipefd[2];
        size_t len;

        /* From a file on stdin and from a pipe: the same bytes. */
        ASSERT_TRUE(fd >= 0 && saved >= 0);
        ASSERT_EQ((ssize_t) strlen(spec), write(fd, spec, strlen(spec)));
        ASSERT_EQ(0, (int) lseek(fd, 0, SEEK_SET));
        dup2(fd, STDIN_FILENO);
        ASSERT_OK(ctl_spec_read("-", &buf, &len, &err));
        ASSERT_EQ(strlen(spec), len);
        ASSERT_STREQ(spec, buf);
        free(buf);
        buf = NULL;
        ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
        ASSERT_EQ((ssize_t) strlen(spec), write(pipefd[1], spec, strlen(spec)));
        close(pipefd[1]);
        dup2(pipefd[0], STDIN_FILENO);
        ASSERT_OK(ctl_spec_read("-", &buf, &len, &err));
        ASSERT_STREQ(spec, buf);
        close(pipefd[0]);
        /* Bounded like a file: more than CTL_SPEC_MAX bytes is refused. */
        ASSERT_EQ(0, ftruncate(fd, CTL_SPEC_MAX + 1));
        ASSERT_EQ(0, (int) lseek(fd, 0, SEEK_SET));
        dup2(fd, STDIN_FILENO);
        free(buf);
        buf = NULL;
        ASSERT_ERROR(EINVAL, ctl_spec_read("-", &buf, &len, &err));
        ASSERT_CONTAINS("stdin: larger than", err);
        dup2(saved, STDIN_FILENO);
        close(saved);
        close(fd);
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

static int link_all(const char *from, const char *to) {
        static const char *const files[] = { "stdout", "stderr", "index" };

        if (mkdir(to, 0700) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *a = NULL, *b = NULL;

                if (asprintf(&a, "%s/%s", from, files[i]) < 0 || asprintf(&b, "%s/%s", to, files[i]) < 0)
                        return -ENOMEM;
                if (link(a, b) < 0)
                        return -errno;
        }
        return 0;
}

static void slurp(int fd, char *buf, size_t size) {
        ssize_t n = pread(fd, buf, size - 1, 0);
        buf[n < 0 ? 0 : n] = 0;
}

/* The result's log is hard links of the live one (pond-run's link_logs()): following the live log, then
 * switching mid-line to the copy, shows every chunk once; a copy that does not begin with what was shown is
 * refused and leaves the follower as it was. */
TEST(log_follower_switches_without_repeating) {
        char dir[] = "/tmp/pond-test-cli-XXXXXX", out[256];
        _cleanup_(ctl_log_follower_done) CtlLogFollower f = CTL_LOG_FOLLOWER_NULL;
        _cleanup_free_ char *live = NULL, *signed_dir = NULL, *other = NULL;
        _cleanup_close_ int o = -EBADF;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_TRUE(asprintf(&live, "%s/live", dir) > 0);
        ASSERT_TRUE(asprintf(&signed_dir, "%s/signed", dir) > 0);
        ASSERT_TRUE(asprintf(&other, "%s/other", dir) > 0);
        o = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ASSERT_TRUE(o >= 0);
        ASSERT_OK(ctl_log_follower_init(&f, live, o, -EBADF));
        ASSERT_OK(ctl_log_follower_drain(&f)); /* the live log does not exist yet */
        ASSERT_EQ(0, mkdir(live, 0700));
        ASSERT_OK(put(live, "stdout", "one\ntwo\n"));
        ASSERT_OK(put(live, "stderr", ""));
        ASSERT_OK(put(live, "index", "1 stdout 0 4 1\n2 stdout 4"));
        ASSERT_OK(ctl_log_follower_drain(&f));
        slurp(o, out, sizeof out);
        ASSERT_STREQ("one\n", out);

        /* A copy that differs in what was already read: refused, nothing changes. */
        ASSERT_EQ(0, mkdir(other, 0700));
        ASSERT_OK(put(other, "index", "1 stdout 0 4 2\n2 stdout 4 4 2\n"));
        ASSERT_ERROR(EBADMSG, ctl_log_follower_switch(&f, other));
        ASSERT_STREQ(live, f.dir);

        ASSERT_OK(link_all(live, signed_dir));
        ASSERT_OK(put(live, "stdout", "three\n"));
        ASSERT_OK(put(live, "index", " 4 2\n3 stdout 8 6 3\n"));
        ASSERT_OK(ctl_log_follower_switch(&f, signed_dir));
        ASSERT_STREQ(signed_dir, f.dir);
        ASSERT_OK(ctl_log_follower_drain(&f));
        slurp(o, out, sizeof out);
        ASSERT_STREQ("one\ntwo\nthree\n", out);
        ASSERT_EQ(3, f.chunks);
        ASSERT_OK(ctl_log_follower_drain(&f)); /* at the end: nothing more, nothing twice */
        slurp(o, out, sizeof out);
        ASSERT_STREQ("one\ntwo\nthree\n", out);
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TEST(log_follower_switch_before_any_read) {
        char dir[] = "/tmp/pond-test-cli-XXXXXX", out[64];
        _cleanup_(ctl_log_follower_done) CtlLogFollower f = CTL_LOG_FOLLOWER_NULL;
        _cleanup_free_ char *live = NULL, *signed_dir = NULL;
        _cleanup_close_ int o = -EBADF;

        /* The spool's live log never appeared (the job was refused before it ran, or it was removed): the
         * result's copy is shown whole. */
        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_TRUE(asprintf(&live, "%s/live", dir) > 0);
        ASSERT_TRUE(asprintf(&signed_dir, "%s/signed", dir) > 0);
        o = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        ASSERT_OK(ctl_log_follower_init(&f, live, o, -EBADF));
        ASSERT_OK(ctl_log_follower_drain(&f));
        ASSERT_EQ(0, mkdir(signed_dir, 0700));
        ASSERT_OK(put(signed_dir, "stdout", "all\n"));
        ASSERT_OK(put(signed_dir, "index", "1 stdout 0 4 1\n"));
        ASSERT_OK(ctl_log_follower_switch(&f, signed_dir));
        ASSERT_OK(ctl_log_follower_drain(&f));
        slurp(o, out, sizeof out);
        ASSERT_STREQ("all\n", out);
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TEST_MAIN()
