/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* home.c: a confined job's private $HOME: the bounds of the spec's home_files, their placeholders, the
 * writing of each file without following anything, and the size-capped tmpfs they live in. The job sees
 * it at HOME_DIR; it is gone when the tmpfs is unmounted. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "policy/home.h"

#define refuse(ret_error, ...) error_set((ret_error), -EINVAL, __VA_ARGS__)

static const char *const placeholder_table[_HOME_PLACEHOLDER_MAX] = {
        [HOME_PLACEHOLDER_JOB_ID] = "JOB_ID",
        [HOME_PLACEHOLDER_BROKER_URL] = "BROKER_URL",
        [HOME_PLACEHOLDER_DUMMY_KEY] = "DUMMY_KEY",
};

#define PLACEHOLDERS_KNOWN "{{JOB_ID}}, {{BROKER_URL:NAME}}, {{DUMMY_KEY:NAME}}"
#define PLACEHOLDER_MAX 64      /* bytes between "{{" and "}}": the longest known one is far shorter */
#define ARG_MAX 32              /* a credential name: [a-z0-9-]{1,32} (broker-config.c) */

const char *home_placeholder_to_string(HomePlaceholder p) {
        return p >= 0 && p < _HOME_PLACEHOLDER_MAX ? placeholder_table[p] : NULL;
}

void home_file_done(HomeFile *f) {
        if (!f)
                return;
        free(f->path);
        free(f->content);
        *f = (HomeFile) {};
}

const char *home_path_check(const char *path) {
        static const char *const why =
                "must be a relative path of at most 255 bytes and 8 components of [A-Za-z0-9._+@,=-], "
                "without empty, '.' or '..' components";
        size_t n = strlen(path), depth = 0;

        if (n == 0 || n > HOME_PATH_MAX ||
            strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+@,=-/") != n)
                return why;
        for (const char *p = path;;) {
                size_t k = strcspn(p, "/");

                if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.') ||
                    ++depth > HOME_PATH_DEPTH_MAX)
                        return why;
                if (!p[k])
                        return NULL;
                p += k + 1;
        }
}

int home_mode_from_string(const char *s, mode_t *ret) {
        static const struct { const char *s; mode_t mode; } modes[] = {
                { "0600", 0600 }, { "0400", 0400 }, { "0700", 0700 }, { "0500", 0500 },
        };

        for (size_t i = 0; s && i < ELEMENTSOF(modes); i++)
                if (streq(s, modes[i].s)) {
                        *ret = modes[i].mode;
                        return 0;
                }
        return -EINVAL;
}

static bool arg_is_valid(const char *s, size_t n) {
        return n > 0 && n <= ARG_MAX && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") >= n;
}

/* The placeholder whose text (between "{{" and "}}") is s[0..n): its kind and its argument (copied into
 * arg, "" when it has none). */
static int placeholder_parse(const char *field, const char *s, size_t n, HomePlaceholder *ret,
                             char arg[static ARG_MAX + 1], char **ret_error) {
        _cleanup_free_ char *shown = strndup(s, n);
        const char *colon = memchr(s, ':', n);
        size_t klen = colon ? (size_t) (colon - s) : n;

        if (!shown)
                return -ENOMEM;
        for (HomePlaceholder p = 0; p < _HOME_PLACEHOLDER_MAX; p++) {
                const char *key = placeholder_table[p];
                bool wants_arg = p != HOME_PLACEHOLDER_JOB_ID;

                if (strlen(key) != klen || strncmp(s, key, klen) != 0)
                        continue;
                if (!wants_arg && colon)
                        return refuse(ret_error, "%s: placeholder '{{%s}}' takes no argument", field, shown);
                if (wants_arg && (!colon || !arg_is_valid(colon + 1, n - klen - 1)))
                        return refuse(ret_error, "%s: placeholder '{{%s}}' needs a credential name: "
                                      "{{%s:NAME}}, NAME of [a-z0-9-]{1,32}", field, shown, key);
                memcpy(arg, colon ? colon + 1 : "", colon ? n - klen - 1 : 0);
                arg[colon ? n - klen - 1 : 0] = 0;
                *ret = p;
                return 0;
        }
        return refuse(ret_error, "%s: unknown placeholder '{{%s}}' (known: " PLACEHOLDERS_KNOWN ")", field,
                      shown);
}

/* Appends n bytes to out (NULL: only counts) and keeps the total within max. */
static int emit(const char *field, size_t max, FILE *out, size_t *total, const char *s, size_t n,
                char **ret_error) {
        if (n > max - *total)
                return error_set(ret_error, -E2BIG, "%s: longer than %zu bytes once rendered (each placeholder "
                                 "counts as %d bytes)", field, max, HOME_VALUE_MAX);
        if (out && n > 0 && fwrite(s, 1, n, out) != n)
                return -ENOMEM;
        *total += n;
        return 0;
}

