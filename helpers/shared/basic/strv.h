/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* strv.h: NULL-terminated string vectors (argv, environments). */
#pragma once

#include "basic/macro.h"

/* A new vector of copies of the arguments up to the terminating NULL. */
int strv_build(char ***ret, ...);
/* Appends v (taking it, also on failure) to *l, which may be NULL. */
int strv_push(char ***l, char *v);
/* Frees every string and the vector; NULL is fine. Returns NULL. */
char **strv_free(char **l);
