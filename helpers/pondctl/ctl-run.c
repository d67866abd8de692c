/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-run.c: `pondctl run [options] -- CMD...`: build a spec from options (over --spec FILE if given), check
 * it with the worker's own parser, submit it, stream the job's output while it runs, and exit with what the
 * verified result says. */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <string.h>

#include "basic/json-strict.h"
#include "basic/log.h"
#include "ctl.h"
#include "policy/policy.h"

enum {
        ARG_PROFILE = 0x100, ARG_BACKEND, ARG_TIER, ARG_IMAGE, ARG_CHECKOUT, ARG_ALLOW_HOST, ARG_MEMORY,
        ARG_CPUS, ARG_PIDS, ARG_TMPFS_SIZE, ARG_TIMEOUT, ARG_OUTPUT, ARG_ENV, ARG_TENANT, ARG_JOB_ID,
        ARG_SPEC, ARG_PUBKEY, ARG_KILL_ON_HANGUP, ARG_INTO,
};

static const struct option run_options[] = {
        { "profile", required_argument, NULL, ARG_PROFILE },
        { "backend", required_argument, NULL, ARG_BACKEND },
        { "tier", required_argument, NULL, ARG_TIER },
        { "image", required_argument, NULL, ARG_IMAGE },
        { "checkout", required_argument, NULL, ARG_CHECKOUT },
        { "allow-host", required_argument, NULL, ARG_ALLOW_HOST },
        { "memory", required_argument, NULL, ARG_MEMORY },
        { "cpus", required_argument, NULL, ARG_CPUS },
        { "pids", required_argument, NULL, ARG_PIDS },
        { "tmpfs-size", required_argument, NULL, ARG_TMPFS_SIZE },
        { "timeout", required_argument, NULL, ARG_TIMEOUT },
        { "output", required_argument, NULL, ARG_OUTPUT },
        { "env", required_argument, NULL, ARG_ENV },
        { "tenant", required_argument, NULL, ARG_TENANT },
        { "job-id", required_argument, NULL, ARG_JOB_ID },
        { "spec", required_argument, NULL, ARG_SPEC },
        { "pubkey", required_argument, NULL, ARG_PUBKEY },
        { "into", required_argument, NULL, ARG_INTO },
        { "quiet", no_argument, NULL, 'q' },
        { "tty", no_argument, NULL, 't' },
        { "interactive", no_argument, NULL, 'i' },
        { "kill-on-hangup", no_argument, NULL, ARG_KILL_ON_HANGUP },
        {}
};

