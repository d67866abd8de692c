/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* wordcount.h: the most frequent words of a text */
#pragma once
#include "hashmap.h"

int wordcount_text(HashMap *m, const char *text, size_t len);
/* The n most frequent words (ties by name), into out[0..n); returns how many there are. */
size_t wordcount_top(const HashMap *m, const HashEntry **out, size_t n);
