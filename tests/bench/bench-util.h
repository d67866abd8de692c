/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-util.h: what every benchmark needs: a monotonic clock, medians, and the synthetic checkout that
 * bench-stage and bench-input-hash share (built once, reused by later runs). */
#pragma once

#include <stddef.h>
#include <stdint.h>

uint64_t bench_now_ns(void);
/* Sorts v. */
uint64_t bench_median(uint64_t *v, size_t n);
/* FILES files of BYTES/FILES bytes each, 200 per directory, below dir; an existing dir is reused as is. */
int bench_make_checkout(const char *dir, unsigned files, uint64_t bytes);
