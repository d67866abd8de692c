/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* init-proto.h: the channel between the supervisor (pond-run's job-init.c) and the job's init (pond-init's
 * serve.c), a connected unix stream socket made before the container and passed into it as the init's own
 * fd (docs/threat-model.md, "The job's init"): frames of an InitFrame header and len bytes. Header only:
 * pond-init is static and links no shared component. Both ends run on one machine: host byte order. */
#pragma once

#include <stdint.h>

/* Execs served at once: the supervisor picks a free slot, which stays busy until its INIT_EXIT. */
#define INIT_SLOTS 16
/* What one request may carry, and the frames pond-init accepts at most. */
#define INIT_ARGV_MAX 256
#define INIT_ENV_MAX 64
#define INIT_STDIN_MAX (256 * 1024)
#define INIT_STRINGS_MAX (64 * 1024)
#define INIT_FRAME_MAX (INIT_STDIN_MAX + INIT_STRINGS_MAX + 64)
/* One output frame at most: it fits one console packet (console.h's CONSOLE_DATA_MAX). */
#define INIT_CHUNK_MAX (60 * 1024)
/* The slot of the payload's own report. */
#define INIT_SLOT_PAYLOAD 0xffffu

typedef struct InitFrame {
        uint32_t len;           /* bytes after the header */
        uint16_t slot;
        uint8_t type;           /* InitMessage */
        uint8_t reserved;       /* 0 */
} InitFrame;

typedef enum InitMessage {
        /* pond-run -> pond-init */
        INIT_EXEC = 'X',        /* InitExecHeader, then cwd, argv and env (NUL-terminated strings), stdin */
        INIT_ACK = 'A',         /* the slot's last output frame was taken: the next may come */
        INIT_STDIN = 'I',       /* INIT_EXEC_STDIN_STREAM: at most INIT_STDIN_MAX bytes of the command's stdin,
                                 * one in flight until INIT_STDIN_TAKEN; empty: its end (the pipe is closed) */
        /* pond-init -> pond-run */
        INIT_STDOUT = 'O',      /* at most INIT_CHUNK_MAX bytes; no more until INIT_ACK */
        INIT_STDERR = 'R',
        INIT_EXIT = 'Q',        /* InitExit: the command ended and its output is sent; the slot is free */
        INIT_PAYLOAD = 'P',     /* slot INIT_SLOT_PAYLOAD, int32 wait status: the payload ended, the init ends */
        INIT_STDIN_TAKEN = 'T', /* no payload: the slot's last INIT_STDIN is written (or dropped: the command
                                 * closed its stdin or ended): the next may come */
} InitMessage;

typedef struct InitExecHeader {
        uint64_t output_max;    /* stdout + stderr bytes sent at most; beyond, read and dropped */
        uint32_t timeout_ms;    /* 0: none; else the command's process group is SIGKILLed at it */
        uint32_t n_argv;        /* 1..INIT_ARGV_MAX */
        uint32_t n_env;         /* 0..INIT_ENV_MAX, each NAME=VALUE */
        uint32_t stdin_len;     /* 0..INIT_STDIN_MAX; 0: stdin is /dev/null (unless streamed) */
        uint32_t flags;         /* INIT_EXEC_* */
        uint32_t reserved;      /* 0 */
} InitExecHeader;

/* stdin is a pipe fed by INIT_STDIN frames, of any length, until an empty one (stdin_len is 0): what a
 * copy into the job streams (docs/job-spec.md, "Copying files") */
#define INIT_EXEC_STDIN_STREAM (1u << 0)

#define INIT_EXIT_TIMED_OUT (1u << 0)
#define INIT_EXIT_TRUNCATED (1u << 1)
#define INIT_EXIT_NOT_STARTED (1u << 2) /* fork or the pipes failed: status is 126 */

typedef struct InitExit {
        int32_t status;         /* the rc, or 128 + N for signal N */
        uint32_t flags;         /* INIT_EXIT_* */
} InitExit;
