/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-init.c: the channel to the job's init (console/init-proto.h; docs/threat-model.md, "The job's init"):
 * a unix stream socket pair made before the create step, whose one end the runtime passes into the
 * container as pond-init's --channel (runc: fd 3 through --preserve-fds; runsc, which passes its init
 * nothing but stdio: the init's stdin), so that nothing inside the job but the init holds it. Execs go to the
 * init as requests and come back as framed output, one chunk in flight per exec, and an exit; the payload's
 * end comes back as its wait status. What the init sends is read as untrusted: it runs inside the job. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "basic/log.h"
#include "job.h"

/* An exec's output returned at most when its caller names no cap. */
#define JOB_INIT_OUTPUT_DEFAULT (16ULL * 1024 * 1024)
#define JOB_INIT_IN_MAX (sizeof(InitFrame) + INIT_CHUNK_MAX)

bool job_init_wanted(const Job *j) {
        const RuntimeProvider *p = j->input.provider;

        if (!j->input.resolved || !j->input.resolved->confined || !p)
                return false;
        switch (p->init_channel) {
        case RUNTIME_INIT_CHANNEL_FD:
                return true;
        case RUNTIME_INIT_CHANNEL_STDIN:
                /* the init's stdin is the channel: not where the payload's stdin or terminal needs it */
                return !j->input.spec->tty && !j->input.spec->stdin_open;
        default:
                return false;
        }
}

int job_init_channel_fd(const Job *j) {
        return j->input.provider->init_channel == RUNTIME_INIT_CHANNEL_STDIN ? 0 : 3;
}

