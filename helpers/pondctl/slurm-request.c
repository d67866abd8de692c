/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* slurm-request.c: a job spec as an sbatch request: dispatch-check's decision (dispatch.c) in Slurm's
 * terms. Fail-closed: what dispatch-check refuses is refused here with its reason, before Slurm sees it,
 * and so is what cannot go through Slurm at all (the byo tier, a tenant that is no account name) and,
 * when the workers' probes are given, what none of them may take. */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/json-strict.h"
#include "basic/jobid.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "dispatch.h"
#include "image/image-name.h"
#include "policy/spec.h"
#include "policy/tags.h"
#include "slurm.h"

SlurmRequest *slurm_request_free(SlurmRequest *r) {
        if (!r)
                return NULL;
        free(r->job_name);
        free(r->partition);
        free(r->account);
        free(r->constraint);
        free(r);
        return NULL;
}

/* The spec's sandbox block as JSON (an empty one if it has none: dispatch_check() refuses it, saying why). */
static int sandbox_of(const char *spec, size_t len, json_object **ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        json_object *b;
        int r;

        r = json_parse_strict(spec, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, ret_error);
        if (r < 0)
                return r;
        b = json_get(o, "sandbox");
        *ret = b ? json_object_get(b) : json_object_new_object();
        return *ret ? 0 : -ENOMEM;
}

/* A Slurm account is a tenant as pond names it in tags, in lower case (Slurm folds account names: two
 * tenants that differ in case only would share one account). */
static int check_tenant(const char *tenant, char **ret_error) {
        if (!tag_tenant_is_valid(tenant))
                return error_set(ret_error, -EINVAL, "tenant: not usable as a Slurm account (it must match "
                                 "[A-Za-z0-9][A-Za-z0-9_.-]{0,127})");
        for (const char *c = tenant; *c; c++)
                if (isupper((unsigned char) *c))
                        return error_set(ret_error, -EINVAL, "tenant: not usable as a Slurm account (Slurm "
                                         "folds account names to lower case; name the tenant in lower case)");
        return 0;
}

/* The first worker that may take the job (*ret_probe), or every worker's reason not to; no workers given:
 * *ret_probe NULL. */
static int check_workers(const DispatchDecision *d, const SlurmRequestOptions *o, json_object **ret_probe,
                         char **ret_error) {
        _cleanup_free_ char *reasons = NULL;
        size_t n = 0;
        FILE *f;

        *ret_probe = NULL;
        if (!o->workers || !o->workers[0])
                return 0;
        f = open_memstream(&reasons, &n);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; o->workers[i]; i++) {
                _cleanup_free_ char *why = NULL;
                int r = dispatch_worker_eligible(d, o->workers[i], o->worker_tags, &why);

                if (r > 0) {
                        fclose(f);
                        *ret_probe = o->workers[i];
                        return 0;
                }
                fprintf(f, "%s%s: %s", i ? "; " : "", o->worker_names[i], why ?: strerror(-r));
                if (r < 0) {
                        fclose(f);
                        return error_set(ret_error, r, "%s", reasons ?: "?");
                }
        }
        fclose(f);
        return error_set(ret_error, -EINVAL, "no worker can take it: %s", reasons ?: "?");
}

/* The feature of the imported image the block pins (NULL: none pinned, or one the probe cannot see). */
static int image_feature(const char *image, json_object *probe, char **ret, char **ret_error) {
        json_object *images = json_get(probe, "images");

        *ret = NULL;
        if (!image || streq(image, "host") || (!digest_is_valid(image) && !strchr(image, ':')))
                return 0;
        if (digest_is_valid(image))
                return slurm_image_feature(image, ret) == -ENOMEM ? -ENOMEM : 0;
        for (size_t i = 0; json_object_is_type(images, json_type_array) && i < json_object_array_length(images);
             i++) {
                json_object *e = json_object_array_get_idx(images, i), *names = json_get(e, "names");

                for (size_t k = 0; json_object_is_type(names, json_type_array) &&
                                   k < json_object_array_length(names); k++)
                        if (streq(json_object_get_string(json_object_array_get_idx(names, k)) ?: "", image))
                                return slurm_image_feature(json_get_str(e, "digest"), ret) == -ENOMEM ? -ENOMEM : 0;
        }
        return error_set(ret_error, -EINVAL, "sandbox.overrides.image '%s': Slurm routes imported images by "
                         "digest: pin it by digest (sha256:...), or give the workers' probes (--worker) to find "
                         "it", image);
}

static int add_feature(FILE *f, const char *name) {
        _cleanup_free_ char *feature = NULL;
        int r = slurm_feature_for(name, &feature);

        if (r >= 0)
                fprintf(f, "%s%s", ftell(f) > 0 ? "&" : "", feature);
        return r;
}

