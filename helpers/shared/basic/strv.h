/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* strv.h: NULL-terminated string vectors (argv, environments). */
#pragma once

#include "basic/macro.h"

/* A new vector of copies of the arguments up to the terminating NULL. */
int strv_build(char ***ret, ...);
/* Appends v (taking it, also on failure) to *l, which may be NULL. */
int strv_push(char ***l, char *v);
/* Appends a copy of s to *l (which may be NULL) unless it is there already. */
int strv_add_unique(char ***l, const char *s);
/* Frees every string and the vector; NULL is fine. Returns NULL. */
char **strv_free(char **l);
