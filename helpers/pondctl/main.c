/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pondctl: the operator's and control plane's command line for pond: submit and run jobs, follow and
 * cancel them, and check their signed results. The verbs live in the shared library (ctl-*.c); this file
 * only sets up logging and dispatches. See pondctl(1). */
#include <getopt.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "ctl-dispatch.h"
#include "ctl-probe.h"
#include "ctl-secrets.h"
#include "log.h"

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char *argv[]);
        const char *args;
        const char *what;
} Verb;

static const Verb verbs[] = {
        { "run",        ctl_verb_run,        "[OPTIONS] -- CMD...",      "run a job and exit with its rc" },
        { "submit",     ctl_verb_submit,     "SPEC [--checkout DIR]",    "queue and start, print the id" },
        { "status",     ctl_verb_status,     "ID",                       "unit state and result status" },
        { "logs",       ctl_verb_logs,       "ID [-f]",                  "the job's output, in order" },
        { "wait",       ctl_verb_wait,       "ID [--pubkey F] [-q]",     "wait, verify, exit as run does" },
        { "cancel",     ctl_verb_cancel,     "ID",                       "stop it; it still gets a result" },
        { "list",       ctl_verb_list,       "",                         "id state profile rc, per job" },
        { "result",     ctl_verb_result,     "ID [--json] [--pubkey F]", "verify and show a result" },
        { "verify",     ctl_verb_verify,     "--pubkey F [OPTIONS] DIR", "check a result directory" },
        { "keygen",     ctl_verb_keygen,     "[--dir DIR]",              "create keys for enrollment" },
        { "hash-input", ctl_verb_hash_input, "SPEC [--checkout DIR]",    "the input_sha a worker signs" },
        { "image",      ctl_verb_image,      "import|list|inspect|rm|gc", "the image store (pondctl(1))" },
        { "probe",      ctl_verb_probe,      "[--json]",                 "what this host can enforce" },
        { "seal",       ctl_verb_seal,       "--to PUB --job-id ID [--in F]", "seal a secret (stdin) to a worker" },
        { "bundle",     ctl_verb_bundle,     "create|extract ...",       "encrypted source bundles" },
        { "dispatch-check", ctl_verb_dispatch_check, "[FILE] [--tenant P] [--worker PROBE]",
                                                                          "route a sandbox block" },
};

static void help(void) {
        printf("Usage: pondctl [--debug] VERB [ARGS...]\n\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-10s %-26s %s\n", verbs[i].name, verbs[i].args, verbs[i].what);
        printf("\nrun options: --profile P --backend B --tier T --image NAME --checkout DIR --allow-host H\n"
               "  --memory SIZE --cpus N --pids N --tmpfs-size SIZE --timeout SECONDS --output PATH\n"
               "  --env K=V --tenant T --job-id ID --spec FILE --pubkey FILE --quiet\n"
               "bundle: create --to PUB --job-id ID DIR -o FILE | extract [--key-dir D] --job-id ID FILE DEST\n\n"
               "run/wait exit with the job's rc, 128+N for signal N, 124 timed out, 125 refused,\n"
               "126 pond failed, 127 result did not verify, 130 cancelled. See pondctl(1).\n");
}

static const Verb *find_verb(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return &verbs[i];
        return NULL;
}

/* Global options, up to the verb; returns 1 to go on, 0 to exit successfully, -EINVAL on misuse. */
static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "debug", no_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'd':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'h':
                        help();
                        return 0;
                case 'V':
                        puts("pondctl " POND_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind >= argc) {
                help();
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char *argv[]) {
        const Verb *v;
        int r;

        log_set_prefix("pondctl");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? CTL_EXIT_ERROR : 0;
        v = find_verb(argv[optind]);
        if (!v) {
                log_error("Unknown verb '%s'; see pondctl --help.", argv[optind]);
                return CTL_EXIT_ERROR;
        }
        /* Each verb parses its own options from its name on. */
        r = v->run(argc - optind, argv + optind);
        fflush(stdout);
        return r < 0 ? CTL_EXIT_ERROR : r;
}
