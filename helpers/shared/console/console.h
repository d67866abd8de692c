/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* console.h: the job's console socket (docs/job-spec.md, "Interactive jobs"): the supervisor listens on
 * JobPaths.console (SOCK_SEQPACKET, 0600, peers checked with SO_PEERCRED) while the payload runs, and
 * pondctl attaches to a tty or stdin job there, or asks for an exec into the running job. One packet is one
 * message: a type byte, then its payload. The same file holds the fd passing a runtime's --console-socket
 * uses to hand over a pseudo-terminal's master. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"

/* The largest packet: a type byte and 64 KiB. */
#define CONSOLE_DATA_MAX (64 * 1024)
#define CONSOLE_PACKET_MAX (CONSOLE_DATA_MAX + 1)
/* An exec's argv, NUL-separated: at most this many bytes and strings. */
#define CONSOLE_EXEC_ARGS_MAX 256

typedef enum ConsoleMessage {
        /* caller -> supervisor */
        CONSOLE_ATTACH = 'A',   /* first packet: attach to the job's tty or stdin; no payload */
        CONSOLE_EXEC = 'X',     /* first packet: run argv (NUL-terminated strings) beside the payload */
        CONSOLE_INPUT = 'D',    /* bytes for the tty or stdin */
        CONSOLE_WINSIZE = 'W',  /* ConsoleWinsize: the caller's terminal size (TIOCSWINSZ on the master) */
        CONSOLE_EOF = 'E',      /* the caller's stdin ended: a stdin job's pipe is closed */
        CONSOLE_DETACH = 'Z',   /* the caller detaches on purpose (Ctrl-]): its going away is no hangup */
        /* supervisor -> caller */
        CONSOLE_MODE = 'M',     /* the answer to ATTACH: 't' (tty: output follows here) or 'i' (stdin only) */
        CONSOLE_STDOUT = 'O',   /* a tty's output, an exec's stdout */
        CONSOLE_STDERR = 'R',   /* an exec's stderr */
        CONSOLE_EXIT = 'Q',     /* an exec's end: int32 status (its rc; 128 + N for signal N) */
        CONSOLE_ERROR = 'N',    /* a refusal, in words; the connection is closed after it */
} ConsoleMessage;

typedef struct ConsoleWinsize {
        uint16_t rows, cols;
} ConsoleWinsize;

/* One packet (MSG_NOSIGNAL; with nonblock, MSG_DONTWAIT: -EAGAIN when it does not fit). */
int console_send(int fd, ConsoleMessage type, const void *data, size_t len, bool nonblock);
/* A printf'd CONSOLE_ERROR, blocking at most the socket's send timeout. */
int console_send_error(int fd, const char *fmt, ...) _printf_(2, 3);

/* A listening unix socket of type at path (an old one removed first), mode applied before listen(), the fd
 * non-blocking and O_CLOEXEC. -ENAMETOOLONG for a path longer than sun_path. */
int console_listen(const char *path, int type, mode_t mode, int *ret_fd);
/* A SOCK_SEQPACKET connection to path (blocking, O_CLOEXEC). */
int console_connect(const char *path, int *ret_fd);
/* The peer's uid (SO_PEERCRED). */
int console_peer_uid(int fd, uid_t *ret);

/* One fd passed with SCM_RIGHTS on a stream connection (what runc and runsc send to --console-socket).
 * -EBADMSG when the message carries none; any further fds are closed. */
int console_recv_fd(int fd, int *ret_fd);

/* argv packed for CONSOLE_EXEC and unpacked again (every string checked: non-empty argv, at most
 * CONSOLE_EXEC_ARGS_MAX strings). */
int console_pack_argv(char *const *argv, char **ret, size_t *ret_len);
int console_unpack_argv(const char *buf, size_t len, char ***ret);
