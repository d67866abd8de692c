/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tags.h: the pool and tenant tags that route a job (docs/dispatch.md): the tags a resolved job requires
 * (pool:<tier>, and tenant:<project> for byo), what a tag may look like, and whether a worker's tags carry
 * a job's. One computation for both sides: pondctl dispatch-check routes by it, pond-run refuses by it. */
#pragma once

#include <stdbool.h>

#include "policy/policy.h"

#define TAGS_MAX 64
#define TAG_TENANT_MAX 128
#define TAG_KEY_MAX 32

/* A tenant (project) usable inside a tag: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}. */
bool tag_tenant_is_valid(const char *s);
/* KEY:VALUE, KEY [a-z][a-z0-9_-]{0,31}, VALUE as a tenant ("pool:trusted", "tenant:acme", "zone:eu"). */
bool tag_is_valid(const char *s);

/* "a,b,c" -> a NULL-terminated vector without duplicates (NULL or "": an empty one); an empty item, a tag
 * that is not tag_is_valid() or more than TAGS_MAX: -EINVAL. */
int tags_split(const char *s, char ***ret);

/* The tags a job needs of its worker: "pool:<tier>", plus "tenant:<tenant>" for byo. Fails closed, -EINVAL
 * with *ret_error: byo taken from a profile's default (block is the sandbox block as written: its tier NULL),
 * byo without a tenant, a byo tenant that is not tag_tenant_is_valid(). */
int tags_required(const ResolvedPolicy *r, const SandboxBlock *block, const char *tenant, char ***ret,
                  char **ret_error);

/* The first of required that have lacks, or NULL when have carries them all. */
const char *tags_first_missing(char *const *required, char *const *have);

/* "a, b" ("(none)" for none); NULL for lack of memory. */
char *tags_join(char *const *tags);
