/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-transcript.c: the job's exec transcript (result/transcript.h; docs/result-format.md, "The exec
 * transcript"): every exec into the job, through its init or the runtime's exec, recorded as it runs in the
 * spool beside the log (STATEDIR/jobs/ID/execs, made at the first exec: a job nobody exec'd into has none),
 * its output hashed as it passes the supervisor whether or not its caller is still there to take it, the
 * bytes kept within the spec's output_bytes (a budget of its own, beside the log's). job_collect() ends what
 * still runs and links the files into the staged result, whose "execs" signs them. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"

static int transcript_get(Job *j, Transcript **ret) {
        JobTranscript *jt = &j->transcript;
        _cleanup_close_ int spool = -EBADF;
        int r;

        if (!jt->t) {
                spool = open(j->paths.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (spool < 0)
                        return log_error_errno(errno, "Cannot open %s: %m", j->paths.spool);
                r = transcript_open(spool, j->input.spec->limits.output_bytes, &jt->t);
                if (r < 0)
                        return log_error_errno(r, "Cannot make the exec transcript in %s: %m", j->paths.spool);
        }
        *ret = jt->t;
        return 0;
}

int job_transcript_begin(ConsoleConn *c, const ConsoleExecRequest *req, const char *via, bool stdin_stream,
                         char **ret_why) {
        Job *j = c->job;
        Transcript *t = NULL;
        unsigned seq = 0;
        int r;

        r = transcript_get(j, &t);
        if (r >= 0)
                r = transcript_begin(t, &(TranscriptCall) { .via = via, .uid = c->uid, .argv = req->argv,
                                                            .cwd = req->cwd, .env = req->env,
                                                            .stdin_data = req->stdin_data,
                                                            .stdin_len = req->stdin_len,
                                                            .stdin_stream = stdin_stream }, &seq);
        if (r == -EILSEQ)
                *ret_why = strdup("its argv and cwd must be valid UTF-8: the signed transcript records them");
        else if (r == -ENOSPC)
                *ret_why = strdupf("the job's exec transcript is full (at most %u execs, %u MiB of index)",
                                   TRANSCRIPT_EXECS_MAX, TRANSCRIPT_INDEX_MAX >> 20);
        else if (r < 0)
                *ret_why = strdupf("it cannot be recorded in the job's transcript: %s", strerror(-r));
        if (r < 0)
                return r;
        c->number = seq;
        return 0;
}

void job_transcript_output(Job *j, unsigned seq, ConsoleMessage type, const void *buf, size_t n) {
        TranscriptStream s = type == CONSOLE_STDERR ? TRANSCRIPT_STDERR : TRANSCRIPT_STDOUT;

        if (j && j->transcript.t && seq > 0)
                (void) transcript_output(j->transcript.t, seq, s, buf, n);
}

void job_transcript_input(Job *j, unsigned seq, const void *buf, size_t n) {
        if (j && j->transcript.t && seq > 0)
                (void) transcript_output(j->transcript.t, seq, TRANSCRIPT_STDIN, buf, n);
}

bool job_transcript_running(const Job *j, unsigned seq) {
        return j && seq > 0 && transcript_running(j->transcript.t, seq);
}

/* The init's flags (INIT_EXIT_*) are what the transcript records, with its own bits. */
void job_transcript_end(Job *j, unsigned seq, int status, uint32_t init_flags, bool init_ended) {
        uint32_t flags = (init_flags & INIT_EXIT_TIMED_OUT ? TRANSCRIPT_TIMED_OUT : 0) |
                         (init_flags & INIT_EXIT_TRUNCATED ? TRANSCRIPT_TRUNCATED : 0) |
                         (init_flags & INIT_EXIT_NOT_STARTED ? TRANSCRIPT_NOT_STARTED : 0) |
                         (init_ended ? TRANSCRIPT_INIT_ENDED : 0);
        int r;

        if (!job_transcript_running(j, seq))
                return;
        r = transcript_end(j->transcript.t, seq, init_ended ? -1 : status, flags);
        if (r < 0)
                log_warning_errno(r, "Cannot write exec %u's end into the job's transcript: %m", seq);
}

void job_transcript_abort(Job *j, unsigned seq) {
        if (job_transcript_running(j, seq))
                (void) transcript_abort(j->transcript.t, seq);
}

int job_transcript_collect(Job *j, int staged_fd) {
        JobTranscript *jt = &j->transcript;
        _cleanup_close_ int dst = -EBADF;
        int r;

        if (!jt->t)
                return 0;
        /* the payload has ended: an exec still running went with the job, its status unknown */
        r = transcript_end_all(jt->t, TRANSCRIPT_INIT_ENDED);
        if (r < 0)
                return log_error_errno(r, "Cannot end the job's exec transcript: %m");
        r = transcript_stats(jt->t, &jt->stats);
        if (r < 0)
                return log_error_errno(r, "The job's exec transcript could not be written whole: %m");
        if (transcript_count(jt->t) == 0)
                return 0;
        if (mkdirat(staged_fd, TRANSCRIPT_DIR, 0755) < 0)
                return log_error_errno(errno, "Cannot make %s in the result: %m", TRANSCRIPT_DIR);
        dst = openat(staged_fd, TRANSCRIPT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dst < 0 || fchmod(dst, 0755) < 0)
                return log_error_errno(errno, "Cannot open %s in the result: %m", TRANSCRIPT_DIR);
        r = transcript_link(jt->t, dst);
        if (r < 0)
                return log_error_errno(r, "Cannot link the job's exec transcript into its result: %m");
        jt->linked = true;
        return 0;
}

json_object *job_transcript_json(const Job *j) {
        return j->transcript.linked ? json_object_get(j->transcript.stats) : NULL;
}

void job_transcript_done(JobTranscript *jt) {
        transcript_free(jt->t);
        json_object_put(jt->stats);
        *jt = (JobTranscript) {};
}
