/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-metrics: the worker's Prometheus counters file: the text format written and read back, refusal
 * reasons reduced to their field, label values sanitized, a file that is not pond's started again, and
 * concurrent writers (forked processes) losing no count under the directory's lock. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "record/metrics.h"
#include "tests.h"

TEST_MAIN();

TEST(format_and_parse) {
        _cleanup_(metrics_done) Metrics m = {}, back = {};
        _cleanup_free_ char *text = NULL, *again = NULL;

        ASSERT_OK(metrics_add(&m, "pond_jobs_total", "status", "refused", 2));
        ASSERT_OK(metrics_add(&m, "pond_jobs_total", "status", "completed", 5));
        ASSERT_OK(metrics_add(&m, "pond_egress_denials_total", NULL, NULL, 3));
        ASSERT_OK(metrics_add(&m, "pond_jobs_total", "status", "completed", 1));
        EXPECT_ERROR(EINVAL, metrics_add(&m, "pond jobs", NULL, NULL, 1));
        EXPECT_ERROR(EINVAL, metrics_add(&m, "pond_jobs_total", "status", "a\"b", 1));
        EXPECT_ERROR(EINVAL, metrics_add(&m, "pond_jobs_total", "status", "", 1));
        ASSERT_OK(metrics_format(&m, &text));
        EXPECT_STREQ("# HELP pond_egress_denials_total Connections the jobs' egress proxies denied.\n"
                     "# TYPE pond_egress_denials_total counter\n"
                     "pond_egress_denials_total 3\n"
                     "# HELP pond_jobs_total Jobs whose result this worker signed, by status.\n"
                     "# TYPE pond_jobs_total counter\n"
                     "pond_jobs_total{status=\"completed\"} 6\n"
                     "pond_jobs_total{status=\"refused\"} 2\n", text);
        ASSERT_OK(metrics_parse(text, &back));
        ASSERT_OK(metrics_format(&back, &again));
        EXPECT_STREQ(text, again);
}

TEST(parse_refuses_foreign_text) {
        _cleanup_(metrics_done) Metrics m = {};

        EXPECT_ERROR(EINVAL, metrics_parse("pond_jobs_total{status=\"x\"}\n", &m));
        EXPECT_ERROR(EINVAL, metrics_parse("pond_jobs_total 1.5\n", &m));
        EXPECT_ERROR(EINVAL, metrics_parse("pond_jobs_total{status=\"x\" 1\n", &m));
        EXPECT_ERROR(EINVAL, metrics_parse("pond_jobs_total -1\n", &m));
        EXPECT_ERROR(EINVAL, metrics_parse("<html>\n", &m));
        ASSERT_OK(metrics_parse("# a comment\n\npond_x 0\n", &m));
        EXPECT_EQ(1U, m.n);
}

TEST(refusal_reasons) {
        char b[METRICS_LABEL_MAX];

        metrics_refusal_reason("sandbox.backend: 'kata' is not available on this worker", b);
        EXPECT_STREQ("sandbox.backend", b);
        metrics_refusal_reason("outputs[12].path: must be relative", b);
        EXPECT_STREQ("outputs.path", b);
        metrics_refusal_reason("cannot read the job spec /x: No such file", b);
        EXPECT_STREQ("other", b);
        metrics_refusal_reason("admission: the worker runs 4 jobs", b);
        EXPECT_STREQ("admission", b);
        metrics_refusal_reason(NULL, b);
        EXPECT_STREQ("other", b);
        metrics_refusal_reason("Sandbox: x", b);
        EXPECT_STREQ("other", b);
        metrics_label_value("completed", b);
        EXPECT_STREQ("completed", b);
        metrics_label_value("\"}", b);
        EXPECT_STREQ("other", b);
}

static char *read_prom(const char *dir) {
        _cleanup_free_ char *path = NULL;
        char *text = NULL;

        if (asprintf(&path, "%s/%s", dir, METRICS_FILE) < 0 || read_full_file(path, 1 << 20, &text, NULL) < 0)
                return NULL;
        return text;
}

