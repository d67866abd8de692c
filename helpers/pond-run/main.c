/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pond-run: the job supervisor, run by pond-job@ID.service.
 *   pond-run ID            run job ID from the spool and leave its signed result
 *   pond-run --cleanup ID  remove whatever job ID left behind (ExecStopPost; idempotent)
 *   pond-run --reconcile   at boot: end every accepted job the restart left without a result (pond-reconcile) */
#include <getopt.h>
#include <signal.h>
#include <string.h>

#include "basic/log.h"
#include "basic/signal-util.h"
#include "config.h"
#include "supervise.h"

static bool arg_cleanup, arg_reconcile;
static const char *arg_job_id;

static void help(void) {
        printf("Usage: pond-run [--cleanup] JOB_ID\n"
               "       pond-run --reconcile\n\n"
               "Runs (or, with --cleanup, cleans up after) one pond job. Normally started by\n"
               "pond-job@JOB_ID.service, not by hand. --reconcile ends, with a signed failed\n"
               "result, every accepted job a restart left without one (pond-reconcile.service).\n"
               "See pond-run(8).\n");
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "cleanup", no_argument, NULL, 'c' },
                { "reconcile", no_argument, NULL, 'r' },
                { "debug", no_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        arg_cleanup = true;
                        break;
                case 'r':
                        arg_reconcile = true;
                        break;
                case 'd':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'h':
                        help();
                        return 0;
                case 'V':
                        puts("pond-run " POND_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (arg_reconcile) {
                if (arg_cleanup || optind != argc) {
                        log_error("--reconcile takes no job id.");
                        return -EINVAL;
                }
                return 1;
        }
        if (optind + 1 != argc) {
                log_error("Expected exactly one job id.");
                return -EINVAL;
        }
        arg_job_id = argv[optind];
        return 1;
}

int main(int argc, char *argv[]) {
        int r;

        log_set_prefix("pond-run");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? POND_RUN_EXIT_USAGE : 0;
        /* Cancellation is handled by the event loop; until then it must wait, not kill us half-way. */
        r = sigprocmask_many(SIG_BLOCK, NULL, SIGTERM, SIGINT, SIGCHLD, -1);
        if (r < 0) {
                log_error_errno(r, "Failed to block signals: %m");
                return POND_RUN_EXIT_FAILED;
        }
        /* A stdin job that closed its stdin makes the next write to its pipe EPIPE (job-console.c), never a
         * SIGPIPE that would end the supervisor: systemd's IgnoreSIGPIPE= does so for the unit, this for a
         * supervisor run by hand (children get default dispositions back: safe_fork()). */
        (void) signal(SIGPIPE, SIG_IGN);
        if (arg_reconcile)
                return supervise_reconcile() < 0 ? 1 : 0;
        if (arg_cleanup)
                return supervise_cleanup(arg_job_id) < 0 ? 1 : 0;
        return supervise(arg_job_id);
}
