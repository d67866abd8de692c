/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ruleset.h: pond-init's Landlock ruleset: its command line (what pond decided) parsed, and the access
 * rights each rule gets at a given ABI, without a system call (so that unit tests can check them). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The newest ABI whose rights pond-init knows; a kernel with a newer one is used at this one. */
#define RULESET_ABI_MAX 7
#define RULESET_PATHS_MAX 64
#define RULESET_PORTS_MAX 8

typedef enum RuleKind {
        RULE_READ,      /* read-only beneath (the root) */
        RULE_RW,        /* read-write beneath: make, remove, write, truncate, rename; never execute */
        RULE_DEV,       /* a device file (or /dev/pts): read, write, truncate, ioctl; nothing made there */
        RULE_EXEC,      /* execute beneath a directory, or the one file */
        _RULE_KIND_MAX,
} RuleKind;

typedef struct Rule {
        RuleKind kind;
        const char *path;       /* absolute; borrowed from argv */
} Rule;

typedef struct Ruleset {
        unsigned abi;                   /* what pond decided: 1..RULESET_ABI_MAX, applied exactly; 0: none */
        Rule rules[RULESET_PATHS_MAX];
        unsigned n_rules;
        uint16_t ports[RULESET_PORTS_MAX]; /* TCP connect allowed to these only (ABI >= 4) */
        unsigned n_ports;
        bool connect_any;               /* "--connect any": TCP is not Landlock's to restrict */
        int channel;                    /* "--channel FD": the supervisor's exec channel (serve.c), or -1 */
        char **argv;                    /* the payload's, after "--"; borrowed */
} Ruleset;

/* pond-init [--channel FD] [--abi N [--read P] [--rw P] [--dev P] [--exec P] [--connect PORT|any]] -- CMD [ARG...]
 * Every path absolute, without "..", at most RULESET_PATHS_MAX of them; rules only with --abi (without it,
 * no Landlock). -EINVAL with *ret_error (static text) on anything else. */
int ruleset_parse(int argc, char **argv, Ruleset *ret, const char **ret_error);

/* The rights handled (everything this ABI knows: what no rule grants is denied), and each kind's grant. */
uint64_t ruleset_handled_fs(unsigned abi);
uint64_t ruleset_handled_net(unsigned abi);
uint64_t ruleset_scoped(unsigned abi);
/* A rule's rights at abi; on a file (is_dir false) only the rights a file can have. */
uint64_t ruleset_rule_access(RuleKind kind, unsigned abi, bool is_dir);
