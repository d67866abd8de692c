/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-runtime-failed.c: telling "the payload exited with X" from "the runtime died under it". The
 * container's init is the payload's own first process under runc (no runc process outlives the start), but
 * the sandbox process under runsc, beside its gofer; both are this subreaper's children. Evidence, measured:
 * a runsc sandbox reports its payload's end as an exit status (a payload killed by signal N as 128 + N), so
 * a sandbox that ends by a signal was itself killed; a crashed sentry exits 2 like a payload's `exit 2`, but
 * has written its crash report to the panic log first (runsc.c); a gofer killed from outside dies by a signal
 * while the sandbox still runs (the sentry then kills the payload: exit 137, as if the payload had been
 * killed). Such a job fails, its reason names what failed and where the runtime's own messages went, and it
 * has no exit code. The kernel's OOM kills, the wall clock, a cancel and pond's own kills are not failures of
 * the runtime: they are checked first. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "job.h"
#include "scope/cgroup.h"

/* The job ended for a reason of its own, or pond killed it: a process of the runtime that dies now died of
 * that. */
static bool ended_by_pond(Job *j) {
        JobOutcome *o = &j->outcome;

        job_read_oom_kills(j);
        return o->oom_killed || o->timed_out || o->cancelled || o->failed;
}

/* One of the runtime's files in the run directory into the journal, 4 KiB of it: the head of a crash report
 * (the panic and the crashing goroutine), the tail of a log (its last words). The files go with the run
 * directory, the journal keeps them. */
static void log_runtime_file(const Job *j, const char *name, bool tail) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char buf[4096];
        struct stat st;
        ssize_t n;

        if (asprintf(&path, "%s/%s", j->paths.run, name) < 0)
                return;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return;
        if (tail && st.st_size > (off_t) sizeof buf - 1 && lseek(fd, st.st_size - (off_t) sizeof buf + 1, SEEK_SET) < 0)
                return;
        n = loop_read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return;
        buf[n] = 0;
        log_error("The runtime's %s (%s %zd bytes):\n%s", name, tail ? "last" : "first", n, buf);
}

void job_runtime_failed(Job *j, const char *what) {
        JobOutcome *o = &j->outcome;

        if (o->runtime_failed)
                return;
        o->failed = true;
        o->runtime_failed = true;
        job_fail(j, 0, "runtime failed (%s): %s, not the payload's exit; its log and crash report are in the "
                 "journal of %s", j->input.provider ? j->input.provider->name : "?", what, j->paths.service);
        audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "runtime failed: %s: killing %s", what,
                    j->paths.scope);
        log_runtime_file(j, JOB_RUNTIME_PANIC_LOG, false);
        log_runtime_file(j, JOB_RUNTIME_LOG, true);
        job_kill_payload(j);
}

static bool killed(const siginfo_t *si) {
        return si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED;
}

static void helper_killed(Job *j, size_t i, const siginfo_t *si) {
        char what[128];
        const char *sig = sigabbrev_np(si->si_status);

        snprintf(what, sizeof what, "the runtime's process %s (pid %d) was killed by SIG%s",
                 j->runtime.helper_names[i], (int) j->runtime.helpers[i], sig ?: "?");
        job_runtime_failed(j, what);
}

static int on_helper_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Job *j = userdata;

        /* After the init's end the check at that end (job_runtime_check()) has judged; what dies later dies of
         * pond's kill of the scope. */
        if (j->outcome.ended_usec != 0 || !killed(si) || ended_by_pond(j))
                return 0;
        for (size_t i = 0; i < j->runtime.n_helpers; i++)
                if (j->runtime.helpers[i] == si->si_pid)
                        helper_killed(j, i, si);
        return 0;
}

/* argv[0] of a live process (runsc names its own: runsc-gofer, runsc-sandbox), for the reason. */
static void process_name(pid_t pid, char *buf, size_t size) {
        _cleanup_free_ char *path = NULL, *cmdline = NULL;
        size_t len = 0;

        snprintf(buf, size, "?");
        if (asprintf(&path, "/proc/%d/cmdline", (int) pid) < 0 || read_full_file(path, 4096, &cmdline, &len) < 0 ||
            len == 0)
                return;
        snprintf(buf, size, "%s", cmdline);
}

int job_runtime_watch(Job *j, sd_event *e) {
        _cleanup_free_ char *payload = NULL;
        JobRuntime *rt = &j->runtime;
        pid_t procs[256];
        size_t n = 0;
        int r;

        if (asprintf(&payload, "%s/payload", j->paths.scope_cgroup) < 0)
                return -ENOMEM;
        /* A payload that has ended already takes its cgroup with it (a quick job under runsc): nothing to
         * watch then, and the checks at the init's exit still run. */
        r = cgroup_read_procs(payload, procs, ELEMENTSOF(procs), &n);
        if (r < 0) {
                if (r != -ENOENT)
                        log_warning_errno(r, "Cannot list the processes of %s (its runtime's helpers are not "
                                          "watched): %m", payload);
                return 0;
        }
        for (size_t i = 0; i < n && rt->n_helpers < JOB_RUNTIME_HELPERS_MAX; i++) {
                char name[sizeof rt->helper_names[0]];
                siginfo_t si = {};
                pid_t pid = procs[i];

                /* Only this supervisor's children can be waited for: the payload's own processes are not. A
                 * child that has ended already (a zombie: no command line either) was a step of the runtime's
                 * own start, which succeeded: runsc kills such helpers itself, and under load its SIGKILL
                 * arrived after the start (a `true` job was signed "failed" for it). */
                if (pid == rt->init_pid || pid == rt->oom_pin.pid ||
                    waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == pid)
                        continue;
                process_name(pid, name, sizeof name);
                if (streq(name, "?"))
                        continue;
                r = sd_event_add_child(e, NULL, pid, WEXITED, on_helper_exit, j);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch the runtime's process %d: %m", (int) pid);
                memcpy(rt->helper_names[rt->n_helpers], name, sizeof name);
                rt->helpers[rt->n_helpers++] = pid;
        }
        if (rt->n_helpers > 0)
                log_debug("Watching %zu process(es) of the runtime beside the container's init.", rt->n_helpers);
        return 0;
}

void job_runtime_check(Job *j, const siginfo_t *init) {
        const RuntimeProvider *p = j->input.provider;
        _cleanup_free_ char *panic_log = NULL, *why = NULL;
        JobRuntime *rt = &j->runtime;
        RuntimeJob rj = {};

        if (ended_by_pond(j))
                return;
        /* A helper killed before the init ended, whose exit the loop has not dispatched yet. */
        for (size_t i = 0; i < rt->n_helpers; i++) {
                siginfo_t si = {};
                if (waitid(P_PID, (id_t) rt->helpers[i], &si, WEXITED | WNOHANG | WNOWAIT) >= 0 &&
                    si.si_pid == rt->helpers[i] && killed(&si)) {
                        helper_killed(j, i, &si);
                        return;
                }
        }
        if (!p || !p->init_failed || asprintf(&panic_log, "%s/%s", j->paths.run, JOB_RUNTIME_PANIC_LOG) < 0)
                return;
        rj.panic_log = panic_log;
        if (p->init_failed(&rj, init, &why) > 0)
                job_runtime_failed(j, why);
}
