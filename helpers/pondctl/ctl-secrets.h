/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-secrets.h: `pondctl seal` (a credential sealed to a worker for one job) and `pondctl bundle`
 * (encrypted source bundles: create on the control plane side, extract for operators and tests), on seal.h
 * and bundle.h. See docs/secrets.md. */
#pragma once

int ctl_verb_seal(int argc, char *argv[]);
int ctl_verb_bundle(int argc, char *argv[]);
