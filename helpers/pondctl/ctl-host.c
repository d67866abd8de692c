/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-host.c: the verbs of `pondctl -H [USER@]HOST`. Units go over the worker's system bus through ssh
 * (cancel's StopUnit; wait and run watch the unit's PropertiesChanged signals until it stops); the worker's
 * files through its own pondctl over ssh (submit writes the spool and starts the unit in one step there, so
 * a failed start still leaves nothing behind; status, list and logs read the spool and the live log there);
 * results are fetched as a tar stream (`pondctl export`), bounded, into a hidden directory next to where
 * they go, and verified there with the worker's key pinned on this machine (--pubkey), never one that came
 * over the connection: only a result that verified is renamed into place (--into DIR: DIR/ID), anything
 * else is removed whole. Job ids are checked here before they go anywhere; every argument reaches the
 * remote shell single-quoted, and what the worker's pondctl says comes back escaped (ctl-remote.c). */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "ctl-options.h"
#include "ctl.h"
#include "result/result.h"
#include "result/transcript.h"

#define _cleanup_bus_ _cleanup_(sd_bus_flush_close_unrefp)

/* Where a fetched result goes: into/ID, or ID in a temporary directory removed at the end; and what it
 * must verify with. */
typedef struct HostFetch {
        const char *into;
        const uint8_t *pk;
        bool want_json; /* keep the verified bytes of result.json (result --json) */
        char *tmp;
        char *dir;
        PidRef logs; /* run: the worker's `logs -f`, waited for before the summary */
        /* what the verification in place said */
        const char *job_id;
        json_object *result;
        char *json;
        size_t json_len;
} HostFetch;

#define HOST_FETCH_NULL { .logs = PIDREF_NULL }

/* Removes the tree at path (its parent must exist). */
static void rm_path(const char *path) {
        _cleanup_free_ char *parent = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *slash = strrchr(path, '/');
        int r;

        parent = slash && slash != path ? strndup(path, (size_t) (slash - path)) : strdup(slash ? "/" : ".");
        if (!parent)
                return;
        fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = fd < 0 ? -errno : rm_rf_at(fd, slash ? slash + 1 : path);
        if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Cannot remove %s: %m", path);
}

static void host_fetch_done(HostFetch *f) {
        sigkill_wait(&f->logs);
        if (f->tmp)
                rm_path(f->tmp);
        free(f->tmp);
        free(f->dir);
        json_object_put(f->result);
        free(f->json);
        *f = (HostFetch) HOST_FETCH_NULL;
}

/* What a result directory holds at its top (result.c): result_verify() covers artifacts/, log/ and execs/
 * whole, but does not look at anything else beside them, which is then not covered by the signature. */
static int top_level_check(const char *dir, char **ret_error) {
        static const char *const names[] = { RESULT_JSON_FILE, RESULT_SIG_FILE, RESULT_ARTIFACTS_DIR, RESULT_LOG_DIR,
                                             TRANSCRIPT_DIR };
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return error_set(ret_error, -errno, "cannot open %s: %s", dir, strerror(errno));
        while ((errno = 0, de = readdir(d))) {
                bool known = streq(de->d_name, ".") || streq(de->d_name, "..");

                for (size_t i = 0; i < ELEMENTSOF(names) && !known; i++)
                        known = streq(de->d_name, names[i]);
                if (!known)
                        return error_set(ret_error, -EBADMSG, "'%s' is beside result.json, where a result holds "
                                         "nothing the signature does not cover", de->d_name);
        }
        return errno > 0 ? error_set(ret_error, -errno, "cannot list %s: %s", dir, strerror(errno)) : 0;
}

/* The fetched tree, before it is put in place: verified with the pinned key (and, for result --json, the
 * bytes of result.json that the signature covers kept), with nothing beside what the signature covers. Any
 * failure is -EBADMSG with *ret_error. */
static int verify_fetched(const char *dir, void *userdata, char **ret_error) {
        HostFetch *f = userdata;
        int r;

        r = top_level_check(dir, ret_error);
        if (r >= 0)
                r = ctl_result_verify(dir, f->pk, f->job_id, NULL, &f->result, f->want_json ? &f->json : NULL,
                              &f->json_len, ret_error);
        if (r < 0 && !*ret_error)
                *ret_error = strdup(strerror(-r));
        return r < 0 ? -EBADMSG : 0;
}

