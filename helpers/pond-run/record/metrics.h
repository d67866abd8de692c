/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* metrics.h: the worker's counters as a Prometheus text-format file for node_exporter's textfile collector
 * (STATEDIR/metrics/pond.prom). The file is its own state: each job's end reads it, adds to it and replaces
 * it in one rename, under an flock of its directory, so concurrent pond-runs never lose a count and the
 * collector never reads half a file (docs/operations.md, "Metrics"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_DIR_NAME "metrics"
#define METRICS_FILE "pond.prom"
#define METRICS_MAX_SERIES 512
#define METRICS_LABEL_MAX 48

typedef struct MetricsSeries {
        char *name;             /* pond_jobs_total */
        char *label;            /* the label's name ("status"), or NULL for a series without one */
        char *value;            /* the label's value */
        uint64_t count;
} MetricsSeries;

typedef struct Metrics {
        MetricsSeries *series;
        size_t n;
} Metrics;

void metrics_done(Metrics *m);

/* Reads the text this module wrote: `name count` and `name{label="value"} count` lines, comments skipped.
 * -EINVAL for anything else (the file is then started again from zero by metrics_record()). */
int metrics_parse(const char *text, Metrics *ret);
/* Adds delta to a series, creating it; label NULL for none. Values are sanitized by metrics_label_value(). */
int metrics_add(Metrics *m, const char *name, const char *label, const char *value, uint64_t delta);
/* The text: series grouped by name, in name then value order, each name with its HELP and TYPE. */
int metrics_format(const Metrics *m, char **ret);

/* A label value from free text: [a-z0-9_.-] kept, anything else ends it; "other" when nothing is left. For
 * a refusal's reason, the field path it starts with ("sandbox.backend: ...") up to its first index. */
void metrics_label_value(const char *text, char buf[static METRICS_LABEL_MAX]);
void metrics_refusal_reason(const char *reason, char buf[static METRICS_LABEL_MAX]);

/* One job's end, as the worker's counters see it. */
typedef struct MetricsJob {
        const char *status;             /* completed, failed, cancelled, refused */
        const char *refusal_reason;     /* the result's reason, for a refusal */
        uint64_t egress_denied;         /* connections the job's proxy denied */
        uint64_t net_bytes_up, net_bytes_down; /* through the proxy and the broker */
        uint64_t cpu_usec;              /* user + system */
        bool oom_killed;
} MetricsJob;

/* Adds one job to DIR/pond.prom (DIR created 0755), under the directory's flock. *ret_reset is set when
 * the file was there but not readable as pond's: it is then started again from zero (a counter reset, as
 * Prometheus knows them). */
int metrics_record(const char *dir, const MetricsJob *job, bool *ret_reset);
