/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* files.h: pond-init's copy modes (files.c): `pondctl cp` run inside the job as an exec of the init. */
#pragma once

#include <stdbool.h>

/* The most one copy moves, in bytes (console/console.h's CONSOLE_COPY_MAX, which the supervisor checks
 * first, is the same). */
#define FILES_SIZE_MAX (64ULL * 1024 * 1024)

/* Where pond-init is in the job (policy/landlock.h's LANDLOCK_INIT_PATH): the argv[0] of a copy the
 * supervisor asks for. */
#define FILES_SELF "/dev/.pond-init"

/* argv[1] is --put or --get. */
bool files_wanted(int argc, char **argv);
/* An exec request that is a copy: argv[0] is FILES_SELF and argv[1] --put or --get (the init's fork then
 * runs files_main() itself). */
bool files_self(char **argv);
/* The copy; returns the exit status: 0 done, 1 refused or failed (a line on stderr says why; put leaves
 * nothing behind). */
int files_main(int argc, char **argv);
/* path absolute, without empty, "." or ".." components or a trailing slash, and strictly below root. */
bool files_path_ok(const char *path, const char *root);
