/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* socket-util.h: the listening TCP socket of a sidecar (pond-egress, pond-broker), from "ADDR:PORT". */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* A decimal port 1..65535 of exactly n characters, no sign, no leading zero. */
int parse_port(const char *s, size_t n, uint16_t *ret);
/* "ADDR:PORT" / "[V6]:PORT", numeric only: a bound, listening, non-blocking, O_CLOEXEC socket. */
int socket_listen_tcp(const char *addr_port, int *ret_fd);
/* The listening socket systemd passed (a socket unit of the service's name, LISTEN_FDS): 0 and the fd, made
 * non-blocking, if it is one TCP socket listening on exactly addr_port; -ENOENT if none was passed (the
 * caller binds its own); -EBADF if what was passed is anything else (the caller must not serve it). */
int socket_listen_inherited(const char *addr_port, int *ret_fd);
