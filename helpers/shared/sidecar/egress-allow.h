/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-allow.h: the host allowlist of pond-egress: exact names and "*.suffix" wildcards. */
#pragma once

#include "basic/macro.h"

#define EGRESS_NAME_MAX 253
#define EGRESS_ALLOW_MAX 4096

typedef struct EgressAllow {
        char **exact;   /* strv: normalized names */
        char **suffix;  /* strv: normalized, without the "*." */
} EgressAllow;

/* Lowercases s[0..len) and drops one trailing dot; refuses (-EINVAL) anything but LDH names: only
 * [a-z0-9.-], labels 1..63 bytes without a leading or trailing hyphen, at most 253 bytes, and a last label
 * that is not all digits (so "127.1" or "2130706433" never pass as names). IDNA must arrive as punycode
 * ("xn--..."), which is LDH. */
int egress_name_normalize(const char *s, size_t len, char **ret);

/* pattern: "name" or "*.suffix" (matches strict subdomains of suffix, never suffix itself). */
int egress_allow_add(EgressAllow *a, const char *pattern);

/* A JSON object file {"allow_hosts": [...], ...}; other keys are ignored here. On -EINVAL a malloc'd
 * reason in *ret_error if not NULL. */
int egress_allow_load_file(EgressAllow *a, const char *path, char **ret_error);

/* name must be normalized. */
bool egress_allow_match(const EgressAllow *a, const char *name);

size_t egress_allow_size(const EgressAllow *a);
void egress_allow_done(EgressAllow *a);
