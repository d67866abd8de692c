/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-options.c: a verb's option table (ctl-options.h) turned into getopt_long()'s, and parsed. */
#include <getopt.h>

#include "ctl-options.h"
#include "ctl.h"

/* getopt_long()'s value for an option without a short name: past any character. */
#define OPTION_VAL_BASE 0x100

static const CtlOption *option_find(const CtlOption opts[], size_t n, int c) {
        for (size_t i = 0; i < n; i++)
                if (opts[i].short_name ? c == opts[i].short_name : c == OPTION_VAL_BASE + (int) i)
                        return &opts[i];
        return NULL;
}

int ctl_options_parse(int argc, char *argv[], const CtlOption opts[], void *userdata) {
        struct option longopts[CTL_OPTIONS_MAX + 1] = {};
        char shortopts[2 * CTL_OPTIONS_MAX + 1] = {};
        size_t n, k = 0;
        int c, r;

        for (n = 0; opts[n].name; n++) {
                const CtlOption *o = &opts[n];
                bool value = o->value || o->parse;

                if (n >= CTL_OPTIONS_MAX)
                        return -E2BIG;
                longopts[n] = (struct option) { o->name, value ? required_argument : no_argument, NULL,
                                                o->short_name ?: OPTION_VAL_BASE + (int) n };
                if (o->short_name) {
                        shortopts[k++] = o->short_name;
                        if (value)
                                shortopts[k++] = ':';
                }
        }
        optind = 0;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                const CtlOption *o = option_find(opts, n, c);

                if (!o)
                        return -CTL_EUSAGE;
                if (o->flag)
                        *o->flag = true;
                else if (o->value)
                        *o->value = optarg;
                else {
                        r = o->parse(optarg, userdata);
                        if (r < 0)
                                return r;
                }
        }
        return optind;
}

int ctl_option_checkout(const char *arg, void *userdata) {
        char **checkout = userdata;
        char *abs = NULL;
        int r;

        r = ctl_checkout_resolve(arg, &abs);
        if (r < 0)
                return log_error_errno(r, "--checkout: cannot use '%s': %m", arg);
        free(*checkout);
        *checkout = abs;
        return 0;
}
