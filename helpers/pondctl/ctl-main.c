/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-main.c: pondctl's verb table, its usage texts (`pondctl --help`, `pondctl VERB --help`) and the
 * dispatch from argv to a verb with the exit statuses of pondctl(1), plus the JSON scripts read on stdout:
 * in the library so that unit tests can drive the command line. */
#include <getopt.h>
#include <string.h>

#include "basic/log.h"
#include "config.h"
#include "ctl-dispatch.h"
#include "ctl-probe.h"
#include "ctl-secrets.h"
#include "ctl-slurm.h"
#include "ctl.h"

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char *argv[]);
        const char *args;
        const char *what;
        const char *options; /* the verb's --help beyond its synopsis; NULL: none */
} Verb;

/* The help of the options several verbs take (ctl-options.h). */
#define HELP_PUBKEY "  --pubkey FILE  verify with this key instead of KEYDIR/sign.pub\n"
#define HELP_INTO "  --into DIR     with -H (which requires --pubkey): keep the fetched, verified result at DIR/ID\n"

static const Verb verbs[] = {
        { "run", ctl_verb_run, "[OPTIONS] -- CMD...", "run a job and exit with its rc",
          "  --profile P --backend B --tier T --image NAME --checkout DIR --allow-host H (repeatable)\n"
          "  --memory SIZE --cpus N --pids N --tmpfs-size SIZE --timeout SECONDS --output PATH (repeatable)\n"
          "  --env K=V (repeatable) --tenant T --job-id ID --spec FILE --pubkey FILE -q|--quiet\n"
          "  -t, --tty  a terminal for the job, this one's keys on it (Ctrl-] detaches; pondctl attach)\n"
          "  -i, --interactive  this stdin to the job's stdin\n"
          "  --kill-on-hangup  with -t or -i: the job is cancelled if this pondctl goes away without Ctrl-]\n"
          "  with -H: --pubkey FILE required, --checkout a path on the worker, --into DIR keeps the result\n"
          "Exits with the job's rc, 128+N for signal N, 124 timed out, 125 refused, 126 pond failed,\n"
          "127 result did not verify, 130 cancelled, 64 usage error.\n" },
        { "submit", ctl_verb_submit, "SPEC|- [--checkout DIR]", "queue and start, print the id",
          "  SPEC      a job spec file, or - for stdin (checked by the worker's own parser either way)\n"
          "  --checkout DIR  set the spec's checkout to DIR's absolute path\n"
          "Exits 0, 125 refused (spec, used id), 126 the unit could not be started.\n" },
        { "status", ctl_verb_status, "ID [--json]", "unit state and result status",
          "  --json    one JSON object: job_id, unit, state, active_state, sub_state, status_text, result\n"
          "Exits 0, or 4 if there is no such job.\n" },
        { "logs", ctl_verb_logs, "ID [-f]", "the job's output, in order",
          "  -f, --follow  follow the live log until the job ends, then its signed copy in the result\n"
          "Exits 0, 4 no such job, 127 the result's log does not verify.\n" },
        { "wait", ctl_verb_wait, "ID [--pubkey F] [-q] [--json]", "wait, verify, exit as run does",
          HELP_PUBKEY
          "  -q, --quiet    no summary\n"
          "  --json         the outcome as one JSON object on stdout (verified, exit_status, result)\n"
          HELP_INTO
          "Exits as run does; 4 if there is no such job.\n" },
        { "attach", ctl_verb_attach, "ID", "reattach to a running -t or -i job",
          "A -t job: its terminal here (Ctrl-] detaches again), then its result as wait gives it.\n"
          "A -i job: this stdin to the job's stdin until it ends (its output: pondctl logs -f ID).\n"
          "Exits as wait does, 0 when detached, 1 the job is not running, 4 no such job.\n" },
        { "exec", ctl_verb_exec, "ID -- CMD...", "run CMD in a running job, as the job",
          "CMD runs beside the job's payload with its user, capabilities, seccomp filter, no_new_privs,\n"
          "Landlock, cwd, env and cgroup; stdin is /dev/null, stdout and stderr come here.\n"
          "Exits with CMD's rc (128+N signal N), 125 refused (the job is not running), 4 no such job.\n" },
        { "cp", ctl_verb_cp, "LOCAL ID:PATH | ID:PATH LOCAL", "copy a file into or out of a running job",
          "  --mode MODE  into the job: the file's permission bits (octal; default: LOCAL's, 0644 for -)\n"
          "One regular file, at most 64 MiB, below the job's writable directories (/workspace where it is\n"
          "writable, its home, /tmp), as the job's user; - is stdin or stdout.\n"
          "Exits 0, 1 the copy failed, 125 refused (path, not running, no init), 4 no such job.\n" },
        { "cancel", ctl_verb_cancel, "ID", "stop it; it still gets a result",
          "Exits 0, 4 no such job, 1 the unit could not be stopped.\n" },
        { "list", ctl_verb_list, "[--json] [--state S] [--since T] [--profile P]", "id state profile rc, per job",
          "  --json         a JSON array of {job_id, state, profile, rc, signal, submitted_usec}\n"
          "  --state S[,S]  only jobs in these states: pending running completed refused failed cancelled\n"
          "                 unknown (repeatable)\n"
          "  --since T      only jobs submitted at or after T: @EPOCH, YYYY-MM-DD[THH:MM[:SS]] (UTC), or\n"
          "                 a time ago like 90s, 30m, 2h, 1d\n"
          "  --profile P    only jobs of profile P\n" },
        { "result", ctl_verb_result, "ID [--json] [--pubkey F]", "verify and show a result",
          "  --json         result.json byte for byte, as verified\n"
          HELP_PUBKEY
          HELP_INTO
          "Exits 0, 1 it does not verify, 4 no such job or no result yet.\n" },
        { "verify", ctl_verb_verify, "--pubkey F [OPTIONS] DIR", "check a result directory",
          "  --pubkey FILE --job-id ID --input-sha HEX --image-digest sha256:HEX\n"
          "Exits 0 verified, 1 not.\n" },
        { "quorum", ctl_verb_quorum, "--pubkey F [--min N] DIR DIR...", "compare re-runs of one job",
          "  --pubkey FILE  the workers' signing key (one key: results of one worker, or of a fleet's key)\n"
          "  --min N        at least N results must have the same output (default: all)\n"
          "Exits 0 agree, 1 a result does not verify, 2 not re-runs of one completed job, 3 disagree.\n" },
        { "export", ctl_verb_export, "ID", "the result directory as a tar stream on stdout",
          "What pondctl -H fetches from a worker to verify it locally.\n"
          "Exits 0, 4 no such job or no result yet.\n" },
        { "keygen", ctl_verb_keygen, "[--dir DIR]", "create keys for enrollment", NULL },
        { "hash-input", ctl_verb_hash_input, "SPEC [--checkout DIR]", "the input_sha a worker signs", NULL },
        { "image", ctl_verb_image, "import|list|inspect|rm|gc", "the image store (pondctl(1))",
          "  import PATH [--name REPO:TAG] [--json]\n"
          "  list [--json]\n"
          "  inspect NAME|DIGEST\n"
          "  rm NAME|DIGEST...\n"
          "  gc [--json]\n" },
        { "probe", ctl_verb_probe, "[--json]", "what this host can enforce",
          "  --json    the probe document (probe_version, capabilities, ...; docs/dispatch.md)\n" },
        { "seal", ctl_verb_seal, "--to PUB --job-id ID [--in F]", "seal a secret (stdin) to a worker", NULL },
        { "bundle", ctl_verb_bundle, "create|extract ...", "encrypted source bundles",
          "  create --to PUB --job-id ID DIR -o FILE\n"
          "  extract [--key-dir D] --job-id ID FILE DEST\n" },
        { "dispatch-check", ctl_verb_dispatch_check, "[FILE] [--tenant P] [--worker PROBE]", "route a sandbox block",
          "  FILE|-  a sandbox block (stdin without FILE)\n"
          "  --tenant PROJECT --policy DIR --worker PROBE.json --worker-tags TAG,TAG...\n"
          "  (without --worker-tags, the probe's own \"tags\")\n"
          "Exits 0 accepted, 1 refused, 2 this worker may not take it.\n" },
        { "slurm-node", ctl_verb_slurm_node, "[--tags T,T] [--update] [--json]", "this worker as a Slurm node",
          "  --tags TAG,TAG  the worker's pool and tenant tags (default: worker.json's \"tags\")\n"
          "  --probe FILE    a pondctl probe --json document instead of probing here\n"
          "  --name NODE     the node's name (default: the short host name)\n"
          "  --policy DIR    worker.json from DIR (default: the worker's)\n"
          "  --update        NodeName=... AvailableFeatures=... ActiveFeatures=... for scontrol update\n"
          "  --json          {node_name, cpus, real_memory_mib, features}\n"
          "Prints slurm.conf's NodeName line: Features from the probe and tags, CPUs and RealMemory\n"
          "within the admission ceiling.\n" },
        { "slurm-args", ctl_verb_slurm_args, "SPEC|- [--worker PROBE]...", "the sbatch options for a job spec",
          "  --worker PROBE.json  a worker's probe (repeatable): refused unless one may take the job\n"
          "  --worker-tags T,T    the workers' tags (default: each probe's) --partition P (default: the job's tier)\n"
          "  --margin SECONDS     added to the spec's wall clock for --time (default 60) --policy DIR --json\n"
          "Prints one sbatch option per line. Exits 0, 1 refused (dispatch-check's reason).\n" },
};

