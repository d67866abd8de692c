/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runc.c: the runc provider. create/start (not run) so that the container's init is re-parented to
 * the supervisor (a child subreaper): its exact exit status is waited for directly, and the container's
 * cgroup survives until delete, so its OOM counters can still be read. */
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "config.h"
#include "runtime/runtime.h"

/* One candidate: the build's runc (-Drunc=, absolute or looked up in PATH). */
static int runc_locate(char **ret_path, char **ret_reason) {
        int r = find_binary(POND_RUNC, ret_path);

        if (r < 0 && ret_reason)
                *ret_reason = strdup(POND_RUNC " not found or not executable");
        return r;
}

static void runc_probe(const char *binary, const char *tmpdir, uint64_t timeout_usec, RuntimeProbe *ret) {
        *ret = (RuntimeProbe) {};
        runtime_probe_oci_cli(binary, tmpdir, timeout_usec, ret);
}

static int runc_check(char **ret_reason) {
        _cleanup_free_ char *path = NULL;
        int r = runc_locate(&path, NULL);

        if (r < 0 && ret_reason)
                *ret_reason = strdup("runc is not installed (" POND_RUNC " not found in PATH)");
        return r;
}

static int push2(char ***l, const char *a, const char *b) {
        int r = strv_push(l, strdup(a));

        return r < 0 ? r : strv_push(l, strdup(b));
}

static int runc_create_argv(const RuntimeJob *j, char ***ret) {
        int r = strv_build(ret, POND_RUNC, "--root", j->state_root, "--log", j->log_file, "create", "--bundle",
                           j->bundle, "--pid-file", j->pid_file, NULL);

        if (r >= 0 && j->console_socket)
                r = push2(ret, "--console-socket", j->console_socket);
        /* fd 3: the init's channel (pond-init --channel 3) */
        if (r >= 0 && j->init_channel)
                r = push2(ret, "--preserve-fds", "1");
        if (r >= 0)
                r = strv_push(ret, strdup(j->container_id));
        return r;
}

/* runc applies the container's seccomp filter, cgroups and namespaces to an exec; the process file says
 * the rest (user, capabilities, no_new_privs, cwd, env). */
static int runc_exec_argv(const RuntimeJob *j, const char *process_file, char ***ret) {
        return strv_build(ret, POND_RUNC, "--root", j->state_root, "--log", j->log_file, "exec", "--process",
                          process_file, j->container_id, NULL);
}

static int runc_start_argv(const RuntimeJob *j, char ***ret) {
        return strv_build(ret, POND_RUNC, "--root", j->state_root, "start", j->container_id, NULL);
}

static int runc_delete_argv(const RuntimeJob *j, char ***ret) {
        return strv_build(ret, POND_RUNC, "--root", j->state_root, "delete", "--force", j->container_id, NULL);
}

const RuntimeProvider runtime_runc = {
        .name = "runc",
        .host_uid_range = true,
        .locate = runc_locate,
        .probe = runc_probe,
        .check = runc_check,
        .create_argv = runc_create_argv,
        .start_argv = runc_start_argv,
        .delete_argv = runc_delete_argv,
        .exec_argv = runc_exec_argv,
        .exec_keeps_seccomp = true,
        .init_channel = RUNTIME_INIT_CHANNEL_FD,
        .payload_cgroup_may_exist = true,
        .has_state = runtime_state_dir_exists,
        .console_socket = true,
        .proc_view = VIEW_SOURCE_LXCFS,
};
