/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* signal-util.h: signal masks. Signals an event loop takes through a signalfd (sd_event_add_signal) must be
 * blocked first, and before any thread starts, since threads inherit the mask. */
#pragma once

#include <signal.h>

/* sigprocmask(how, {the signals listed, up to -1}, ret_old). Returns 0 or -errno. */
int sigprocmask_many(int how, sigset_t *ret_old, ...);
