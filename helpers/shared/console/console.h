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
        CONSOLE_EXEC_REQUEST = 'Y', /* first packet: an exec with options (console_pack_exec()); with "stdin",
                                 * CONSOLE_INPUT packets and CONSOLE_EOF follow before it runs */
        CONSOLE_COPY = 'C',     /* first packet: a file into or out of the job (copy.h: console_pack_copy()); a
                                 * put's bytes follow CONSOLE_MODE 'p' as CONSOLE_INPUT packets and CONSOLE_EOF */
        CONSOLE_INPUT = 'D',    /* bytes for the tty or stdin */
        CONSOLE_WINSIZE = 'W',  /* ConsoleWinsize: the caller's terminal size (TIOCSWINSZ on the master) */
        CONSOLE_EOF = 'E',      /* the caller's stdin ended: a stdin job's pipe is closed */
        CONSOLE_DETACH = 'Z',   /* the caller detaches on purpose (Ctrl-]): its going away is no hangup */
        /* supervisor -> caller */
        CONSOLE_MODE = 'M',     /* the answer to ATTACH: 't' (tty: output follows here) or 'i' (stdin only); to
                                 * a put: 'p' (its bytes may come) */
        CONSOLE_STDOUT = 'O',   /* a tty's output, an exec's stdout, a got file's bytes */
        CONSOLE_STDERR = 'R',   /* an exec's stderr, why a copy failed */
        CONSOLE_EXIT = 'Q',     /* an exec's or a copy's end: int32 status (its rc; 128 + N for signal N), then uint32
                                 * CONSOLE_EXIT_* flags (absent: none) */
        CONSOLE_ERROR = 'N',    /* a refusal, in words; the connection is closed after it */
} ConsoleMessage;

#define CONSOLE_EXIT_TIMED_OUT (1u << 0)   /* its timeout killed its process group */
#define CONSOLE_EXIT_TRUNCATED (1u << 1)   /* output beyond its cap was dropped */

/* One exec's options, as CONSOLE_EXEC_REQUEST carries them: "cwd=DIR", "env=NAME=VALUE" (repeated),
 * "timeout_ms=N", "output_max=N", "stdin", then "--" and argv. */
#define CONSOLE_EXEC_ENV_MAX 64
#define CONSOLE_EXEC_TIMEOUT_MS_MAX (7U * 24 * 3600 * 1000)
#define CONSOLE_EXEC_OUTPUT_MAX (1ULL << 30)
typedef struct ConsoleExecRequest {
        char **argv;
        char *cwd;              /* absolute, or NULL: the payload's */
        char **env;             /* NAME=VALUE each, added to the payload's environment */
        uint32_t timeout_ms;    /* 0: none */
        uint64_t output_max;    /* stdout + stderr bytes returned at most; 0: the supervisor's default */
        bool want_stdin;        /* stdin bytes follow the request (CONSOLE_INPUT, then CONSOLE_EOF) */
        char *stdin_data;       /* the supervisor's: what arrived */
        size_t stdin_len;
} ConsoleExecRequest;

void console_exec_request_done(ConsoleExecRequest *r);
int console_pack_exec(const ConsoleExecRequest *r, char **ret, size_t *ret_len);
/* Every field checked (a NAME=VALUE with a name of [A-Za-z_][A-Za-z0-9_]*, an absolute cwd, the bounds
 * above); -EBADMSG or -E2BIG with *ret_error (static text) naming the field. */
int console_unpack_exec(const char *buf, size_t len, ConsoleExecRequest *ret, const char **ret_error);

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
