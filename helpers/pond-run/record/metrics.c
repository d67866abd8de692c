/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* metrics.c: the worker's Prometheus counters file: parsed, added to and written again in one rename under
 * a lock, so that concurrent jobs' ends are all counted. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "record/metrics.h"

#define METRICS_FILE_MAX (256 * 1024)

static const struct {
        const char *name, *help;
} metric_help[] = {
        { "pond_jobs_total", "Jobs whose result this worker signed, by status." },
        { "pond_job_refusals_total", "Refused jobs, by the spec or policy field the refusal names." },
        { "pond_egress_denials_total", "Connections the jobs' egress proxies denied." },
        { "pond_job_network_bytes_total", "Bytes the jobs moved through their egress proxy and broker." },
        { "pond_job_cpu_microseconds_total", "CPU time (user and system) of the jobs' scopes." },
        { "pond_job_oom_kills_total", "Jobs whose cgroup recorded an OOM kill." },
};

void metrics_done(Metrics *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->series[i].name);
                free(m->series[i].label);
                free(m->series[i].value);
        }
        free(m->series);
        *m = (Metrics) {};
}

static bool name_char(char c, bool first) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

static bool value_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static bool valid_name(const char *s, size_t len) {
        if (len == 0 || len > 64)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!name_char(s[i], i == 0))
                        return false;
        return true;
}

static bool valid_value(const char *s, size_t len) {
        if (len == 0 || len >= METRICS_LABEL_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!value_char(s[i]))
                        return false;
        return true;
}

static MetricsSeries *find(Metrics *m, const char *name, const char *label, const char *value) {
        for (size_t i = 0; i < m->n; i++) {
                MetricsSeries *s = &m->series[i];
                if (streq(s->name, name) && !s->label == !label && (!label || (streq(s->label, label) &&
                                                                             streq(s->value, value))))
                        return s;
        }
        return NULL;
}

static int add_checked(Metrics *m, const char *name, const char *label, const char *value, uint64_t delta) {
        MetricsSeries *s = find(m, name, label, value), *n;

        if (s)
                return __builtin_add_overflow(s->count, delta, &s->count) ? -EOVERFLOW : 0;
        if (m->n >= METRICS_MAX_SERIES)
                return -E2BIG;
        n = reallocarray(m->series, m->n + 1, sizeof(MetricsSeries));
        if (!n)
                return -ENOMEM;
        m->series = n;
        s = &m->series[m->n];
        *s = (MetricsSeries) { .name = strdup(name), .label = label ? strdup(label) : NULL,
                               .value = label ? strdup(value) : NULL, .count = delta };
        m->n++;
        if (!s->name || (label && (!s->label || !s->value)))
                return -ENOMEM;
        return 0;
}

int metrics_add(Metrics *m, const char *name, const char *label, const char *value, uint64_t delta) {
        if (!valid_name(name, strlen(name)) || (label && (!valid_name(label, strlen(label)) || !value ||
                                                          !valid_value(value, strlen(value)))))
                return -EINVAL;
        return add_checked(m, name, label, value, delta);
}

/* One line: name[{label="value"}] SP count. */
static int parse_line(Metrics *m, const char *line, size_t len) {
        char name[65], label[65], value[METRICS_LABEL_MAX], *end;
        const char *p = line, *e = line + len, *q;
        unsigned long long count;
        bool labelled = false;

        for (q = p; q < e && *q != '{' && *q != ' '; q++)
                ;
        if (!valid_name(p, (size_t) (q - p)))
                return -EINVAL;
        memcpy(name, p, (size_t) (q - p));
        name[q - p] = '\0';
        p = q;
        if (p < e && *p == '{') {
                for (q = ++p; q < e && *q != '='; q++)
                        ;
                if (q >= e || !valid_name(p, (size_t) (q - p)))
                        return -EINVAL;
                memcpy(label, p, (size_t) (q - p));
                label[q - p] = '\0';
                if (q + 1 >= e || q[1] != '"')
                        return -EINVAL;
                for (p = q + 2, q = p; q < e && *q != '"'; q++)
                        ;
                if (q + 1 >= e || q[1] != '}' || !valid_value(p, (size_t) (q - p)))
                        return -EINVAL;
                memcpy(value, p, (size_t) (q - p));
                value[q - p] = '\0';
                p = q + 2;
                labelled = true;
        }
        if (p >= e || *p != ' ' || p + 1 >= e || p[1] < '0' || p[1] > '9')
                return -EINVAL;
        errno = 0;
        count = strtoull(p + 1, &end, 10);
        if (errno != 0 || end != e)
                return -EINVAL;
        return add_checked(m, name, labelled ? label : NULL, labelled ? value : NULL, (uint64_t) count);
}

int metrics_parse(const char *text, Metrics *ret) {
        Metrics m = {};
        int r;

        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');
                if (eol != line && *line != '#') {
                        r = parse_line(&m, line, (size_t) (eol - line));
                        if (r < 0) {
                                metrics_done(&m);
                                return r;
                        }
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret = m;
        return 0;
}

static int series_cmp(const void *a, const void *b) {
        const MetricsSeries *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        if (c != 0)
                return c;
        if (!x->label || !y->label)
                return !!x->label - !!y->label;
        c = strcmp(x->label, y->label);
        return c != 0 ? c : strcmp(x->value, y->value);
}

static const char *help_of(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(metric_help); i++)
                if (streq(metric_help[i].name, name))
                        return metric_help[i].help;
        return "A pond counter.";
}

