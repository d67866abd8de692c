/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-console-conn.c: one connection to the job's console socket: packets to its caller (one kept while
 * the caller cannot take it), the events it waits for, and its end, which releases what the connection
 * holds (an exec's process and pipes, through the release hook job-exec.c sets), and a request's refusal.
 * Below job-console.c, job-exec.c and job-cp.c, which use it; it calls none of them. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"

void job_console_conn_update(ConsoleConn *c) {
        JobConsole *con = &c->job->console;
        uint32_t events = 0;

        if (!c->src)
                return;
        if (c->kind != CONSOLE_CONN_ATTACHED || con->in_len < CONSOLE_INPUT_MAX)
                events |= EPOLLIN;
        if ((c->kind == CONSOLE_CONN_ATTACHED && con->out_len > 0) || c->pending)
                events |= EPOLLOUT;
        (void) sd_event_source_set_io_events(c->src, events);
}

int job_console_conn_send(ConsoleConn *c, ConsoleMessage type, const void *data, size_t len) {
        int r;

        if (c->fd < 0)
                return 0; /* the caller is gone: the output is dropped */
        if (c->pending)
                return -EBUSY;
        r = console_send(c->fd, type, data, len, true);
        if (r != -EAGAIN)
                return r;
        c->pending = malloc(len ?: 1);
        if (!c->pending)
                return -ENOMEM;
        memcpy(c->pending, data, len);
        c->pending_type = type;
        c->pending_len = len;
        job_console_conn_update(c);
        return -EAGAIN;
}

static void conn_unlink(ConsoleConn *c) {
        JobConsole *con = &c->job->console;

        for (ConsoleConn **p = &con->conns; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        if (con->attached == c)
                con->attached = NULL;
}

void job_console_conn_free(ConsoleConn *c) {
        if (!c)
                return;
        conn_unlink(c);
        if (c->release)
                c->release(c);
        sd_event_source_disable_unref(c->src);
        safe_close(c->fd);
        free(c->pending);
        free(c);
}

int job_console_conn_refuse(ConsoleConn *c, const char *what, int r, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = strdupf_va(fmt, ap);
        va_end(ap);
        log_warning("%s for job %s refused: %s", what, c->job->paths.id, msg ?: "?");
        (void) console_send_error(c->fd, "%s", msg ?: "refused");
        return r;
}
