/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* serve.h: pond-init as the job's init, serving exec requests (serve.c). */
#pragma once

/* Starts the payload (argv) as a child and serves the channel (a connected unix stream socket, close-on-exec)
 * until the payload ends; returns the init's exit status: the payload's rc, or 128 + N for signal N. */
int serve(char **argv, int channel_fd);