TEST(record) {
        char dir[] = "/tmp/pond-test-metrics.XXXXXX";
        _cleanup_free_ char *text = NULL;
        _cleanup_(metrics_done) Metrics m = {};
        _cleanup_close_ int dfd = -EBADF;
        bool reset = false;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        ASSERT_OK(metrics_record(dir, &(MetricsJob) { .status = "completed", .egress_denied = 2,
                                                      .net_bytes_up = 10, .cpu_usec = 5 }, &reset));
        ASSERT_OK(metrics_record(dir, &(MetricsJob) { .status = "refused", .refusal_reason = "job_id: exists" },
                                 &reset));
        EXPECT_FALSE(reset);
        text = read_prom(dir);
        ASSERT_TRUE(text != NULL);
        EXPECT_CONTAINS("pond_jobs_total{status=\"completed\"} 1\n", text);
        EXPECT_CONTAINS("pond_jobs_total{status=\"refused\"} 1\n", text);
        EXPECT_CONTAINS("pond_job_refusals_total{reason=\"job_id\"} 1\n", text);
        EXPECT_CONTAINS("pond_egress_denials_total 2\n", text);
        EXPECT_CONTAINS("pond_job_network_bytes_total{direction=\"up\"} 10\n", text);
        /* a file that is not pond's is started again, and says so */
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        ASSERT_OK(write_file_atomic_at(dfd, METRICS_FILE, "nonsense\n", 9, 0644));
        ASSERT_OK(metrics_record(dir, &(MetricsJob) { .status = "failed" }, &reset));
        EXPECT_TRUE(reset);
        free(text);
        text = read_prom(dir);
        ASSERT_OK(metrics_parse(text, &m));
        EXPECT_CONTAINS("pond_jobs_total{status=\"failed\"} 1\n", text);
        EXPECT_FALSE(strstr(text, "completed") != NULL);
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

/* 8 processes x 25 jobs each: all 200 counted (without the lock, read-add-rename loses counts). */
TEST(concurrent_writers) {
        char dir[] = "/tmp/pond-test-metrics.XXXXXX";
        _cleanup_free_ char *text = NULL;
        pid_t pids[8];

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                pids[i] = fork();
                ASSERT_TRUE(pids[i] >= 0);
                if (pids[i] == 0) {
                        bool reset = false;
                        for (int k = 0; k < 25; k++)
                                if (metrics_record(dir, &(MetricsJob) { .status = "completed", .egress_denied = 1 },
                                                   &reset) < 0 || reset)
                                        _exit(1);
                        _exit(0);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                int st;
                ASSERT_EQ(pids[i], waitpid(pids[i], &st, 0));
                EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        text = read_prom(dir);
        ASSERT_TRUE(text != NULL);
        EXPECT_CONTAINS("pond_jobs_total{status=\"completed\"} 200\n", text);
        EXPECT_CONTAINS("pond_egress_denials_total 200\n", text);
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

/* Under pond-run's umask (0077) the file and its directory are still readable by node_exporter's user. */
TEST(modes_under_a_strict_umask) {
        char dir[] = "/tmp/pond-test-metrics.XXXXXX";
        _cleanup_free_ char *sub = NULL, *file = NULL;
        mode_t old = umask(0077);
        struct stat st;
        bool reset = false;
        int r;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        ASSERT_TRUE(asprintf(&sub, "%s/metrics", dir) > 0);
        ASSERT_TRUE(asprintf(&file, "%s/%s", sub, METRICS_FILE) > 0);
        r = metrics_record(sub, &(MetricsJob) { .status = "completed" }, &reset);
        umask(old);
        ASSERT_OK(r);
        ASSERT_OK(stat(sub, &st) < 0 ? -errno : 0);
        EXPECT_EQ(0755U, st.st_mode & 07777);
        ASSERT_OK(stat(file, &st) < 0 ? -errno : 0);
        EXPECT_EQ(0644U, st.st_mode & 07777);
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}
