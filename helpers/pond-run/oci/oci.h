/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* oci.h: the OCI runtime config (config.json) for a job, built with json-c from the resolved policy. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "policy/policy.h"
#include "policy/spec.h"

#define JOB_UID 1000
#define JOB_GID 1000

typedef struct OciPaths {
        const char *rootfs;        /* root.path: the bundle's rootfs directory */
        const char *host_usr;      /* bound read-only at /usr (image "host"), or NULL */
        const char *etc;           /* generated /etc bound read-only, or NULL (the image brings its own) */
        const char *workspace;     /* staged workspace bound at /workspace, or NULL */
        bool workspace_readonly;
        const char *home;          /* the job's home tmpfs, bound at HOME_DIR (confined profiles: required) */
        const char *netns;         /* network namespace to join by path, or NULL: a new empty one */
        const char *cgroups_path;  /* cgroupsPath: below the job's scope (absolute: see docs/architecture.md) */
        const char *hostname;
        char *const *posture_env;  /* set after the spec's env (proxy, CA bundle), or NULL */
        char *const *image_env;    /* an imported image's config Env (before the spec's), or NULL */
        const char *image_workdir; /* its WorkingDir: the cwd when there is no workspace, or NULL */
        const char *userns;        /* the job's user namespace to join by path (runc), or NULL: none */
        uid_t userns_base;         /* its ids 0..userns_size-1 are userns_base.. on the host */
        uint32_t userns_size;
        const char *init;          /* pond-init on the host, bound read-only at LANDLOCK_INIT_PATH, or NULL;
                                    * its command line comes after the config is complete: oci_config_set_init() */
} OciPaths;

/* The job's rlimits (nofile, nproc, core), as config.json has them without a user namespace. With one, the
 * runtime's create step gets them instead (setrlimit() before exec, inherited by the container's init):
 * runc sets a config's rlimits by prlimit() on the init once that has joined the job's namespace, which a
 * supervisor without CAP_SYS_RESOURCE may not do to a namespace it does not own. */
#define OCI_JOB_RLIMITS 3
void oci_job_rlimits(const ResolvedPolicy *r, int resources[OCI_JOB_RLIMITS], struct rlimit limits[OCI_JOB_RLIMITS]);

/* Builds config.json. seccomp is policy's linux.seccomp object (copied in for confined profiles). */
int oci_config_build(const ResolvedPolicy *r, const JobSpec *spec, json_object *seccomp, const OciPaths *paths,
                     json_object **ret);

/* The destinations of config's read-write tmpfs and bind mounts, in their order: where the job may write
 * (its Landlock rules are these, so that they cannot drift from its mounts). Not /dev, the runtime's
 * device directory (root's, mode 755; a rule beneath it would cover /dev/mqueue and every device), nor the
 * kernel's file systems (proc, mqueue, devpts: their writable parts are granted one by one or not at all). */
int oci_config_writable(json_object *config, char ***ret);

/* Puts pond-init's argv (its path first, "--" last) in front of the config's process.args: only to a config
 * built with paths->init, and once. */
int oci_config_set_init(json_object *config, char *const *init_argv);

/* The job's environment, built from scratch: a fixed base plus the spec's env. NULL-terminated. */
int oci_job_environment(const ResolvedPolicy *r, const JobSpec *spec, char *const *posture_env, char ***ret);
/* The same with an image's Env after the base (HOME, USER, TMPDIR and POND_JOB_ID from it are dropped). */
int oci_job_environment_image(const ResolvedPolicy *r, const JobSpec *spec, char *const *image_env,
                              char *const *posture_env, char ***ret);
