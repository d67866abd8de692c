/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-resview.c: what the job sees of the CPUs and memory it was given (resview.c): the view decided at
 * acceptance (LXCFS checked; "required" refuses without it), the job's CPUs leased and the view written
 * into config.json with the bundle, the view watched while the job runs (LXCFS gone: its files unmounted
 * under best-effort, the job failed under required), and the lease given back in the teardown. */
#include <sched.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "basic/dirs.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "job.h"
#include "resview/cpu-lease.h"

#define VIEW_WATCH_USEC (500ULL * 1000)

static int host_cpus(cpu_set_t *ret) {
        /* the CPUs this supervisor may run on: the worker's, less what its operator took away */
        if (sched_getaffinity(0, sizeof *ret, ret) < 0)
                return -errno;
        return CPU_COUNT(ret) > 0 ? 0 : -EINVAL;
}

/* What the kernel's /proc/cpuinfo, /proc/stat and cpu/online list, whatever the job's cpuset. */
static unsigned online_cpus(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (unsigned) n : 1;
}

static uint64_t host_memory(void) {
        struct sysinfo si;
        return sysinfo(&si) < 0 ? 0 : (uint64_t) si.totalram * si.mem_unit;
}

static int lease_dir(char **ret) {
        return asprintf(ret, "%s/" CPU_LEASE_DIR, pond_dir(POND_DIR_RUN)) < 0 ? -ENOMEM : 0;
}

int job_resview_accept(Job *j, char **ret_error) {
        const ResolvedPolicy *res = j->input.resolved;
        _cleanup_free_ char *why = NULL;
        cpu_set_t host;
        int lxcfs = -ENOENT, r;

        r = host_cpus(&host);
        if (r < 0)
                return r;
        /* only a runtime on the host's kernel reads LXCFS: gVisor and a VM render their own /proc */
        if (j->input.provider->proc_view == VIEW_SOURCE_LXCFS)
                lxcfs = lxcfs_check(LXCFS_ROOT, &why);
        r = resource_view_decide(res->backend, res->resource_view, cpus_ceil(res->cpus_milli), res->memory_bytes,
                                 lxcfs, why, (unsigned) CPU_COUNT(&host), host_memory(), &j->view.view,
                                 ret_error);
        if (r < 0)
                return r;
        j->view.decided = true;
        if (j->view.view.cpus_source == VIEW_SOURCE_CGROUP)
                j->view.view.cpus_proc = online_cpus();
        if (j->view.view.degraded)
                log_warning("Job %s: %s.", j->paths.id, j->view.view.degraded);
        return 0;
}

/* LXCFS may have gone since the acceptance: the binds would then fail the runtime's create, or be skipped
 * and the job told nothing. */
static int recheck_lxcfs(Job *j) {
        ResourceView *v = &j->view.view;
        _cleanup_free_ char *why = NULL, *text = NULL;
        int r;

        if (!v->lxcfs || lxcfs_check(LXCFS_ROOT, &why) >= 0)
                return 0;
        if (v->mode == RESOURCE_VIEW_REQUIRED)
                return job_fail(j, -EHOSTDOWN, "resource_view is required and cannot be had: %s",
                                why ?: "LXCFS went away before the job started");
        text = strdupf("%s (before the job started)", why ?: "LXCFS went away");
        r = resource_view_lost(v, online_cpus(), host_memory(), text ?: "LXCFS went away");
        if (r >= 0)
                log_warning("Job %s: %s.", j->paths.id, v->degraded);
        return r;
}

int job_resview_lease(Job *j) {
        _cleanup_free_ char *dir = NULL, *list = NULL;
        cpu_set_t host, set;
        int r;

        if (!j->view.decided)
                return 0;
        r = recheck_lxcfs(j);
        if (r < 0)
                return r;
        r = host_cpus(&host);
        if (r >= 0)
                r = lease_dir(&dir);
        if (r >= 0)
                r = cpu_lease_acquire(dir, j->paths.id, &host, j->view.view.cpus_given, &set);
        if (r < 0)
                return log_error_errno(r, "Cannot lease CPUs for the job: %m");
        j->view.leased = true;
        r = cpu_list_format(&set, &list);
        if (r >= 0)
                r = resource_view_set_cpuset(&j->view.view, list);
        if (r >= 0)
                r = resource_view_prepare_cpuset(j->paths.scope_cgroup, list);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the job's cpuset %s: %m", list ?: "?");
        return 0;
}

int job_resview_apply(Job *j, json_object *config) {
        return j->view.decided ? resource_view_apply(&j->view.view, LXCFS_ROOT, config) : 0;
}

