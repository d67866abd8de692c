/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sidecar-args.c: the command line both sidecars share (see sidecar-args.h): the common options merged
 * ahead of the sidecar's own into one getopt_long() table. */
#include <errno.h>
#include <stdio.h>

#include "basic/log.h"
#include "config.h"
#include "sidecar/sidecar-args.h"

static int options_merge(const struct option *own, struct option *ret, size_t n_ret) {
        static const struct option common[] = {
                { "config", required_argument, NULL, SIDECAR_OPTION_CONFIG },
                { "debug", no_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
        };
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(common); i++)
                ret[n++] = common[i];
        for (const struct option *o = own; o && o->name; o++) {
                if (n + 1 >= n_ret)
                        return -E2BIG;
                ret[n++] = *o;
        }
        ret[n] = (struct option) {};
        return 0;
}

int sidecar_args_parse(const SidecarArgs *a, int argc, char *argv[], const char **ret_config) {
        struct option options[4 + SIDECAR_OPTIONS_MAX + 1];
        const char *config = NULL;
        int c, r;

        log_set_prefix(a->program);
        r = options_merge(a->options, options, ELEMENTSOF(options));
        if (r < 0)
                return a->refuse(r, "more than %d options", SIDECAR_OPTIONS_MAX);
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        a->help();
                        return 0;
                case 'V':
                        printf("%s %s\n", a->program, POND_VERSION);
                        return 0;
                case 'd':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case SIDECAR_OPTION_CONFIG:
                        config = optarg;
                        break;
                default:
                        r = a->parse_option(c, optarg);
                        if (r < 0)
                                return r;
                }
        if (optind != argc)
                return a->refuse(-EINVAL, "unexpected argument '%s'", argv[optind]);
        if (!config)
                return a->refuse(-EINVAL, "--config is required");
        *ret_config = config;
        return 1;
}
