/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* size.h: byte sizes as the policy and overrides write them ("512M", "2GiB", "1048576"). */
#pragma once

#include <stdint.h>

/* "512M", "2G", "1048576" -> bytes. -EINVAL on anything else (negative, empty, overflow, junk). */
int parse_size(const char *s, uint64_t *ret);