/* Fetches the result of job_id and verifies it before it is put at f->dir (into/ID or in f->tmp): 0, with
 * f->result (and f->json); -ENOENT: the worker has none; -EBADMSG: it did not verify, *ret_error says why,
 * and nothing of it is kept; another error, having said why. */
static int host_fetch(HostFetch *f, const char *job_id, char **ret_error) {
        const char *tmpdir = getenv("TMPDIR");
        int r;

        if (!f->into && !f->tmp) {
                if (asprintf(&f->tmp, "%s/pondctl-XXXXXX", tmpdir && *tmpdir == '/' ? tmpdir : "/tmp") < 0)
                        return log_oom();
                if (!mkdtemp(f->tmp)) {
                        r = log_error_errno(errno, "Cannot create a directory for the result: %m");
                        free(f->tmp);
                        f->tmp = NULL;
                        return r;
                }
        }
        free(f->dir);
        free(f->json);
        json_object_put(f->result);
        f->dir = f->json = NULL;
        f->result = NULL;
        f->job_id = job_id;
        r = ctl_remote_fetch_result(job_id, f->into ?: f->tmp, verify_fetched, f, &f->dir, ret_error);
        return r == -EBADMSG || r == -ENOENT || r >= 0 ? r : -EIO;
}

/* ctl_wait()'s fetch: the output of `logs -f` first (it ends by itself once the unit has stopped), then the
 * result. */
static int wait_fetch(CtlWait *w, char **ret_dir, json_object **ret_result, char **ret_error) {
        HostFetch *f = w->userdata;
        siginfo_t si;
        int r;

        if (f->logs.pid > 0 && pidref_wait(&f->logs, USEC_INFINITY, &si) >= 0 && !siginfo_exited_ok(&si))
                log_warning("The worker's log of %s was not shown to its end.", w->job_id);
        r = host_fetch(f, w->job_id, ret_error);
        if (r < 0)
                return r;
        if (!(*ret_dir = strdup(f->dir)))
                return log_oom();
        *ret_result = json_object_get(f->result);
        return 0;
}

static int need_pubkey(const char *pubkey, uint8_t pk[KEY_SIGN_PUBLIC_SIZE]) {
        if (!pubkey) {
                log_error("With -H, --pubkey FILE is required: the worker's public key as pinned on this machine "
                          "(a key fetched from the worker would prove nothing).");
                return -EINVAL;
        }
        return ctl_load_public_key(pubkey, pk);
}

/* Before anything runs or is fetched: the result is to go to into/id, and nothing there is ever replaced. */
static int into_check(const char *into, const char *id) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (!into)
                return 0;
        if (stat(into, &st) < 0 || !S_ISDIR(st.st_mode))
                return log_error_errno(ENOTDIR, "--into: %s is not a directory.", into);
        if (asprintf(&path, "%s/%s", into, id) < 0)
                return log_oom();
        if (lstat(path, &st) >= 0)
                return log_error_errno(EEXIST, "--into: %s exists already.", path);
        return 0;
}

