/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-slurm.h: `pondctl slurm-node` and `pondctl slurm-args` (ctl-slurm.c, on slurm.h). */
#pragma once

int ctl_verb_slurm_node(int argc, char *argv[]);
int ctl_verb_slurm_args(int argc, char *argv[]);
