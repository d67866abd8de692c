/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-home.c: the confined job's private $HOME. At acceptance: home_files only where there is a home
 * (the spec parser has checked their bounds and that each placeholder names one of the job's
 * credentials). Before the container is created: a tmpfs of home_size under the run directory, owned
 * by the job user (0700), with the spec's files rendered (the broker's base URL and dummy key of a
 * credential, the job id) and written without following anything; the bundle binds it at HOME_DIR. In
 * the teardown it is unmounted, and its files are gone with it. Profile none keeps HOME=/tmp. */
#include <fcntl.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/json-util.h"
#include "basic/log.h"
#include "job.h"
#include "oci/oci.h"
#include "policy/home.h"

int job_home_accept(Job *j, char **ret_error) {
        if (j->input.spec->n_home_files > 0 && !j->input.resolved->confined)
                return error_set(ret_error, -EINVAL, "home_files: need a confined profile (profile none has no "
                                 "private home: its HOME is /tmp)");
        return 0;
}

typedef struct HomeValues {
        const Job *job;
        char *url;      /* the last BROKER_URL rendered, kept until the next */
} HomeValues;

static int lookup(HomePlaceholder p, const char *arg, const char *field, void *userdata, const char **ret_value,
                  char **ret_error) {
        HomeValues *v = userdata;
        json_object *broker = v->job->sidecars[POND_SIDECAR_BROKER].config;
        const char *key = NULL;
        int r;

        if (p == HOME_PLACEHOLDER_JOB_ID) {
                *ret_value = v->job->paths.id;
                return 0;
        }
        free(v->url);
        v->url = NULL;
        r = broker ? job_broker_values(broker, arg, &v->url, &key) : -ENOENT;
        if (r < 0)
                return error_set(ret_error, r, "%s: no broker value for {{%s:%s}}", field,
                                 home_placeholder_to_string(p), arg);
        *ret_value = p == HOME_PLACEHOLDER_BROKER_URL ? v->url : key;
        return 0;
}

static int write_files(Job *j, int home_fd) {
        const JobSpec *spec = j->input.spec;
        HomeValues values = { .job = j };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < spec->n_home_files; i++) {
                _cleanup_free_ char *err = NULL, *text = NULL;
                char field[JSON_FIELD_MAX];
                size_t len;

                snprintf(field, sizeof field, "home_files[%zu].content", i);
                r = home_render(field, spec->home_files[i].content, HOME_FILE_BYTES_MAX, lookup, &values, &text,
                                &len, &err);
                if (r < 0) {
                        log_error_errno(r, "Cannot render the job's home file %s: %s", spec->home_files[i].path,
                                        err ?: "?");
                        break;
                }
                r = home_write_file(home_fd, spec->home_files[i].path, text, len, spec->home_files[i].mode,
                                    job_host_uid(j), job_host_gid(j));
                if (r < 0)
                        log_error_errno(r, "Cannot write %s in the job's home: %m", spec->home_files[i].path);
                explicit_bzero(text, len); /* a dummy key is worthless outside the job, but not ours to keep */
        }
        free(values.url);
        return r;
}

int job_home(Job *j) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!j->input.resolved->confined)
                return 0;
        r = home_mount(j->paths.run, j->input.resolved->home_bytes, job_host_uid(j), job_host_gid(j), &j->home.path);
        if (r < 0)
                return job_fail(j, log_error_errno(r, "Cannot mount the job's home: %m"),
                                "cannot mount the job's home");
        fd = open(j->home.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return job_fail(j, log_error_errno(errno, "Cannot open %s: %m", j->home.path),
                                "cannot open the job's home");
        r = write_files(j, fd);
        if (r < 0)
                return job_fail(j, r, "cannot write the job's home files");
        return 0;
}

int job_home_teardown(Job *j) {
        return home_unmount(j->paths.run);
}

void job_home_done(JobHome *h) {
        free(h->path);
        *h = (JobHome) {};
}