static int host_submit(int argc, char *argv[]) {
        _cleanup_(job_spec_freep) JobSpec *parsed = NULL;
        _cleanup_free_ char *spec = NULL, *err = NULL;
        _cleanup_strv_free_ char **rargv = NULL;
        const char *checkout = NULL;
        /* A path on the worker, which checks it. */
        const CtlOption options[] = { { "checkout", .value = &checkout }, {} };
        size_t len;
        int r;

        if (ctl_options_parse(argc, argv, options, NULL) < 0)
                return CTL_EXIT_USAGE;
        if (optind != argc - 1)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl -H HOST submit SPEC|- [--checkout DIR]");
        if (checkout && checkout[0] != '/')
                return ctl_fail(CTL_EXIT_REFUSED, "--checkout: with -H, an absolute path on the worker.");
        /* Checked here with the worker's parser too: a refusal costs no connection. */
        r = ctl_spec_read(argv[optind], &spec, &len, &err);
        if (r >= 0)
                r = ctl_spec_validate(spec, len, &parsed, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_REFUSED, "Refused: %s: %s", streq(argv[optind], "-") ? "stdin" :
                                          argv[optind], err ?: strerror(-r));
        r = checkout ? strv_build(&rargv, "submit", "-", "--checkout", checkout, NULL) :
                       strv_build(&rargv, "submit", "-", NULL);
        if (r < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        return ctl_remote_run(rargv, spec, len, STDOUT_FILENO, CTL_REMOTE_ESCAPE_STDOUT | CTL_REMOTE_ESCAPE_STDERR);
}

/* status ID [--json], logs ID [-f]: what the worker's pondctl says, with the id checked here first. */
static int host_passthrough_one(int argc, char *argv[], const char *flag_long, char flag_short) {
        _cleanup_strv_free_ char **rargv = NULL;
        bool flag = false;
        const CtlOption options[] = { { flag_long, flag_short, .flag = &flag }, {} };
        const char *id;
        int r;

        r = ctl_options_parse(argc, argv, options, NULL);
        if (r < 0 || ctl_job_id_arg(argc, argv, r, &id) < 0)
                return CTL_EXIT_USAGE;
        if (strv_build(&rargv, argv[0], id, NULL) < 0 || (flag && strv_push(&rargv, strdup(argv[0][0] == 'l' ?
                                                                                   "-f" : "--json")) < 0))
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        (void) signal(SIGPIPE, SIG_IGN);
        /* logs: the job's own output, as it wrote it; status --json: json-c's, for scripts. */
        return ctl_remote_run(rargv, NULL, 0, STDOUT_FILENO, argv[0][0] == 'l' ? 0 : flag ? CTL_REMOTE_ESCAPE_STDERR :
                              CTL_REMOTE_ESCAPE_STDOUT | CTL_REMOTE_ESCAPE_STDERR);
}

static int host_status(int argc, char *argv[]) {
        return host_passthrough_one(argc, argv, "json", 0);
}

static int host_logs(int argc, char *argv[]) {
        return host_passthrough_one(argc, argv, "follow", 'f');
}

static int host_list(int argc, char *argv[]) {
        _cleanup_(ctl_list_args_done) CtlListArgs a = {};
        _cleanup_strv_free_ char **rargv = NULL;

        /* The filters are checked here (a usage error costs no connection), then passed on as given. */
        if (ctl_list_parse_argv(argc, argv, clock_usec(CLOCK_REALTIME), &a) < 0)
                return CTL_EXIT_USAGE;
        for (int i = 0; i < argc; i++)
                if (strv_push(&rargv, strdup(argv[i])) < 0)
                        return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        return ctl_remote_run(rargv, NULL, 0, STDOUT_FILENO, a.json ? CTL_REMOTE_ESCAPE_STDERR :
                              CTL_REMOTE_ESCAPE_STDOUT | CTL_REMOTE_ESCAPE_STDERR);
}

static int host_cancel(int argc, char *argv[]) {
        _cleanup_free_ char *unit = NULL, *err = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        const char *id;
        int r;

        if (ctl_job_id_arg(argc, argv, 1, &id) < 0)
                return CTL_EXIT_USAGE;
        if (unit_name(UNIT_JOB_SERVICE, id, &unit) < 0)
                return ctl_fail(CTL_EXIT_ERROR, "Out of memory.");
        if (ctl_host_bus_open(&bus) < 0)
                return CTL_EXIT_ERROR;
        /* The spool is the worker's: here a job is known by its unit, loaded while it runs and until systemd
         * collects it after it ended. */
        r = ctl_unit_is_known(bus, unit);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot look up %s on %s: %m", unit, ctl_host());
        if (r == 0)
                return ctl_fail(CTL_EXIT_NOT_FOUND, "%s is not loaded on %s: no such job, or it has ended.", unit,
                                ctl_host());
        r = ctl_unit_call(bus, "StopUnit", unit, &err);
        if (r < 0)
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Cannot stop %s on %s: %s", unit, ctl_host(),
                                          err ?: strerror(-r)); /* the worker's bus says why */
        return CTL_EXIT_OK;
}