/* The placeholder at s (which starts with "{{"): its value emitted, *ret_consumed its length. */
static int render_one(const char *field, const char *s, size_t max, HomeLookup lookup, void *userdata,
                      FILE *out, size_t *total, size_t *ret_consumed, char **ret_error) {
        const char *end = strstr(s + 2, "}}"), *value = NULL;
        char arg[ARG_MAX + 1];
        HomePlaceholder p = _HOME_PLACEHOLDER_INVALID;
        int r;

        if (!end || end - (s + 2) > PLACEHOLDER_MAX) {
                _cleanup_free_ char *shown = json_printable(s);
                return shown ? refuse(ret_error, "%s: unterminated or unknown placeholder at '%s' (known: "
                                      PLACEHOLDERS_KNOWN ")", field, shown) : -ENOMEM;
        }
        r = placeholder_parse(field, s + 2, (size_t) (end - (s + 2)), &p, arg, ret_error);
        if (r < 0)
                return r;
        r = lookup(p, p == HOME_PLACEHOLDER_JOB_ID ? NULL : arg, field, userdata, &value, ret_error);
        if (r < 0)
                return r;
        if (!value || strlen(value) > HOME_VALUE_MAX)
                return error_set(ret_error, -E2BIG, "%s: the value of {{%s}} is longer than %d bytes", field,
                                 placeholder_table[p], HOME_VALUE_MAX);
        /* Counted at its longest, so that a content accepted at acceptance fits once rendered. */
        r = emit(field, max, NULL, total, NULL, HOME_VALUE_MAX - strlen(value), ret_error);
        if (r >= 0)
                r = emit(field, max, out, total, value, strlen(value), ret_error);
        if (r < 0)
                return r;
        *ret_consumed = (size_t) (end + 2 - s);
        return 0;
}

int home_render(const char *field, const char *content, size_t max, HomeLookup lookup, void *userdata,
                char **ret, size_t *ret_len, char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t buf_len = 0, total = 0, rendered;
        FILE *out = NULL;
        int r = 0;

        if (!field || !content || !lookup || !ret_len)
                return -EINVAL;
        if (ret) {
                out = open_memstream(&buf, &buf_len);
                if (!out)
                        return -ENOMEM;
        }
        for (const char *p = content; *p && r >= 0;) {
                const char *open = strstr(p, "{{");
                size_t n = open ? (size_t) (open - p) : strlen(p), consumed = 0;

                r = emit(field, max, out, &total, p, n, ret_error);
                if (r < 0 || !open)
                        break;
                r = render_one(field, open, max, lookup, userdata, out, &total, &consumed, ret_error);
                p = open + consumed;
        }
        if (out && fclose(out) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        rendered = out ? buf_len : total;
        if (ret)
                *ret = TAKE_PTR(buf);
        /* The length as written when rendered, the bound it was checked against when only counted. */
        *ret_len = rendered;
        return 0;
}

/* Opens (creating it, 0700, owned by uid:gid, if it is not there) the directory name below dfd, which must
 * be a directory and not a symlink. */
static int open_subdir(int dfd, const char *name, uid_t uid, gid_t gid) {
        _cleanup_close_ int fd = -EBADF;
        bool created = true;

        if (mkdirat(dfd, name, 0700) < 0) {
                if (errno != EEXIST)
                        return -errno;
                created = false;
        }
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (created && (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0))
                return -errno;
        return TAKE_FD(fd);
}

int home_write_file(int home_fd, const char *path, const char *data, size_t len, mode_t mode, uid_t uid,
                    gid_t gid) {
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        _cleanup_free_ char *copy = NULL;
        char *p, *slash;
        int r;

        if (home_fd < 0 || !path || home_path_check(path) || (!data && len > 0) || (mode & ~0700))
                return -EINVAL;
        copy = strdup(path);
        dfd = fcntl(home_fd, F_DUPFD_CLOEXEC, 3);
        if (!copy || dfd < 0)
                return copy ? -errno : -ENOMEM;
        for (p = copy; (slash = strchr(p, '/')); p = slash + 1) {
                *slash = 0;
                r = open_subdir(dfd, p, uid, gid);
                if (r < 0)
                        return log_debug_errno(r, "Cannot create or enter %s below the job's home: %m", p);
                safe_close(dfd);
                dfd = r;
        }
        fd = openat(dfd, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
        if (fd < 0)
                return log_debug_errno(errno, "Cannot create %s in the job's home: %m", path);
        if (fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0)
                return -errno;
        return write_all(fd, data, len);
}

static char *home_path(const char *job_dir) {
        char *p = NULL;
        return asprintf(&p, "%s/home", job_dir) < 0 ? NULL : p;
}

int home_mount(const char *job_dir, uint64_t bytes, uid_t uid, gid_t gid, char **ret_path) {
        _cleanup_free_ char *path = NULL;
        char opts[160];

        if (!job_dir || bytes == 0 || !ret_path)
                return -EINVAL;
        path = home_path(job_dir);
        if (!path)
                return -ENOMEM;
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        /* nr_inodes bounds inode memory as size bounds data (as stage.c's scratch tmpfs). */
        snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%llu,mode=0700,uid=%u,gid=%u",
                 (unsigned long long) bytes, (unsigned long long) (bytes / 4096 < 1024 ? 1024 : bytes / 4096),
                 (unsigned) uid, (unsigned) gid);
        if (mount("pond-home", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return log_debug_errno(errno, "Cannot mount the job's home at %s: %m", path);
        *ret_path = TAKE_PTR(path);
        return 0;
}

int home_unmount(const char *job_dir) {
        _cleanup_free_ char *path = home_path(job_dir);

        if (!path)
                return -ENOMEM;
        /* Loop: a partial earlier run may have stacked it. */
        for (int n = 0; n < 16; n++)
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        return errno == EINVAL || errno == ENOENT ? 0
                                                                  : log_debug_errno(errno, "Cannot unmount %s: %m",
                                                                                    path);
        return -EBUSY;
}