static void usage(FILE *f) {
        fprintf(f, "Usage: pondctl [--debug] [-H [USER@]HOST] VERB [ARGS...]\n"
                   "       pondctl VERB --help\n\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                fprintf(f, "  %-14s %-36s %s\n", verbs[i].name,
                        strlen(verbs[i].args) > 36 ? "[OPTIONS]" : verbs[i].args, verbs[i].what);
        fprintf(f, "\n-H [USER@]HOST: run, submit, status, logs, wait, cancel, list, result on a worker over ssh.\n");
        fprintf(f, "\nExit status: 0 success, 1 failed, 4 no such job, 64 usage error; run and wait exit with the\n"
                   "job's rc, 128+N signal N, 124 timed out, 125 refused, 126 pond failed, 127 did not verify,\n"
                   "130 cancelled. See pondctl(1).\n");
}

static void verb_usage(const Verb *v) {
        printf("Usage: pondctl %s %s\n\n%s.\n", v->name, v->args, v->what);
        if (v->options)
                printf("\n%s", v->options);
        printf("See pondctl(1).\n");
}

static const Verb *find_verb(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return &verbs[i];
        return NULL;
}

bool ctl_wants_help(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--"))
                        return false; /* from here on: the job's command */
                if (streq(argv[i], "--help") || streq(argv[i], "-h"))
                        return true;
        }
        return false;
}