int job_init_prepare(Job *j) {
        JobInitChannel *ch = &j->console.init;
        int pair[2];

        if (!job_init_wanted(j))
                return 0;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        ch->job = j;
        ch->fd = pair[0];
        ch->child_fd = pair[1];
        ch->in = malloc(JOB_INIT_IN_MAX);
        if (!ch->in)
                return -ENOMEM;
        if (fcntl(ch->fd, F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        ch->on = true;
        return 0;
}

void job_init_handed_over(Job *j) {
        j->console.init.child_fd = safe_close(j->console.init.child_fd);
}

bool job_init_serves(const Job *j) {
        return j->console.init.on && j->console.init.fd >= 0;
}

static void channel_update(JobInitChannel *ch) {
        if (ch->src)
                (void) sd_event_source_set_io_events(ch->src, EPOLLIN | (ch->out_len > 0 ? EPOLLOUT : 0));
}

static void channel_flush(JobInitChannel *ch) {
        while (ch->fd >= 0 && ch->out_len > 0) {
                ssize_t n = send(ch->fd, ch->out, ch->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break; /* EAGAIN: on EPOLLOUT; an error: the read side sees the end */
                memmove(ch->out, ch->out + n, ch->out_len - (size_t) n);
                ch->out_len -= (size_t) n;
        }
        channel_update(ch);
}

/* A frame queued (the init reads them in order) and sent as far as the socket takes it now. */
static int channel_send(JobInitChannel *ch, unsigned slot, InitMessage type, const struct iovec *iov, size_t n_iov) {
        InitFrame h = { .slot = (uint16_t) slot, .type = (uint8_t) type };
        size_t len = 0;
        char *p;

        for (size_t i = 0; i < n_iov; i++)
                len += iov[i].iov_len;
        if (len > INIT_FRAME_MAX)
                return -E2BIG;
        h.len = (uint32_t) len;
        p = realloc(ch->out, ch->out_len + sizeof h + len);
        if (!p)
                return -ENOMEM;
        ch->out = p;
        memcpy(p + ch->out_len, &h, sizeof h);
        ch->out_len += sizeof h;
        for (size_t i = 0; i < n_iov; i++) {
                if (iov[i].iov_len == 0)
                        continue; /* its base may be NULL (no stdin), which memcpy may not be given */
                memcpy(p + ch->out_len, iov[i].iov_base, iov[i].iov_len);
                ch->out_len += iov[i].iov_len;
        }
        channel_flush(ch);
        return 0;
}

static void send_ack(JobInitChannel *ch, unsigned slot) {
        if (channel_send(ch, slot, INIT_ACK, NULL, 0) < 0)
                log_warning("Cannot queue an acknowledgement for the job's init.");
}

static int free_slot(const JobInitChannel *ch) {
        for (int i = 0; i < INIT_SLOTS; i++)
                if (!ch->busy[i])
                        return i;
        return -EBUSY;
}

static void strings_len(char **l, size_t *len, uint32_t *n) {
        for (; l && *l; l++, (*n)++)
                *len += strlen(*l) + 1;
}

int job_init_exec(ConsoleConn *c, const ConsoleExecRequest *req, uint32_t flags) {
        JobInitChannel *ch = &c->job->console.init;
        InitExecHeader h = {
                .output_max = req->output_max ?: JOB_INIT_OUTPUT_DEFAULT,
                .timeout_ms = req->timeout_ms,
                .stdin_len = (uint32_t) req->stdin_len,
                .flags = flags,
        };
        _cleanup_free_ char *strings = NULL;
        size_t len = strlen(req->cwd ?: "") + 1;
        char *p;
        int slot, r;

        if (!job_init_serves(c->job))
                return -ESRCH;
        if (req->stdin_len > INIT_STDIN_MAX || ((flags & INIT_EXEC_STDIN_STREAM) && req->stdin_len > 0))
                return -E2BIG;
        slot = free_slot(ch);
        if (slot < 0)
                return slot;
        strings_len(req->argv, &len, &h.n_argv);
        strings_len(req->env, &len, &h.n_env);
        if (h.n_argv == 0 || h.n_argv > INIT_ARGV_MAX || h.n_env > INIT_ENV_MAX || len > INIT_STRINGS_MAX)
                return -E2BIG;
        p = strings = malloc(len);
        if (!strings)
                return -ENOMEM;
        p = stpcpy(p, req->cwd ?: "") + 1;
        for (char **a = req->argv; *a; a++)
                p = stpcpy(p, *a) + 1;
        for (char **e = req->env; e && *e; e++)
                p = stpcpy(p, *e) + 1;
        r = channel_send(ch, (unsigned) slot, INIT_EXEC, (const struct iovec[]) {
                                 { &h, sizeof h }, { strings, len }, { req->stdin_data, req->stdin_len } }, 3);
        if (r < 0)
                return r;
        ch->busy[slot] = true;
        ch->stdin_open[slot] = flags & INIT_EXEC_STDIN_STREAM;
        ch->conns[slot] = c;
        ch->seq[slot] = c->number;
        c->init_slot = slot;
        return 0;
}

static int stdin_send(JobInitChannel *ch, unsigned slot, const void *data, size_t len) {
        int r = channel_send(ch, slot, INIT_STDIN, (const struct iovec[]) { { (void *) data, len } }, len > 0);

        if (r < 0)
                return r;
        if (len > 0)
                ch->stdin_flight[slot] = true;
        else
                ch->stdin_open[slot] = false;
        return 0;
}

/* The end of a slot's streamed stdin: now, or once the init took the chunk in flight. */
static int stdin_end(JobInitChannel *ch, unsigned slot) {
        if (!ch->stdin_open[slot] || ch->stdin_end_owed[slot])
                return 0;
        if (ch->stdin_flight[slot]) {
                ch->stdin_end_owed[slot] = true;
                return 0;
        }
        return stdin_send(ch, slot, NULL, 0);
}

int job_init_exec_stdin(ConsoleConn *c, const void *data, size_t len) {
        JobInitChannel *ch = &c->job->console.init;
        unsigned slot;

        if (c->init_slot < 0 || ch->fd < 0)
                return -ESRCH;
        slot = (unsigned) c->init_slot;
        if (!ch->stdin_open[slot] || ch->stdin_end_owed[slot] || len > INIT_STDIN_MAX)
                return -EINVAL;
        if (len == 0)
                return stdin_end(ch, slot);
        if (ch->stdin_flight[slot])
                return -EBUSY;
        return stdin_send(ch, slot, data, len);
}

void job_init_exec_taken(ConsoleConn *c) {
        if (c->ack_owed && c->init_slot >= 0) {
                c->ack_owed = false;
                send_ack(&c->job->console.init, (unsigned) c->init_slot);
        }
}

void job_init_exec_abandon(ConsoleConn *c) {
        JobInitChannel *ch = &c->job->console.init;

        if (c->init_slot < 0)
                return;
        /* it runs on to its end, as a runtime's exec does; its output is dropped from here; a streamed stdin
         * ends short (a copy then leaves nothing) */
        ch->conns[c->init_slot] = NULL;
        if (ch->fd >= 0 && stdin_end(ch, (unsigned) c->init_slot) < 0)
                log_warning("Cannot queue the end of an exec's stdin for the job's init.");
        if (ch->fd >= 0 && c->ack_owed)
                send_ack(ch, (unsigned) c->init_slot);
        c->init_slot = -1;
        c->ack_owed = false;
}

/* The slot's exec in the transcript, ended without a status: the init is gone. */
static void slot_end_recorded(JobInitChannel *ch, int slot) {
        if (ch->job && ch->seq[slot] > 0)
                job_transcript_end(ch->job, ch->seq[slot], -1, 0, true);
        ch->seq[slot] = 0;
}

/* The init's end of the channel is gone (it exited, or broke the protocol): every exec in flight ends
 * without a status, which its caller is told. */
static void channel_end(JobInitChannel *ch, const char *why) {
        if (ch->fd < 0)
                return;
        log_debug("The channel to the job's init ended: %s", why);
        ch->src = sd_event_source_disable_unref(ch->src);
        ch->fd = safe_close(ch->fd);
        for (int i = 0; i < INIT_SLOTS; i++) {
                ConsoleConn *c = ch->conns[i];

                if (ch->busy[i])
                        slot_end_recorded(ch, i);
                ch->conns[i] = NULL;
                ch->busy[i] = ch->stdin_open[i] = ch->stdin_flight[i] = ch->stdin_end_owed[i] = false;
                if (!c)
                        continue;
                c->init_slot = -1;
                if (c->fd >= 0)
                        (void) console_send_error(c->fd, "the job's init ended during the exec: no exit status");
                job_console_conn_free(c);
        }
}

static void on_output_frame(JobInitChannel *ch, const InitFrame *h, const char *data) {
        ConsoleConn *c = ch->conns[h->slot];
        ConsoleMessage type = h->type == INIT_STDOUT ? CONSOLE_STDOUT : CONSOLE_STDERR;
        int r;

        /* recorded as it passes, whether its caller is still there or not */
        job_transcript_output(ch->job, ch->seq[h->slot], type, data, h->len);
        if (!c) {
                send_ack(ch, h->slot); /* its caller went away: dropped */
                return;
        }
        if (c->observe && type == CONSOLE_STDOUT)
                c->observe(c, data, h->len);
        r = job_console_conn_send(c, type, data, h->len);
        if (r == -EAGAIN)
                c->ack_owed = true; /* job_exec_resume() once the caller took it */
        else
                send_ack(ch, h->slot);
}

static void on_exit_frame(JobInitChannel *ch, const InitFrame *h, const char *data) {
        ConsoleConn *c = ch->conns[h->slot];
        InitExit x;

        memcpy(&x, data, sizeof x);
        job_transcript_end(ch->job, ch->seq[h->slot], x.status, x.flags, false);
        ch->seq[h->slot] = 0;
        ch->busy[h->slot] = false;
        ch->stdin_open[h->slot] = ch->stdin_flight[h->slot] = ch->stdin_end_owed[h->slot] = false;
        ch->conns[h->slot] = NULL;
        if (!c)
                return;
        c->init_slot = -1;
        c->exited = true;
        c->status = x.status;
        c->exit_flags = x.flags;
        if (c->progress)
                c->progress(c);
}

/* The init wrote the slot's last stdin chunk: its end if it is owed, else the exec's next chunk. */
static void on_stdin_taken(JobInitChannel *ch, unsigned slot) {
        ConsoleConn *c = ch->conns[slot];

        ch->stdin_flight[slot] = false;
        if (ch->stdin_end_owed[slot]) {
                ch->stdin_end_owed[slot] = false;
                if (stdin_send(ch, slot, NULL, 0) < 0)
                        log_warning("Cannot queue the end of an exec's stdin for the job's init.");
                return;
        }
        if (c && c->stdin_taken)
                c->stdin_taken(c);
}

/* One frame from the init, its fields checked: a slot that runs an exec, a size its type allows. */
static int dispatch(JobInitChannel *ch, const InitFrame *h, const char *data) {
        bool slot_ok = h->slot < INIT_SLOTS && ch->busy[h->slot];

        switch (h->type) {
        case INIT_STDOUT:
        case INIT_STDERR:
                if (!slot_ok || h->len == 0 || h->len > INIT_CHUNK_MAX)
                        return -EBADMSG;
                on_output_frame(ch, h, data);
                return 0;
        case INIT_EXIT:
                if (!slot_ok || h->len != sizeof(InitExit))
                        return -EBADMSG;
                on_exit_frame(ch, h, data);
                return 0;
        case INIT_STDIN_TAKEN:
                if (!slot_ok || h->len != 0 || !ch->stdin_flight[h->slot])
                        return -EBADMSG;
                on_stdin_taken(ch, h->slot);
                return 0;
        case INIT_PAYLOAD:
                if (h->slot != INIT_SLOT_PAYLOAD || h->len != sizeof(int32_t) || ch->payload_seen)
                        return -EBADMSG;
                memcpy(&ch->payload_status, data, sizeof(int32_t));
                ch->payload_seen = true;
                return 0;
        default:
                return -EBADMSG;
        }
}

/* Reads what the socket has now; 0 at its end. */
static int channel_read(JobInitChannel *ch) {
        for (;;) {
                InitFrame h;
                ssize_t n;
                size_t want = sizeof h;

                if (ch->in_len >= sizeof h) {
                        memcpy(&h, ch->in, sizeof h);
                        if (h.len > INIT_CHUNK_MAX || h.reserved != 0)
                                return -EBADMSG;
                        want = sizeof h + h.len;
                        if (ch->in_len == want) {
                                int r = dispatch(ch, &h, ch->in + sizeof h);

                                ch->in_len = 0;
                                if (r < 0)
                                        return r;
                                if (ch->fd < 0)
                                        return 0;
                                continue;
                        }
                }
                n = recv(ch->fd, ch->in + ch->in_len, want - ch->in_len, MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? 1 : -errno;
                if (n == 0)
                        return 0;
                ch->in_len += (size_t) n;
        }
}

static int on_channel(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        JobInitChannel *ch = userdata;
        int r;

        if (revents & EPOLLOUT)
                channel_flush(ch);
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;
        r = channel_read(ch);
        if (r <= 0)
                channel_end(ch, r == 0 ? "the init closed it" : "the init broke the protocol");
        return 0;
}

int job_init_watch(Job *j, sd_event *e) {
        JobInitChannel *ch = &j->console.init;

        if (!job_init_serves(j))
                return 0;
        return sd_event_add_io(e, &ch->src, ch->fd, EPOLLIN, on_channel, ch);
}

void job_init_ended(Job *j, JobOutcome *o) {
        JobInitChannel *ch = &j->console.init;
        int st;

        if (ch->fd >= 0 && channel_read(ch) != 1)
                channel_end(ch, "the init exited");
        if (!ch->payload_seen)
                return;
        st = ch->payload_status;
        /* the init's own status says the same (it exits 128 + N): the payload died of signal N */
        if (WIFSIGNALED(st) && o->exit_signal == 0 && o->exit_status == 128 + WTERMSIG(st)) {
                o->exit_signal = WTERMSIG(st);
                o->exit_status = -1;
        }
}

/* After the run loop judged the runtime (job_runtime_check()): an init that served a channel always reports
 * the payload's end before it exits, so one that did not, where pond stopped nothing and the runtime did not
 * fail, was killed, and where the backend lets the job kill its own init that was the job itself. The job
 * fails with that reason; no exit code is made up (the init's status is not the payload's). */
void job_init_lost(Job *j) {
        const JobInitChannel *ch = &j->console.init;
        JobOutcome *o = &j->outcome;

        if (!ch->on || ch->payload_seen || !j->input.provider->init_killable_inside || o->oom_killed ||
            o->timed_out || o->cancelled || o->failed)
                return;
        o->exit_status = -1;
        o->exit_signal = 0;
        job_end(j, JOB_END_FAILED, 0, "the job's init was killed from inside the job, before the payload ended: "
                "the job's processes ended with it (no exec runs without the init)");
        audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "the job's init was killed from inside the job");
}

void job_init_done(JobInitChannel *ch) {
        for (int i = 0; i < INIT_SLOTS; i++)
                if (ch->busy[i])
                        slot_end_recorded(ch, i);
        ch->src = sd_event_source_disable_unref(ch->src);
        safe_close(ch->fd);
        safe_close(ch->child_fd);
        free(ch->out);
        free(ch->in);
        *ch = (JobInitChannel) { .fd = -EBADF, .child_fd = -EBADF };
}