/* LXCFS went away under the running job: its bound files read ENOTCONN. */
static void view_lost(Job *j) {
        ResourceView *v = &j->view.view;
        int r;

        if (v->mode == RESOURCE_VIEW_REQUIRED) {
                job_end(j, JOB_END_FAILED, -EHOSTDOWN, "resource_view is required and LXCFS went away during "
                        "the job (its files in the container read ENOTCONN): the job was killed");
                audit_event(&j->audit, POND_EVENT_KILLED, AUDIT_NO_RC, "LXCFS went away: killing %s",
                            j->paths.scope);
                job_kill_payload(j);
                return;
        }
        r = resource_view_unmount(j->runtime.init_pid);
        if (r < 0)
                log_warning_errno(r, "Cannot unmount the dead LXCFS files in %s: %m", j->paths.container);
        (void) resource_view_lost(v, online_cpus(), host_memory(), "LXCFS went away during the job; its files "
                                  "in the container were unmounted");
        audit_event(&j->audit, POND_EVENT_DEGRADED, AUDIT_NO_RC, "resource view degraded: %s",
                    v->degraded ?: "LXCFS went away");
}

static void check_view(Job *j) {
        if (j->view.view.lxcfs && j->outcome.ended_usec == 0 && !j->outcome.failed &&
            resource_view_stale(j->runtime.init_pid) > 0)
                view_lost(j);
}

/* LXCFS's process exited: its FUSE connection is aborted by then, so the check sees it at once. */
static int on_lxcfs_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        check_view(userdata);
        return sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

/* The fast path: a pidfd of lxcfs.service's main process, so the view is repaired within the loop's next
 * turn rather than the next tick. An LXCFS run otherwise (not as the unit) has only the tick. */
static int watch_lxcfs_process(Job *j, sd_event *e) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_event_source *s = NULL;
        uint32_t pid = 0;
        int fd, r;

        r = sd_bus_get_property_trivial(j->bus, "org.freedesktop.systemd1",
                                        "/org/freedesktop/systemd1/unit/lxcfs_2eservice",
                                        "org.freedesktop.systemd1.Service", "MainPID", &error, 'u', &pid);
        if (r < 0 || pid == 0)
                return 0;
        fd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
        if (fd < 0)
                return 0;
        r = sd_event_add_io(e, &s, fd, EPOLLIN, on_lxcfs_exit, j);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        r = sd_event_source_set_io_fd_own(s, true);
        if (r >= 0)
                r = sd_event_source_set_floating(s, true);
        sd_event_source_unref(s);
        return r;
}

static int on_watch(sd_event_source *s, uint64_t usec, void *userdata) {
        Job *j = userdata;

        check_view(j);
        if (!j->view.view.lxcfs || j->outcome.ended_usec != 0 || j->outcome.failed)
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        return sd_event_source_set_time_relative(s, VIEW_WATCH_USEC);
}

int job_resview_watch(Job *j, sd_event *e) {
        sd_event_source *s = NULL;
        int r;

        if (!j->view.view.lxcfs)
                return 0;
        r = sd_event_add_time_relative(e, &s, CLOCK_MONOTONIC, VIEW_WATCH_USEC, 0, on_watch, j);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(s, SD_EVENT_ON);
        if (r >= 0)
                r = sd_event_source_set_floating(s, true);
        sd_event_source_unref(s);
        if (r >= 0 && j->bus)
                r = watch_lxcfs_process(j, e);
        return r;
}

/* Every path, the cleanup's included: the lease is named by the job id alone. */
int job_resview_release(Job *j) {
        _cleanup_free_ char *dir = NULL;
        int r = lease_dir(&dir);

        if (r >= 0)
                r = cpu_lease_release(dir, j->paths.id);
        if (r >= 0)
                j->view.leased = false;
        return r;
}

json_object *job_resview_json(const Job *j) {
        const ResolvedPolicy *res = j->input.resolved;

        if (!j->view.decided || !res)
                return NULL;
        return resource_view_to_json(&j->view.view, res->cpus_milli, res->memory_bytes, res->pids_limit);
}

const char *job_resview_words(const Job *j, char *buf, size_t size) {
        const ResourceView *v = &j->view.view;

        if (!j->view.decided)
                return "no resource view";
        snprintf(buf, size, "cpuset %s, sees cpus %u (affinity) %u (/proc), memory %llu, from %s/%s%s",
                 v->cpuset ?: "-", v->cpus_affinity, v->cpus_proc, (unsigned long long) v->memory_seen,
                 view_source_to_string(v->cpus_source), view_source_to_string(v->memory_source),
                 v->degraded ? ", degraded" : "");
        return buf;
}

void job_view_done(JobView *v) {
        resource_view_done(&v->view);
        *v = (JobView) {};
}
