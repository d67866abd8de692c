/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-options.h: a verb's options as one table, parsed by ctl_options_parse() (ctl-options.c): flags
 * (--json, -q), options with a value (--pubkey FILE) and options a function takes as they come (--checkout
 * DIR), the options several verbs share written once. */
#pragma once

#include <stdbool.h>

/* Takes an option's value: 0, or a negative errno having said why. */
typedef int (*CtlOptionParse)(const char *arg, void *userdata);

typedef struct CtlOption {
        const char *name;       /* the long name; an entry without one ends the table */
        char short_name;        /* 0: none */
        bool *flag;             /* a flag: set when given */
        const char **value;     /* takes a value: the last one given */
        CtlOptionParse parse;   /* takes a value: each one given, in order */
} CtlOption;

/* What a verb's table holds at most. */
#define CTL_OPTIONS_MAX 8

/* The options of the same name and meaning in every verb that takes them. */
#define CTL_OPTION_JSON(b) { "json", .flag = (b) }
#define CTL_OPTION_QUIET(b) { "quiet", 'q', .flag = (b) }
#define CTL_OPTION_PUBKEY(s) { "pubkey", .value = (s) }
#define CTL_OPTION_INTO(s) { "into", .value = (s) }
#define CTL_OPTION_JOB_ID(s) { "job-id", .value = (s) }
/* --checkout DIR: resolved to an absolute directory as it comes (userdata: the char ** that takes it). */
#define CTL_OPTION_CHECKOUT { "checkout", .parse = ctl_option_checkout }
int ctl_option_checkout(const char *arg, void *userdata);

/* Parses the options of argv (argv[0] the verb) by opts, from scratch (optind reset); operands may come
 * among them. Returns the index of the first operand (optind: getopt_long() has moved the operands to
 * argv[r..argc)), -CTL_EUSAGE (ctl.h) for an unknown option or one without its value (getopt_long() said
 * which), or what an option's parse function returned, userdata passed to it. */
int ctl_options_parse(int argc, char *argv[], const CtlOption opts[], void *userdata);
