/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* errmsg.h: refusals that say why. Parsers and validators return a negative errno and, when the caller
 * asks for it, a malloc'd message naming the field. */
#pragma once

#include "basic/macro.h"

/* Replaces *ret_error (if ret_error is not NULL) with the formatted message and returns error (a negative
 * errno). If the message cannot be allocated, *ret_error is NULL and error is still returned. */
int error_set(char **ret_error, int error, const char *fmt, ...) _printf_(3, 4);
