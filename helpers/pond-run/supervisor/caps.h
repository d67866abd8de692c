/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* caps.h: capabilities the supervisor must hold. */
#pragma once

/* 0, or -EPERM and the first missing capability with what it is needed for. */
int caps_check_supervisor(char **ret_missing);
