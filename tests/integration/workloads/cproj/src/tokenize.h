/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tokenize.h: words of a text */
#pragma once
#include <stddef.h>

/* Calls fn(word, userdata) for each maximal run of letters, lower-cased; stops at fn's first error. */
int tokenize(const char *text, size_t len, int (*fn)(const char *word, void *userdata), void *userdata);
