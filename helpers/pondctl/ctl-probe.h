/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-probe.h: `pondctl probe`, what this host can really enforce (ctl-probe.c, on probe.h). */
#pragma once

int ctl_verb_probe(int argc, char *argv[]);
