/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pondctl: the operator's and control plane's command line for pond: submit and run jobs, follow and
 * cancel them, and check their signed results. The verbs and their dispatch live in the shared library
 * (ctl-main.c, ctl-*.c); this file only sets up logging. See pondctl(1). */
#include "basic/log.h"
#include "ctl.h"

int main(int argc, char *argv[]) {
        log_set_prefix("pondctl");
        return ctl_main(argc, argv);
}
