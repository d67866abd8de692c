/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-dispatch.h: `pondctl dispatch-check`, the control plane's routing check (ctl-dispatch.c, on
 * dispatch.h). Exit 0: accepted (and the worker, if given, may take it); 1: refused or failed; 2: the
 * job is valid but the given worker may not take it. */
#pragma once

enum {
        CTL_DISPATCH_EXIT_NOT_ELIGIBLE = 2,
};

int ctl_verb_dispatch_check(int argc, char *argv[]);