const char *ctl_verb_usage_args(const char *verb) {
        const Verb *v = find_verb(verb);

        return v ? v->args : NULL;
}

/* Global options, up to the verb; returns 1 to go on, else the exit status. */
static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "debug", no_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "host", required_argument, NULL, 'H' },
                {}
        };
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "+hH:", options, NULL)) >= 0)
                switch (c) {
                case 'H':
                        if (ctl_host_set(optarg) < 0)
                                return CTL_EXIT_USAGE;
                        break;
                case 'd':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'h':
                        usage(stdout);
                        return CTL_EXIT_OK;
                case 'V':
                        puts("pondctl " POND_VERSION);
                        return CTL_EXIT_OK;
                default:
                        return CTL_EXIT_USAGE;
                }
        if (optind >= argc) {
                /* No verb: a script's mistake, not a request for help; keep stdout clean. */
                usage(stderr);
                return CTL_EXIT_USAGE;
        }
        return 1;
}

int ctl_main(int argc, char *argv[]) {
        const Verb *v;
        int first, r;

        r = parse_argv(argc, argv);
        if (r != 1)
                return r;
        first = optind;
        v = find_verb(argv[first]);
        if (!v) {
                ctl_log_error_untrusted("Unknown verb '%s'; see pondctl --help.", argv[first]);
                return CTL_EXIT_USAGE;
        }
        if (ctl_wants_help(argc - first, argv + first)) {
                verb_usage(v);
                return CTL_EXIT_OK;
        }
        /* Each verb parses its own options from its name on. */
        if (ctl_host()) {
                CtlVerbFunc f = ctl_host_verb(v->name);
                if (!f) {
                        log_error("pondctl %s does not take -H: only run, submit, status, logs, wait, cancel, list "
                                  "and result do.", v->name);
                        return CTL_EXIT_USAGE;
                }
                r = f(argc - first, argv + first);
        } else
                r = v->run(argc - first, argv + first);
        fflush(stdout);
        return r < 0 ? CTL_EXIT_ERROR : r;
}
