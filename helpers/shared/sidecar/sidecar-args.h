/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sidecar-args.h: the command line the sidecars (pond-egress, pond-broker) share: --config FILE (required),
 * --debug, --help, --version and the log prefix, then each one's own options; no operands. */
#pragma once

#include <getopt.h>

#include "basic/macro.h"

/* What the shared options take of getopt_long()'s values: a sidecar's own options use others. */
#define SIDECAR_OPTION_CONFIG 0x100
/* A sidecar's own options, at most. */
#define SIDECAR_OPTIONS_MAX 16

typedef struct SidecarArgs {
        const char *program;            /* "pond-broker": the log prefix and --version's line */
        const struct option *options;   /* the sidecar's own, ending with {} (not 'd', 'h', 'V') */
        void (*help)(void);
        /* One of options (or '?', what getopt_long() refused, having said which): 0, or a negative errno
         * having said why. */
        int (*parse_option)(int c, const char *arg);
        /* Says why the command line is refused and returns error; why is a fragment ("unexpected argument
         * 'x'", "--config is required"): a log line's sentence or a unit's status text, as the sidecar wants. */
        int (*refuse)(int error, const char *fmt, ...) _printf_(2, 3);
} SidecarArgs;

/* Sets the log prefix and parses argv by a. Returns 1 and *ret_config to run, 0 once --help or --version
 * answered, or a negative errno once refused (said through parse_option or refuse). */
int sidecar_args_parse(const SidecarArgs *a, int argc, char *argv[], const char **ret_config);