/* The tail of wait and run: the unit watched over the remote bus, the result fetched and verified here. */
static int host_wait_job(const char *id, const uint8_t *pk, bool quiet, bool json, HostFetch *f) {
        _cleanup_json_ json_object *verified = NULL, *o = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        int status;

        f->pk = pk;
        if (ctl_host_bus_open(&bus) < 0)
                status = CTL_EXIT_FAILED;
        else
                status = ctl_wait(&(CtlWait) { .bus = bus, .job_id = id, .pk = pk, .quiet = quiet,
                                               .ret_result = json ? &verified : NULL, .fetch = wait_fetch,
                                               .userdata = f });
        if (!json)
                return status;
        if (ctl_wait_to_json(id, f->into && verified ? f->dir : NULL, status, verified, &o) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        ctl_json_print(o);
        return status;
}

/* wait and result: the options by opts, the job id, --into (f->into) checked. 0, or -EINVAL having said
 * why (a usage error). */
static int host_job_args(int argc, char *argv[], const CtlOption opts[], const HostFetch *f,
                         const char **ret_id) {
        const char *id;
        int r;

        r = ctl_options_parse(argc, argv, opts, NULL);
        if (r < 0 || ctl_job_id_arg(argc, argv, r, &id) < 0 || into_check(f->into, id) < 0)
                return -EINVAL;
        *ret_id = id;
        return 0;
}

static int host_wait(int argc, char *argv[]) {
        _cleanup_(host_fetch_done) HostFetch f = HOST_FETCH_NULL;
        const char *id, *pubkey = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        bool quiet = false, json = false;
        const CtlOption options[] = {
                CTL_OPTION_PUBKEY(&pubkey),
                CTL_OPTION_QUIET(&quiet),
                CTL_OPTION_JSON(&json),
                CTL_OPTION_INTO(&f.into),
                {}
        };

        if (host_job_args(argc, argv, options, &f, &id) < 0)
                return CTL_EXIT_USAGE;
        if (need_pubkey(pubkey, pk) < 0)
                return pubkey ? CTL_EXIT_UNVERIFIED : CTL_EXIT_USAGE;
        return host_wait_job(id, pk, quiet, json, &f);
}

static int host_result(int argc, char *argv[]) {
        _cleanup_(host_fetch_done) HostFetch f = HOST_FETCH_NULL;
        _cleanup_free_ char *err = NULL;
        const char *id, *pubkey = NULL;
        uint8_t pk[KEY_SIGN_PUBLIC_SIZE];
        bool json = false;
        const CtlOption options[] = {
                CTL_OPTION_JSON(&json), CTL_OPTION_PUBKEY(&pubkey), CTL_OPTION_INTO(&f.into), {}
        };
        int r;

        if (host_job_args(argc, argv, options, &f, &id) < 0)
                return CTL_EXIT_USAGE;
        if (need_pubkey(pubkey, pk) < 0)
                return pubkey ? CTL_EXIT_ERROR : CTL_EXIT_USAGE;
        f.pk = pk;
        f.want_json = json;
        r = host_fetch(&f, id, &err);
        if (r == -ENOENT)
                return ctl_fail(CTL_EXIT_NOT_FOUND, "Job %s has no result on %s.", id, ctl_host());
        if (r < 0 && r != -EBADMSG)
                return CTL_EXIT_ERROR;
        /* Not verified: "FAILED: why", as for a local result, and nothing was kept. */
        return ctl_result_report(f.dir, r, f.result, f.json, f.json_len, err, json);
}

int ctl_host_run(const char *id, const char *spec, size_t len, const uint8_t *pk, bool quiet, const char *into) {
        _cleanup_(host_fetch_done) HostFetch f = HOST_FETCH_NULL;
        _cleanup_strv_free_ char **rargv = NULL;
        int r;

        if (into_check(into, id) < 0)
                return CTL_EXIT_USAGE;
        f.into = into;
        if (strv_build(&rargv, "submit", "-", NULL) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        r = ctl_remote_run(rargv, spec, len, -EBADF, CTL_REMOTE_ESCAPE_STDERR);
        if (r != 0)
                return r;
        if (!quiet)
                log_info("Started job %s (pond-job@%s.service) on %s.", id, id, ctl_host());
        (void) signal(SIGPIPE, SIG_IGN);
        rargv = strv_free(rargv);
        /* The output as the worker's pondctl follows it: the live log, then its signed copy. */
        if (strv_build(&rargv, "logs", "-f", id, NULL) < 0)
                return ctl_fail(CTL_EXIT_FAILED, "Out of memory.");
        r = ctl_remote_spawn(rargv, -EBADF, STDOUT_FILENO, &f.logs);
        if (r < 0)
                log_warning_errno(r, "Cannot follow the log of %s on %s: %m", id, ctl_host());
        return host_wait_job(id, pk, quiet, false, &f);
}

CtlVerbFunc ctl_host_verb(const char *name) {
        static const struct {
                const char *name;
                CtlVerbFunc run;
        } verbs[] = {
                { "run", ctl_verb_run },       /* ctl-run.c: the spec is built here, then ctl_host_run() */
                { "submit", host_submit },
                { "status", host_status },
                { "logs", host_logs },
                { "wait", host_wait },
                { "cancel", host_cancel },
                { "list", host_list },
                { "result", host_result },
        };

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return verbs[i].run;
        return NULL;
}
