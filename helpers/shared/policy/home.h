/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* home.h: a confined job's private $HOME (docs/job-spec.md, "home_files"): the spec's small text files,
 * their placeholders and bounds, and the size-capped tmpfs they are written into before the container
 * exists. */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HOME_DIR "/home/job"                    /* where the job sees it, and its HOME */
#define HOME_FILES_MAX 32                       /* entries of home_files */
#define HOME_FILE_BYTES_MAX (64U * 1024)        /* one file's content, as rendered (see HOME_VALUE_MAX) */
#define HOME_FILES_BYTES_MAX (256U * 1024)      /* all files' contents, as rendered */
#define HOME_PATH_MAX 255                       /* bytes of a path below $HOME */
#define HOME_PATH_DEPTH_MAX 8                   /* its components */
#define HOME_VALUE_MAX 128                      /* a placeholder's value at most; the bounds count each
                                                 * placeholder at this length, so they hold at acceptance */

typedef struct HomeFile {
        char *path;     /* relative to $HOME: [A-Za-z0-9._+@,=-] components, no '.', '..' or empty one */
        char *content;  /* as the spec has it, placeholders unrendered */
        mode_t mode;    /* 0600 (the default), 0400, 0700 or 0500 */
} HomeFile;

void home_file_done(HomeFile *f);

typedef enum HomePlaceholder {
        HOME_PLACEHOLDER_JOB_ID,        /* {{JOB_ID}} */
        HOME_PLACEHOLDER_BROKER_URL,    /* {{BROKER_URL:NAME}}: the broker's base URL for credential NAME */
        HOME_PLACEHOLDER_DUMMY_KEY,     /* {{DUMMY_KEY:NAME}}: the job's dummy key for credential NAME */
        _HOME_PLACEHOLDER_MAX,
        _HOME_PLACEHOLDER_INVALID = -EINVAL,
} HomePlaceholder;

const char *home_placeholder_to_string(HomePlaceholder p);

/* NULL if path may name a file below $HOME, else why not (completing "FIELD: ..."). */
const char *home_path_check(const char *path);
/* "0600", "0400", "0700" or "0500": the mode, or -EINVAL. */
int home_mode_from_string(const char *s, mode_t *ret);

/* A placeholder's value. arg is the credential name (NULL for JOB_ID); field names the content in a
 * refusal ("FIELD: ..."). Returns 0 and *ret_value (at most HOME_VALUE_MAX bytes, kept by the callee), or
 * a negative errno with *ret_error set. */
typedef int (*HomeLookup)(HomePlaceholder p, const char *arg, const char *field, void *userdata,
                          const char **ret_value, char **ret_error);

/* Renders content: every "{{" opens a placeholder, which must be one of the three above, and is replaced
 * by lookup's value. Refused (-EINVAL, naming field): an unknown or unterminated placeholder, an
 * argument where none belongs or none where one does, whatever lookup refuses; -E2BIG: a value longer
 * than HOME_VALUE_MAX, or the result longer than max. With ret NULL only *ret_len is computed. */
int home_render(const char *field, const char *content, size_t max, HomeLookup lookup, void *userdata,
                char **ret, size_t *ret_len, char **ret_error);

/* Writes one file of len bytes below the directory home_fd: intermediate directories are created (0700)
 * or entered one component at a time, never following a symlink; the file must not exist yet. Everything
 * created is owned by uid:gid. path must have passed home_path_check(). */
int home_write_file(int home_fd, const char *path, const char *data, size_t len, mode_t mode, uid_t uid,
                    gid_t gid);

/* Mounts the job's home, a tmpfs of bytes (and as many inodes as 4 KiB blocks, at least 1024) owned by
 * uid:gid with mode 0700, nosuid, nodev, at JOB_DIR/home, and returns its path. */
int home_mount(const char *job_dir, uint64_t bytes, uid_t uid, gid_t gid, char **ret_path);
/* Unmounts JOB_DIR/home (its files go with it). Idempotent. */
int home_unmount(const char *job_dir);