int metrics_format(const Metrics *m, char **ret) {
        _cleanup_free_ MetricsSeries *sorted = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (m->n > 0) {
                sorted = reallocarray(NULL, m->n, sizeof(MetricsSeries));
                if (!sorted)
                        return -ENOMEM;
                memcpy(sorted, m->series, m->n * sizeof(MetricsSeries));
                qsort(sorted, m->n, sizeof(MetricsSeries), series_cmp);
        }
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < m->n; i++) {
                const MetricsSeries *s = &sorted[i];
                if (i == 0 || !streq(sorted[i - 1].name, s->name))
                        fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", s->name, help_of(s->name), s->name);
                if (s->label)
                        fprintf(f, "%s{%s=\"%s\"} %" PRIu64 "\n", s->name, s->label, s->value, s->count);
                else
                        fprintf(f, "%s %" PRIu64 "\n", s->name, s->count);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

void metrics_label_value(const char *text, char buf[static METRICS_LABEL_MAX]) {
        size_t n = 0;

        for (const char *p = text ?: ""; *p && value_char(*p) && n < METRICS_LABEL_MAX - 1; p++)
                buf[n++] = *p;
        buf[n] = '\0';
        if (n == 0)
                snprintf(buf, METRICS_LABEL_MAX, "other");
}

void metrics_refusal_reason(const char *reason, char buf[static METRICS_LABEL_MAX]) {
        const char *colon = reason ? strchr(reason, ':') : NULL;
        size_t n = 0;

        /* "sandbox.overrides.memory: ...", "outputs[2].path: ...": the field path, its indices dropped. A
         * reason that does not start with one ("cannot read the job spec ...") is "other". */
        if (colon)
                for (const char *p = reason; p < colon && n < METRICS_LABEL_MAX - 1; p++) {
                        if (*p == '[') {
                                p = strchr(p, ']');
                                if (!p || p > colon)
                                        break;
                                continue;
                        }
                        if (!value_char(*p) || *p == '-') {
                                n = 0;
                                break;
                        }
                        buf[n++] = *p;
                }
        buf[n] = '\0';
        if (n == 0)
                snprintf(buf, METRICS_LABEL_MAX, "other");
}

static int add_job(Metrics *m, const MetricsJob *job) {
        char status[METRICS_LABEL_MAX], reason[METRICS_LABEL_MAX];
        int r;

        metrics_label_value(job->status, status);
        r = metrics_add(m, "pond_jobs_total", "status", status, 1);
        if (r >= 0 && streq(status, "refused")) {
                metrics_refusal_reason(job->refusal_reason, reason);
                r = metrics_add(m, "pond_job_refusals_total", "reason", reason, 1);
        }
        if (r >= 0)
                r = metrics_add(m, "pond_egress_denials_total", NULL, NULL, job->egress_denied);
        if (r >= 0)
                r = metrics_add(m, "pond_job_network_bytes_total", "direction", "up", job->net_bytes_up);
        if (r >= 0)
                r = metrics_add(m, "pond_job_network_bytes_total", "direction", "down", job->net_bytes_down);
        if (r >= 0)
                r = metrics_add(m, "pond_job_cpu_microseconds_total", NULL, NULL, job->cpu_usec);
        if (r >= 0)
                r = metrics_add(m, "pond_job_oom_kills_total", NULL, NULL, job->oom_killed ? 1 : 0);
        return r;
}

/* The new file, 0644 whatever the umask (pond-run's is 0077): node_exporter runs as a user of its own. It
 * is complete before its rename, and named .pond.prom.tmp meanwhile, which the collector skips (*.prom). */
static int write_prom(int dfd, const char *text) {
        static const char tmp[] = "." METRICS_FILE ".tmp";
        _cleanup_close_ int fd = -EBADF;
        int r;

        (void) unlinkat(dfd, tmp, 0);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        r = fchmod(fd, 0644) < 0 ? -errno : write_all(fd, text, strlen(text));
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(dfd, tmp, dfd, METRICS_FILE) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dfd, tmp, 0);
        else
                (void) fsync(dfd); /* the rename itself survives a power cut */
        return r;
}

int metrics_record(const char *dir, const MetricsJob *job, bool *ret_reset) {
        _cleanup_free_ char *text = NULL, *out = NULL;
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_(metrics_done) Metrics m = {};
        int r;

        r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        r = dir_open_locked(dir, &dfd);
        if (r < 0)
                return r;
        if (fchmod(dfd, 0755) < 0) /* made under pond-run's umask: the collector must reach the file */
                return -errno;
        r = read_full_file_at(dfd, METRICS_FILE, METRICS_FILE_MAX, &text, NULL);
        if (r >= 0) {
                r = metrics_parse(text, &m);
                if (r < 0) {
                        log_debug_errno(r, "%s/%s does not parse: starting it again from zero.", dir, METRICS_FILE);
                        *ret_reset = true;
                }
        } else if (r != -ENOENT) {
                log_debug_errno(r, "Cannot read %s/%s: starting it again from zero: %m", dir, METRICS_FILE);
                *ret_reset = true;
        }
        r = add_job(&m, job);
        if (r < 0)
                return r;
        r = metrics_format(&m, &out);
        if (r < 0)
                return r;
        return write_prom(dfd, out);
}