/* Appends s (not copied: it lives in argv) to a NULL-terminated list. */
static int list_add(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **nl = realloc(*l, (n + 2) * sizeof(char *));

        if (!nl)
                return -ENOMEM;
        nl[n] = s;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

static int parse_count(const char *opt, const char *s, uint64_t *ret) {
        uint64_t v;

        /* parse_size() takes digits only, with no sign or space; without a suffix it is a plain count. */
        if (strspn(s, "0123456789") != strlen(s) || parse_size(s, &v) < 0 || v == 0)
                return log_error_errno(EINVAL, "--%s: '%s' is not a positive integer.", opt, s);
        *ret = v;
        return 0;
}

static int parse_size_arg(const char *opt, const char *s) {
        uint64_t v;

        if (parse_size(s, &v) < 0 || v == 0)
                return log_error_errno(EINVAL, "--%s: '%s' is not a size like 512M, 2G or a number of "
                                       "bytes.", opt, s);
        return 0;
}

static int parse_cpus(const char *s, double *ret) {
        char *end = NULL;
        double d;

        errno = 0;
        d = strtod(s, &end);
        if (errno != 0 || end == s || *end || !isfinite(d) || d <= 0)
                return log_error_errno(EINVAL, "--cpus: '%s' is not a positive number of CPUs like 1.5.", s);
        *ret = d;
        return 0;
}

static int parse_one(CtlRunArgs *a, int c, char *arg) {
        CtlSpecOptions *o = &a->spec;

        switch (c) {
        case ARG_PROFILE:    o->profile = arg; return 0;
        case ARG_BACKEND:    o->backend = arg; return 0;
        case ARG_TIER:       o->tier = arg; return 0;
        case ARG_IMAGE:      o->image = arg; return 0;
        case ARG_TENANT:     o->tenant = arg; return 0;
        case ARG_JOB_ID:     o->job_id = arg; return 0;
        case ARG_SPEC:       a->spec_file = arg; return 0;
        case ARG_PUBKEY:     a->pubkey = arg; return 0;
        case ARG_INTO:
                if (!ctl_host())
                        return log_error_errno(CTL_EUSAGE, "--into is for -H: a result fetched from a worker.");
                a->into = arg;
                return 0;
        case 'q':            a->quiet = true; return 0;
        case 't':            o->tty = true; return 0;
        case 'i':            o->stdin_open = true; return 0;
        case ARG_KILL_ON_HANGUP: o->kill_on_hangup = true; return 0;
        case ARG_ALLOW_HOST: return list_add(&o->allow_hosts, arg);
        case ARG_OUTPUT:     return list_add(&o->outputs, arg);
        case ARG_ENV:        return list_add(&o->env, arg);
        case ARG_CPUS:       return parse_cpus(arg, &o->cpus);
        case ARG_PIDS:       return parse_count("pids", arg, &o->pids);
        case ARG_TIMEOUT:    return parse_count("timeout", arg, &o->timeout_s);
        case ARG_MEMORY:     o->memory = arg; return parse_size_arg("memory", arg);
        case ARG_TMPFS_SIZE: o->tmpfs_size = arg; return parse_size_arg("tmpfs-size", arg);
        case ARG_CHECKOUT: {
                int r;

                if (ctl_host()) { /* a path on the worker, which checks it */
                        if (arg[0] != '/')
                                return log_error_errno(EINVAL, "--checkout: with -H, an absolute path on the "
                                                       "worker.");
                        o->checkout = arg;
                        return 0;
                }
                r = ctl_checkout_resolve(arg, &a->checkout_abs);
                if (r < 0)
                        return log_error_errno(r, "--checkout: cannot use '%s': %m", arg);
                o->checkout = a->checkout_abs;
                return 0;
        }
        default:
                return -CTL_EUSAGE;
        }
}

int ctl_run_parse_argv(int argc, char *argv[], CtlRunArgs *ret) {
        _cleanup_(ctl_run_args_done) CtlRunArgs a = {};
        int c, r;

        optind = 0; /* full re-initialization: verbs parse their own options */
        while ((c = getopt_long(argc, argv, "+qti", run_options, NULL)) >= 0) {
                r = parse_one(&a, c, optarg);
                if (r < 0)
                        return r;
        }
        for (int i = optind; i < argc; i++) {
                r = list_add(&a.spec.command, argv[i]);
                if (r < 0)
                        return r;
        }
        if (!a.spec.command && !a.spec_file)
                return log_error_errno(CTL_EUSAGE, "Usage: pondctl run [OPTIONS] -- COMMAND [ARGS...]");
        *ret = a;
        a = (CtlRunArgs) {};
        return 0;
}

void ctl_run_args_done(CtlRunArgs *a) {
        /* The lists hold pointers into argv: only the arrays are ours. */
        free(a->spec.allow_hosts);
        free(a->spec.outputs);
        free(a->spec.env);
        free(a->spec.command);
        free(a->checkout_abs);
        *a = (CtlRunArgs) {};
}

/* The spec bytes to submit and their parsed job id, or the exit status to fail with (having said why). */
static int make_spec(const CtlRunArgs *a, char **ret_buf, size_t *ret_len, char **ret_id) {
        _cleanup_json_ json_object *base = NULL, *spec = NULL;
        _cleanup_(job_spec_freep) JobSpec *parsed = NULL;
        _cleanup_free_ char *file = NULL, *err = NULL, *buf = NULL;
        size_t file_len, len;
        int r;

        if (a->spec_file) {
                r = ctl_spec_read(a->spec_file, &file, &file_len, &err);
                if (r >= 0)
                        r = json_parse_strict(file, file_len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH,
                                              &base, &err);
                if (r < 0) {
                        ctl_log_error_errno_untrusted(r, "Cannot use the spec %s: %s", a->spec_file,
                                                      err ?: strerror(-r));
                        return CTL_EXIT_REFUSED;
                }
        }
        r = ctl_spec_build(base, &a->spec, &spec, &err);
        if (r >= 0)
                r = ctl_spec_serialize(spec, &buf, &len);
        if (r < 0) {
                ctl_log_error_errno_untrusted(r, "Cannot build the job spec: %s", err ?: strerror(-r));
                return CTL_EXIT_REFUSED;
        }
        r = ctl_spec_validate(buf, len, &parsed, &err);
        if (r < 0) {
                ctl_log_error_errno_untrusted(r, "Refused: %s", err ?: strerror(-r)); /* quotes the spec */
                return CTL_EXIT_REFUSED;
        }
        *ret_id = strdup(parsed->job_id);
        if (!*ret_id)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        *ret_buf = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int ctl_verb_run(int argc, char *argv[]) {
        _cleanup_(ctl_run_args_done) CtlRunArgs a = {};
        _cleanup_(job_paths_done) JobPaths paths = {};
        _cleanup_(ctl_log_follower_done) CtlLogFollower log = CTL_LOG_FOLLOWER_NULL;
        _cleanup_(ctl_console_done) CtlConsole console = { .pump = PIDREF_NULL };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *spec = NULL, *id = NULL, *log_dir = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        size_t len;
        int r;

        r = ctl_run_parse_argv(argc, argv, &a);
        if (r < 0) /* a bad option value is a refused spec; no command or an unknown option is misuse */
                return r == -CTL_EUSAGE ? CTL_EXIT_USAGE : CTL_EXIT_REFUSED;
        /* Without the pinned key no result could be trusted: do not start a job we cannot check. With -H it
         * must be given: this machine's KEYDIR holds its own key, not the worker's. */
        /* the console socket is the worker's, reached over ssh as a whole: `ssh -t HOST pondctl run -t ...` */
        if (ctl_host() && (a.spec.tty || a.spec.stdin_open))
                return ctl_fail(CTL_EXIT_USAGE, "-t and -i are not available with -H: the job's console is on the "
                                "worker (ssh -t HOST pondctl run -t ...).");
        if (ctl_host() && !a.pubkey)
                return ctl_fail(CTL_EXIT_USAGE, "With -H, --pubkey FILE is required: the worker's public key "
                                "as pinned on this machine.");
        if (ctl_load_public_key(a.pubkey, pk) < 0)
                return CTL_EXIT_UNVERIFIED;
        r = make_spec(&a, &spec, &len, &id);
        if (r != 0)
                return r;
        if (ctl_host())
                return ctl_host_run(id, spec, len, pk, a.quiet, a.into);
        if (job_paths_init(&paths, id) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        r = ctl_submit(&bus, &paths, id, spec, len);
        if (r != 0)
                return r;
        if (!a.quiet)
                log_info("Started job %s (pond-job@%s.service).", id, id);
        /* A reader that goes away must not kill us mid-wait: the job would run on unattended. */
        (void) signal(SIGPIPE, SIG_IGN);
        if (a.spec.tty || a.spec.stdin_open) {
                /* the console appears once the payload runs; a job that never gets there has a result. A
                 * session lasts as long as the job: no connection of root's is held through it (ctl_wait()). */
                bus = sd_bus_flush_close_unref(bus);
                console = (CtlConsole) { .paths = &paths, .job_id = id, .wait = true, .pump = PIDREF_NULL };
                r = ctl_console_session(&console);
                if (r >= 0 && console.detached) {
                        log_info("%s job %s; it runs on%s (pondctl attach %s).",
                                 console.hung_up ? "Hung up on" : "Detached from", id,
                                 console.hung_up ? " unless it asked for kill_on_hangup" : "", id);
                        return CTL_EXIT_OK;
                }
                if (r >= 0 && console.tty) /* its output came through the terminal, and is in the result */
                        return ctl_wait(&(CtlWait) { .job_id = id, .paths = &paths, .pk = pk,
                                                     .quiet = a.quiet });
        }
        if (asprintf(&log_dir, "%s/log", paths.spool) < 0 ||
            ctl_log_follower_init(&log, log_dir, STDOUT_FILENO, STDERR_FILENO) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        return ctl_wait(&(CtlWait) { .bus = bus, .job_id = id, .paths = &paths, .log = &log, .pk = pk,
                                     .quiet = a.quiet });
}