static int constraint_for(const DispatchDecision *d, const char *image, char **ret) {
        _cleanup_free_ char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);
        int r = 0;

        if (!f)
                return -ENOMEM;
        for (char **c = d->required_capabilities; r >= 0 && c && *c; c++)
                r = add_feature(f, *c);
        for (char **t = d->required_tags; r >= 0 && t && *t; t++)
                r = add_feature(f, *t);
        if (r >= 0 && image)
                fprintf(f, "&%s", image);
        if (fclose(f) != 0 || r < 0 || !s)
                return r < 0 ? r : -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The request's sizes from the normalized block: whole CPUs and MiB rounded up, so that Slurm allocates
 * at least what pond-run's admission will count. */
static void sizes_for(const DispatchDecision *d, const JobSpec *js, uint64_t margin_s, SlurmRequest *req) {
        json_object *knobs = json_get(d->sandbox_block, "overrides");
        double cpus = json_object_get_double(json_get(knobs, "cpus"));
        uint64_t memory = (uint64_t) json_object_get_int64(json_get(knobs, "memory"));

        req->cpus_per_task = (unsigned) MAX(ceil(cpus), 1.0);
        req->memory_mib = MAX((memory + (1ULL << 20) - 1) >> 20, 1);
        req->time_min = (js->limits.wall_clock_s + margin_s + 59) / 60;
}

static int request_new(const JobSpec *js, const DispatchDecision *d, const SlurmRequestOptions *o,
                       const char *image, SlurmRequest **ret) {
        _cleanup_(slurm_request_freep) SlurmRequest *req = calloc(1, sizeof *req);
        const char *tier = json_get_str(d->sandbox_block, "tier");
        int r;

        if (!req)
                return -ENOMEM;
        req->job_name = strdup(js->job_id);
        req->account = strdup(js->tenant);
        req->partition = strdup(o->partition ?: tier);
        if (!req->job_name || !req->account || !req->partition)
                return -ENOMEM;
        r = constraint_for(d, image, &req->constraint);
        if (r < 0)
                return r;
        sizes_for(d, js, o->margin_s, req);
        *ret = TAKE_PTR(req);
        return 0;
}

int slurm_request_for(const Policy *p, const char *spec, size_t len, const SlurmRequestOptions *o,
                      SlurmRequest **ret, char **ret_error) {
        _cleanup_(dispatch_decision_freep) DispatchDecision *d = NULL;
        _cleanup_(job_spec_freep) JobSpec *js = NULL;
        _cleanup_json_ json_object *block = NULL;
        _cleanup_free_ char *image = NULL;
        json_object *probe;
        int r;

        r = job_spec_parse(spec, len, &js, ret_error);
        if (r < 0)
                return r;
        if (strlen(js->job_id) > JOB_ID_MAX - SLURM_ATTEMPT_SUFFIX_MAX)
                return error_set(ret_error, -EINVAL, "job_id: at most %d characters to go through Slurm (each "
                                 "attempt runs as <job_id>-a<N>)", JOB_ID_MAX - SLURM_ATTEMPT_SUFFIX_MAX);
        r = check_tenant(js->tenant, ret_error);
        if (r < 0)
                return r;
        r = sandbox_of(spec, len, &block, ret_error);
        if (r < 0)
                return r;
        r = dispatch_check(p, block, js->tenant, &d, ret_error);
        if (r < 0)
                return r;
        if (streq(json_get_str(d->sandbox_block, "tier") ?: "", "byo"))
                return error_set(ret_error, -EINVAL, "sandbox.tier: byo jobs do not go through Slurm: "
                                 "bring-your-own workers stay outside its munge domain (docs/fleet.md)");
        r = check_workers(d, o, &probe, ret_error);
        if (r < 0)
                return r;
        r = image_feature(json_get_str(json_get(d->sandbox_block, "overrides"), "image"), probe, &image, ret_error);
        if (r < 0)
                return r;
        return request_new(js, d, o, image, ret);
}

static int push_fmt(char ***l, const char *fmt, ...) _printf_(2, 3);
static int push_fmt(char ***l, const char *fmt, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : strv_push(l, s);
}

int slurm_request_to_args(const SlurmRequest *r, char ***ret) {
        _cleanup_strv_free_ char **args = NULL;

        if (push_fmt(&args, "--job-name=%s", r->job_name) < 0 ||
            push_fmt(&args, "--partition=%s", r->partition) < 0 ||
            push_fmt(&args, "--account=%s", r->account) < 0 ||
            push_fmt(&args, "--constraint=%s", r->constraint) < 0 ||
            push_fmt(&args, "--nodes=1") < 0 ||
            push_fmt(&args, "--cpus-per-task=%u", r->cpus_per_task) < 0 ||
            push_fmt(&args, "--mem=%" PRIu64 "M", r->memory_mib) < 0 ||
            push_fmt(&args, "--time=%" PRIu64, r->time_min) < 0 ||
            push_fmt(&args, "--requeue") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(args);
        return 0;
}
