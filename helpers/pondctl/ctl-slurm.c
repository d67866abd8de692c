/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-slurm.c: the verbs that put pond under Slurm (docs/fleet.md): `pondctl slurm-node` prints the
 * worker as a Slurm node (slurm.conf's NodeName line, or what `scontrol update` takes), `pondctl
 * slurm-args SPEC` the sbatch options that route a job spec, or refuses it. */
#include <libgen.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/strv.h"
#include "ctl-escape.h"
#include "ctl-options.h"
#include "ctl-probe.h"
#include "ctl-slurm.h"
#include "ctl.h"
#include "dispatch.h"
#include "policy/tags.h"
#include "probe.h"
#include "slurm.h"

static int read_json_file(const char *path, json_object **ret, char **ret_error) {
        _cleanup_free_ char *buf = NULL, *err = NULL;
        size_t len;
        int r;

        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r < 0)
                return error_set(ret_error, r, "%s: %s", path, strerror(-r));
        r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, ret, &err);
        if (r < 0)
                return error_set(ret_error, r, "%s: %s", path, err ?: "invalid JSON");
        return 0;
}

/* This host's probe, as `pondctl probe --json` prints it. */
static int probe_here(json_object **ret) {
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        json_object *o;
        int r;

        r = host_probe(NULL, &p);
        if (r < 0)
                return r;
        r = host_probe_to_json(p, &o);
        if (r < 0)
                return r;
        json_object_object_add(o, "images", ctl_probe_images_json());
        json_object_object_add(o, "tags", ctl_probe_tags_json());
        *ret = o;
        return 0;
}

/* The short host name: what slurmd registers as unless told otherwise. */
static int node_name_here(char **ret) {
        char h[HOST_NAME_MAX + 1] = {};

        if (gethostname(h, sizeof h - 1) < 0)
                return -errno;
        h[strcspn(h, ".")] = 0;
        *ret = strdup(h);
        return *ret ? 0 : -ENOMEM;
}

static char *features_join(char *const *f) {
        char *s = NULL;
        size_t n = 0;
        FILE *m = open_memstream(&s, &n);

        if (!m)
                return NULL;
        for (size_t i = 0; f && f[i]; i++)
                fprintf(m, "%s%s", i ? "," : "", f[i]);
        return fclose(m) == 0 ? s : NULL;
}

typedef struct NodeArgs {
        const char *probe, *tags, *name, *policy_dir;
        bool update, json;
} NodeArgs;

static int node_print(const NodeArgs *a, const char *name, const SlurmNodeResources *res, char **features) {
        _cleanup_free_ char *joined = features_join(features);
        _cleanup_json_ json_object *o = NULL, *fa = NULL;

        if (!joined)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (a->update)
                printf("NodeName=%s AvailableFeatures=%s ActiveFeatures=%s\n", name, joined, joined);
        else if (!a->json)
                printf("NodeName=%s CPUs=%u RealMemory=%" PRIu64 " Features=%s\n", name, res->cpus,
                       res->memory_mib, joined);
        else {
                o = json_object_new_object();
                fa = json_object_new_array();
                if (!o || !fa)
                        return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
                for (size_t i = 0; features[i]; i++)
                        json_object_array_add(fa, json_object_new_string(features[i]));
                json_object_object_add(o, "node_name", json_object_new_string(name));
                json_object_object_add(o, "cpus", json_object_new_int64(res->cpus));
                json_object_object_add(o, "real_memory_mib", json_object_new_int64((int64_t) res->memory_mib));
                json_object_object_add(o, "features", TAKE_PTR(fa));
                ctl_json_print(o);
        }
        return CTL_EXIT_OK;
}

int ctl_verb_slurm_node(int argc, char *argv[]) {
        _cleanup_free_ char *name = NULL, *err = NULL;
        _cleanup_strv_free_ char **tags = NULL, **features = NULL;
        _cleanup_json_ json_object *probe = NULL;
        NodeArgs a = {};
        const CtlOption options[] = {
                { "probe", .value = &a.probe }, { "tags", .value = &a.tags }, { "name", .value = &a.name },
                { "policy", .value = &a.policy_dir }, { "update", .flag = &a.update }, CTL_OPTION_JSON(&a.json),
                {}
        };
        _cleanup_(admission_policy_done) AdmissionPolicy ceiling = {};
        SlurmNodeResources res;
        struct sysinfo si;
        int r;

        r = ctl_options_parse(argc, argv, options, NULL);
        if (r < 0)
                return CTL_EXIT_USAGE;
        if (r != argc)
                return ctl_fail(CTL_EXIT_USAGE, "slurm-node takes no arguments; see pondctl slurm-node --help.");
        if (a.tags && tags_split(a.tags, &tags) < 0)
                return ctl_fail_untrusted(CTL_EXIT_USAGE, "--tags '%s': a comma-separated list of tags KEY:VALUE",
                                          a.tags);
        r = admission_policy_load(a.policy_dir, &ceiling, &err);
        if (r < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Cannot read the worker's policy: %s", err ?: strerror(-r));
        r = a.probe ? read_json_file(a.probe, &probe, &err) : probe_here(&probe);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Cannot probe this worker: %s", err ?: strerror(-r));
        /* The worker's own tags, the ones its pond-run refuses by, unless told otherwise. */
        r = slurm_node_features(probe, tags ?: admission_policy_tags(&ceiling), &features, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "%s", err ?: strerror(-r));
        if (sysinfo(&si) < 0)
                r = -errno;
        if (r >= 0)
                r = -errno;
        if (r >= 0)
                r = slurm_node_resources(&ceiling, admission_cpus_allowed(), (uint64_t) si.totalram * si.mem_unit,
                                         &res, &err);
        if (r < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Cannot size this worker for Slurm: %s", err ?: strerror(-r));
        if (!a.name && node_name_here(&name) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Cannot read the host name; give --name.");
        return node_print(&a, a.name ?: name, &res, features);
}

typedef struct ArgsArgs {
        const char *spec, *tags, *partition, *margin, *policy_dir;
        bool json;
        char **workers;         /* --worker FILE, in order */
} ArgsArgs;

static int take_worker(const char *arg, void *userdata) {
        ArgsArgs *a = userdata;
        char *s = strdup(arg);

        return s ? strv_push(&a->workers, s) : log_oom();
}

static int args_print(const ArgsArgs *a, char **args) {
        _cleanup_json_ json_object *o = NULL;
        json_object *arr;

        if (!a->json) {
                for (size_t i = 0; args[i]; i++)
                        puts(args[i]);
                return CTL_EXIT_OK;
        }
        o = json_object_new_object();
        arr = json_object_new_array();
        if (!o || !arr) {
                json_object_put(arr);
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        }
        for (size_t i = 0; args[i]; i++)
                json_object_array_add(arr, json_object_new_string(args[i]));
        json_object_object_add(o, "sbatch", arr);
        ctl_json_print(o);
        return CTL_EXIT_OK;
}

/* The workers' probes and their names (a file's base name without .json) for reasons. */
static int load_workers(const ArgsArgs *a, SlurmRequestOptions *o, char **ret_error) {
        size_t n = strv_length(a->workers);

        o->workers = calloc(n + 1, sizeof *o->workers);
        o->worker_names = calloc(n + 1, sizeof *o->worker_names);
        if (!o->workers || !o->worker_names)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *copy = strdup(a->workers[i]);
                int r;

                if (!copy)
                        return -ENOMEM;
                r = read_json_file(a->workers[i], &o->workers[i], ret_error);
                if (r < 0)
                        return r;
                o->worker_names[i] = strdup(basename(copy));
                if (!o->worker_names[i])
                        return -ENOMEM;
                o->worker_names[i][strcspn(o->worker_names[i], ".")] = 0;
        }
        return 0;
}

static void request_options_done(SlurmRequestOptions *o) {
        for (size_t i = 0; o->workers && o->workers[i]; i++)
                json_object_put(o->workers[i]);
        free(o->workers);
        strv_freep(&o->worker_names);
        strv_freep(&o->worker_tags);
}

static int parse_args_args(int argc, char *argv[], ArgsArgs *a, SlurmRequestOptions *o) {
        const CtlOption options[] = {
                { "worker", .parse = take_worker }, { "worker-tags", .value = &a->tags },
                { "partition", .value = &a->partition }, { "margin", .value = &a->margin },
                { "policy", .value = &a->policy_dir }, CTL_OPTION_JSON(&a->json), {}
        };
        char *end = NULL;
        int r;

        r = ctl_options_parse(argc, argv, options, a);
        if (r < 0)
                return -EINVAL;
        if (argc - r != 1)
                return log_error_errno(EINVAL, "slurm-args takes one SPEC (or - for stdin); see pondctl --help.");
        a->spec = argv[r];
        o->partition = a->partition;
        o->margin_s = SLURM_MARGIN_S_DEFAULT;
        if (a->margin) {
                o->margin_s = strtoull(a->margin, &end, 10);
                if (!*a->margin || *end || o->margin_s > 86400)
                        return log_error_errno(EINVAL, "--margin: seconds, 0 to 86400.");
        }
        if (a->tags && tags_split(a->tags, &o->worker_tags) < 0)
                return log_error_errno(EINVAL, "--worker-tags: a comma-separated list of tags KEY:VALUE.");
        return 0;
}

int ctl_verb_slurm_args(int argc, char *argv[]) {
        _cleanup_(request_options_done) SlurmRequestOptions o = {};
        _cleanup_(slurm_request_freep) SlurmRequest *req = NULL;
        _cleanup_(policy_freep) Policy *policy = NULL;
        _cleanup_strv_free_ char **args = NULL, **workers = NULL;
        _cleanup_free_ char *spec = NULL, *err = NULL;
        ArgsArgs a = {};
        size_t len;
        int r;

        r = parse_args_args(argc, argv, &a, &o);
        workers = a.workers;
        if (r < 0)
                return CTL_EXIT_USAGE;
        r = load_workers(&a, &o, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Cannot read a worker's probe: %s", err ?: strerror(-r));
        r = policy_load(a.policy_dir, &policy, &err);
        if (r >= 0)
                r = ctl_spec_read(a.spec, &spec, &len, &err);
        if (r >= 0)
                r = slurm_request_for(policy, spec, len, &o, &req, &err);
        if (r == -ENOMEM)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (r < 0)
                return ctl_refusal(err ?: strerror(-r), a.json);
        if (slurm_request_to_args(req, &args) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        return args_print(&a, args);
}
