/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* collect.c: artifact collection from a hostile workspace once the job is dead. Three phases: enumerate (the
 * overlay change set, then the declared outputs; nothing is read yet), sort + merge duplicates, copy the
 * regular files into artifacts/ in sorted order while hashing, under the byte cap. Every open is an
 * openat2() beneath a dirfd that follows nothing; special files are never opened, so never block. */
#include <fcntl.h>
#include <json-c/printbuf.h>
#include <limits.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>


#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "result/collect.h"

static const char * const kind_table[_ARTIFACT_KIND_MAX] = {
        [ARTIFACT_FILE] = "file",       [ARTIFACT_LINK] = "link",       [ARTIFACT_DIR] = "dir",
        [ARTIFACT_DELETED] = "deleted", [ARTIFACT_MISSING] = "missing", [ARTIFACT_SPECIAL] = "special",
};

static const char * const change_table[_CHANGE_MAX] = {
        [CHANGE_ADDED] = "added",
        [CHANGE_MODIFIED] = "modified",
        [CHANGE_DELETED] = "deleted",
        [CHANGE_OUTPUT] = "output",
};

const char *artifact_kind_to_string(ArtifactKind k) {
        return k >= 0 && k < _ARTIFACT_KIND_MAX ? kind_table[k] : NULL;
}

const char *artifact_change_to_string(ArtifactChange c) {
        return c >= 0 && c < _CHANGE_MAX ? change_table[c] : NULL;
}

Manifest *manifest_free(Manifest *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_artifacts; i++) {
                free(m->artifacts[i].path);
                free(m->artifacts[i].target);
        }
        free(m->artifacts);
        free(m);
        return NULL;
}

typedef struct Collect {
        Manifest *m;
        const CollectLimits *limits;
        uint64_t seen;
        uint64_t name_bytes; /* paths and link targets as the result's JSON holds them (escaped) */
} Collect;

/* Bytes s takes in JSON, escapes counted as json-c writes them (at most 6 per byte). */
static uint64_t json_escaped_len(const char *s) {
        uint64_t n = 0;

        for (const unsigned char *p = (const unsigned char *) (s ?: ""); *p; p++)
                n += *p == '"' || *p == '\\' || *p == '\b' || *p == '\f' || *p == '\n' || *p == '\r' ||
                     *p == '\t' ? 2 : *p < 0x20 || *p == 0x7f ? 6 : 1;
        return n;
}

static void collect_skip(Collect *c, uint64_t n) {
        c->m->skipped += n;
        c->m->truncated = true;
}

/* Every entry a walk meets passes here first: false once the walk must stop altogether. */
static bool collect_see(Collect *c) {
        if (c->seen >= COLLECT_MAX_SEEN) {
                c->m->truncated = true;
                return false;
        }
        c->seen++;
        return true;
}

/* Takes ownership of path (and target). Returns 1 if recorded, 0 if skipped, -errno. */
static int collect_add(Collect *c, char *path, ArtifactKind kind, ArtifactChange change, bool from_upper,
                       char *target) {
        _cleanup_free_ char *p = path, *t = target;
        Manifest *m = c->m;

        /* Names that are not strict UTF-8 cannot be put in JSON that every verifier parses alike, so such
         * entries are skipped (and counted) rather than mangled. */
        if (m->n_artifacts >= c->limits->max_entries || !utf8_is_valid(p) || (t && !utf8_is_valid(t))) {
                collect_skip(c, 1);
                return 0;
        }
        /* The signed result.json holds every name and must stay within RESULT_JSON_MAX. */
        uint64_t name_bytes = json_escaped_len(p) + json_escaped_len(t);
        if (c->name_bytes + name_bytes > COLLECT_MAX_NAME_BYTES) {
                collect_skip(c, 1);
                return 0;
        }
        c->name_bytes += name_bytes;
        if (m->n_artifacts == m->n_allocated) {
                size_t a = m->n_allocated ? m->n_allocated * 2 : 32;
                Artifact *n = reallocarray(m->artifacts, a, sizeof *n);
                if (!n)
                        return -ENOMEM;
                m->artifacts = n;
                m->n_allocated = a;
        }
        m->artifacts[m->n_artifacts++] = (Artifact) {
                .path = TAKE_PTR(p),
                .kind = kind,
                .change = change,
                .output = change == CHANGE_OUTPUT,
                .from_upper = from_upper,
                .size = t ? strlen(t) : 0,
                .target = TAKE_PTR(t),
        };
        return 1;
}

/* Records one non-directory entry of dirfd found by fstatat(): file, link (target read, never followed)
 * or special (never opened). */
static int collect_leaf(Collect *c, int dirfd, const char *name, const struct stat *st, char *path,
                        ArtifactChange change, bool from_upper) {
        _cleanup_free_ char *p = path, *target = NULL;
        int r;

        if (S_ISREG(st->st_mode))
                return collect_add(c, TAKE_PTR(p), ARTIFACT_FILE, change, from_upper, NULL);
        if (!S_ISLNK(st->st_mode))
                return collect_add(c, TAKE_PTR(p), ARTIFACT_SPECIAL, change, from_upper, NULL);
        r = readlinkat_malloc(dirfd, name, &target);
        if (r < 0)
                return r;
        return collect_add(c, TAKE_PTR(p), ARTIFACT_LINK, change, from_upper, TAKE_PTR(target));
}

static int dir_open(int dirfd, const char *name, DIR **ret) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret = fdopendir(fd);
        if (!*ret) {
                safe_close(fd);
                return -ENOMEM;
        }
        return 0;
}

/* readdir() without "." and "..": NULL at the end (*r = 0) or on error (*r < 0). */
static struct dirent *dir_next(DIR *d, int *r) {
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        *r = errno > 0 ? -errno : 0;
                        return NULL;
                }
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        return de;
        }
}

static bool dir_is_opaque(int fd) {
        char v[2];

        /* Only trusted.*: the job cannot set it (no CAP_SYS_ADMIN), so it really is overlayfs' own marker. */
        ssize_t n = fgetxattr(fd, "trusted.overlay.opaque", v, sizeof v);
        return n == 1 && v[0] == 'y';
}

/* fstatat() that reports absence as 0 rather than an error. */
static int stat_optional(int dirfd, const char *name, struct stat *st) {
        if (dirfd < 0)
                return 0;
        if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) >= 0)
                return 1;
        return errno == ENOENT || errno == ENOTDIR ? 0 : negative_errno();
}

/* An opaque upper dir hides its lower: every lower name with no upper entry at all is deleted. A deleted
 * directory is one entry: its subtree goes with it. */
static int collect_opaque_deleted(Collect *c, int upper, int lower, const char *prefix) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        struct stat st;
        int r;

        r = dir_open(lower, ".", &d);
        if (r < 0)
                return r;
        while ((de = dir_next(d, &r)) && collect_see(c)) {
                r = stat_optional(upper, de->d_name, &st);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                char *p = path_join(prefix, de->d_name);
                if (!p)
                        return -ENOMEM;
                r = collect_add(c, p, ARTIFACT_DELETED, CHANGE_DELETED, true, NULL);
                if (r < 0)
                        return r;
        }
        return r;
}

static int collect_upper_dir(Collect *c, int upper, int lower, bool opaque, const char *prefix, unsigned depth,
                             size_t *ret_n);

static int collect_upper_subdir(Collect *c, int upper, int lower, bool lower_is_dir, bool in_lower, bool opaque,
                                const char *name, char *path, unsigned depth) {
        _cleanup_close_ int subu = -EBADF, subl = -EBADF;
        _cleanup_free_ char *p = path;
        size_t n = 0;
        int r;

        if (depth >= COLLECT_MAX_DEPTH) {
                collect_skip(c, 1);
                return 0;
        }
        subu = openat_beneath(upper, name, O_RDONLY | O_DIRECTORY, 0);
        if (subu < 0)
                return subu;
        if (lower_is_dir) {
                subl = openat_beneath(lower, name, O_RDONLY | O_DIRECTORY, 0);
                if (subl < 0)
                        return subl;
        }
        r = collect_upper_dir(c, subu, subl, opaque || dir_is_opaque(subu), p, depth + 1, &n);
        if (r < 0)
                return r;
        /* A directory copied up only because something below changed is no artifact; a new empty one is. */
        if (n == 0 && !lower_is_dir)
                return collect_add(c, TAKE_PTR(p), ARTIFACT_DIR, in_lower ? CHANGE_MODIFIED : CHANGE_ADDED,
                                   true, NULL);
        return 0;
}

static int digest_of(int dirfd, const char *name, uint64_t size, uint8_t ret[SHA256_SIZE]) {
        _cleanup_close_ int fd = openat_beneath(dirfd, name, O_RDONLY, 0);
        uint64_t n;
        int r;

        if (fd < 0)
                return fd;
        r = hash_fd(fd, -EBADF, size, ret, &n);
        return r < 0 ? r : n == size ? 0 : -ESTALE;
}

/* overlayfs copies a file up on any metadata change (git "freshens" objects with utime, chmod back and
 * forth...): a copy-up with the lower's type, mode, size and bytes (or link target) is not a change. */
static int same_as_lower(int upper, int lower, const char *name, const struct stat *st, const struct stat *lst) {
        uint8_t a[SHA256_SIZE], b[SHA256_SIZE];
        _cleanup_free_ char *ta = NULL, *tb = NULL;

        if ((st->st_mode & (S_IFMT | 07777)) != (lst->st_mode & (S_IFMT | 07777)) || st->st_size != lst->st_size)
                return 0;
        if (S_ISLNK(st->st_mode))
                return readlinkat_malloc(upper, name, &ta) >= 0 && readlinkat_malloc(lower, name, &tb) >= 0 &&
                       streq(ta, tb);
        if (!S_ISREG(st->st_mode))
                return 0;
        if (digest_of(upper, name, (uint64_t) st->st_size, a) < 0 ||
            digest_of(lower, name, (uint64_t) lst->st_size, b) < 0)
                return 0; /* cannot tell: report it as modified */
        return memcmp(a, b, sizeof a) == 0;
}

static int collect_upper_entry(Collect *c, int upper, int lower, bool opaque, const char *prefix,
                               const char *name, unsigned depth) {
        struct stat st, lst;
        int r, in_lower;

        if (fstatat(upper, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        in_lower = stat_optional(lower, name, &lst);
        if (in_lower < 0)
                return in_lower;
        char *p = path_join(prefix, name);
        if (!p)
                return -ENOMEM;

        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
                /* A whiteout: a deletion of what the lower had there; over nothing it says nothing. */
                if (!in_lower) {
                        free(p);
                        return 0;
                }
                return collect_add(c, p, ARTIFACT_DELETED, CHANGE_DELETED, true, NULL);
        }
        if (S_ISDIR(st.st_mode))
                return collect_upper_subdir(c, upper, lower, in_lower && S_ISDIR(lst.st_mode), in_lower, opaque,
                                            name, p, depth);
        if (in_lower && same_as_lower(upper, lower, name, &st, &lst) > 0) {
                free(p);
                return 0;
        }
        r = collect_leaf(c, upper, name, &st, p, in_lower ? CHANGE_MODIFIED : CHANGE_ADDED, true);
        return r < 0 ? r : 0;
}

static int collect_upper_dir(Collect *c, int upper, int lower, bool opaque, const char *prefix, unsigned depth,
                             size_t *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t n = 0;
        int r;

        r = dir_open(upper, ".", &d);
        if (r < 0)
                return r;
        while ((de = dir_next(d, &r)) && collect_see(c)) {
                n++;
                r = collect_upper_entry(c, upper, lower, opaque, prefix, de->d_name, depth);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (opaque && lower >= 0) {
                r = collect_opaque_deleted(c, upper, lower, prefix);
                if (r < 0)
                        return r;
        }
        *ret_n = n;
        return 0;
}

static int collect_output_dir(Collect *c, int dirfd, const char *prefix, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        struct stat st;
        int r;

        r = dir_open(dirfd, ".", &d);
        if (r < 0)
                return r;
        while ((de = dir_next(d, &r)) && collect_see(c)) {
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                char *p = path_join(prefix, de->d_name);
                if (!p)
                        return -ENOMEM;
                if (!S_ISDIR(st.st_mode)) {
                        r = collect_leaf(c, dirfd, de->d_name, &st, p, CHANGE_OUTPUT, false);
                        if (r < 0)
                                return r;
                        continue;
                }
                _cleanup_free_ char *sub = p;
                if (depth >= COLLECT_MAX_DEPTH) {
                        collect_skip(c, 1);
                        continue;
                }
                _cleanup_close_ int subfd = openat_beneath(dirfd, de->d_name, O_RDONLY | O_DIRECTORY, 0);
                if (subfd < 0)
                        return subfd;
                r = collect_output_dir(c, subfd, sub, depth + 1);
                if (r < 0)
                        return r;
        }
        return r;
}

/* The caller validated outputs already; refuse anything not plainly relative anyway, and return the depth. */
static int output_path_check(const char *path) {
        int depth = 1;

        if (!path || !*path || *path == '/')
                return -EINVAL;
        for (const char *s = path;; depth++) {
                size_t l = strcspn(s, "/");
                if (l == 0 || (l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.'))
                        return -EINVAL;
                if (!s[l])
                        return depth;
                s += l + 1;
        }
}

static bool errno_is_missing(int r) {
        return r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EXDEV;
}

static int collect_output(Collect *c, int merged, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *target = NULL;
        struct stat st;
        int depth, r;

        depth = output_path_check(path);
        if (depth < 0)
                return depth;
        if (!collect_see(c))
                return 0;
        char *p = strdup(path);
        if (!p)
                return -ENOMEM;

        /* O_PATH|O_NOFOLLOW: a trailing symlink is returned as itself; a symlink (or mount, or "..") inside the
         * path does not resolve beneath the workspace without following something, so the output is missing. */
        fd = openat_beneath(merged, path, O_PATH, 0);
        if (errno_is_missing(fd))
                return collect_add(c, p, ARTIFACT_MISSING, CHANGE_OUTPUT, false, NULL);
        if (fd < 0 || fstat(fd, &st) < 0) {
                r = fd < 0 ? fd : negative_errno();
                free(p);
                return r;
        }
        if (S_ISREG(st.st_mode))
                return collect_add(c, p, ARTIFACT_FILE, CHANGE_OUTPUT, false, NULL);
        if (S_ISLNK(st.st_mode)) {
                r = readlinkat_malloc(fd, "", &target);
                if (r < 0) {
                        free(p);
                        return r;
                }
                return collect_add(c, p, ARTIFACT_LINK, CHANGE_OUTPUT, false, TAKE_PTR(target));
        }
        if (!S_ISDIR(st.st_mode))
                return collect_add(c, p, ARTIFACT_SPECIAL, CHANGE_OUTPUT, false, NULL);

        _cleanup_free_ char *dir = p;
        _cleanup_close_ int dfd = openat_beneath(merged, path, O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0)
                return dfd;
        return collect_output_dir(c, dfd, dir, (unsigned) depth);
}

static int artifact_cmp(const void *a, const void *b) {
        const Artifact *x = a, *y = b;
        int r = strcmp(x->path, y->path);

        if (r != 0)
                return r;
        /* Equal paths: the change (from the overlay) sorts first and wins over the declared output. */
        return (x->change == CHANGE_OUTPUT) - (y->change == CHANGE_OUTPUT);
}

static void manifest_sort_unique(Manifest *m) {
        size_t k = 0;

        if (m->n_artifacts == 0)
                return;
        qsort(m->artifacts, m->n_artifacts, sizeof *m->artifacts, artifact_cmp);
        for (size_t i = 1; i < m->n_artifacts; i++) {
                Artifact *a = &m->artifacts[i];
                if (streq(a->path, m->artifacts[k].path)) {
                        m->artifacts[k].output = m->artifacts[k].output || a->output;
                        free(a->path);
                        free(a->target);
                        continue;
                }
                m->artifacts[++k] = *a;
        }
        m->n_artifacts = k + 1;
}

/* Opens (creating as needed) the parent directory of path below dirfd; *ret_base points into path. */
static int open_parent(int dirfd, const char *path, const char **ret_base) {
        _cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        const char *s = path;

        if (fd < 0)
                return negative_errno();
        for (const char *slash; (slash = strchr(s, '/')); s = slash + 1) {
                _cleanup_free_ char *comp = strndup(s, (size_t) (slash - s));
                if (!comp)
                        return -ENOMEM;
                bool made = mkdirat(fd, comp, 0755) >= 0;
                if (!made && errno != EEXIST)
                        return negative_errno();
                int nfd = openat_beneath(fd, comp, O_RDONLY | O_DIRECTORY, 0);
                if (nfd < 0)
                        return nfd;
                if (made && fchmod(nfd, 0755) < 0) { /* whatever the umask: the result's top keeps others out */
                        int r = negative_errno();
                        safe_close(nfd);
                        return r;
                }
                safe_close(fd);
                fd = nfd;
        }
        *ret_base = s;
        return TAKE_FD(fd);
}

/* Copies one regular file while hashing. -EFBIG: it does not fit in budget (nothing left behind);
 * -ENOMEDIUM: it is not a regular file (any more), never read. */
static int copy_artifact(Artifact *a, int srcdir, int dstdir, uint64_t budget) {
        _cleanup_close_ int fd = -EBADF, parent = -EBADF, out = -EBADF;
        const char *base;
        struct stat st;
        int r;

        fd = openat_beneath(srcdir, a->path, O_RDONLY, 0);
        if (fd < 0)
                return errno_is_missing(fd) ? -ENOMEDIUM : fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -ENOMEDIUM;
        if ((uint64_t) st.st_size > budget)
                return -EFBIG;

        parent = open_parent(dstdir, a->path, &base);
        if (parent < 0)
                return parent;
        out = openat_beneath(parent, base, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (out < 0)
                return out;
        if (fchmod(out, 0644) < 0)
                return negative_errno();
        r = hash_fd(fd, out, budget, a->sha256, &a->size);
        if (r < 0) {
                (void) unlinkat(parent, base, 0);
                return r;
        }
        /* Its write-back starts now (manifest_copy_files() waits for it in batches). */
        (void) sync_file_range(out, 0, 0, SYNC_FILE_RANGE_WRITE);
        return 0;
}

/* Copied files are dirty page cache charged to the supervisor's memory cgroup until written back, and
 * cgroup v1 does not throttle a memcg's dirtying: written back in batches, they stay reclaimable. */
#define COLLECT_WRITEBACK_BYTES (32ULL << 20)
#define COLLECT_WRITEBACK_FILES 8192U

static int manifest_copy_files(Manifest *m, int upper, int merged, int artifacts_dirfd, uint64_t max_bytes) {
        uint64_t dirty_bytes = 0;
        unsigned dirty_files = 0;
        bool full = false;
        size_t k = 0;
        int r;

        for (size_t i = 0; i < m->n_artifacts; i++) {
                Artifact *a = &m->artifacts[i];

                if (a->kind == ARTIFACT_FILE) {
                        r = full ? -EFBIG
                                 : copy_artifact(a, a->from_upper ? upper : merged, artifacts_dirfd,
                                                 max_bytes - m->total_bytes);
                        if (r == -ENOMEDIUM)
                                a->kind = ARTIFACT_SPECIAL;
                        else if (r == -EFBIG) {
                                /* Past the byte cap nothing more is copied: a prefix of the sorted manifest. */
                                full = true;
                                m->skipped++;
                                m->truncated = true;
                                free(a->path);
                                free(a->target);
                                continue;
                        } else if (r < 0)
                                return r;
                        else {
                                m->total_bytes += a->size;
                                dirty_bytes += a->size;
                                if (++dirty_files >= COLLECT_WRITEBACK_FILES ||
                                    dirty_bytes >= COLLECT_WRITEBACK_BYTES) {
                                        if (syncfs(artifacts_dirfd) < 0)
                                                return negative_errno();
                                        dirty_bytes = dirty_files = 0;
                                }
                        }
                }
                m->artifacts[k++] = *a;
        }
        m->n_artifacts = k;
        return 0;
}

int collect_artifacts(int upper_fd, int lower_fd, int merged_fd, char * const *outputs, int artifacts_dirfd,
                      const CollectLimits *limits, Manifest **ret) {
        _cleanup_manifest_ Manifest *m = NULL;
        Collect c = { .limits = limits };
        size_t n;
        int r;

        if (!limits || !ret || artifacts_dirfd < 0 || (outputs && *outputs && merged_fd < 0))
                return -EINVAL;
        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        c.m = m;

        if (upper_fd >= 0) {
                r = collect_upper_dir(&c, upper_fd, lower_fd, dir_is_opaque(upper_fd), NULL, 0, &n);
                if (r < 0)
                        return r;
        }
        for (char * const *o = outputs; o && *o; o++) {
                r = collect_output(&c, merged_fd, *o);
                if (r < 0)
                        return r;
        }
        manifest_sort_unique(m);
        r = manifest_copy_files(m, upper_fd, merged_fd, artifacts_dirfd, limits->max_bytes);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

static int artifact_to_json(const Artifact *a, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        char hex[SHA256_HEX_SIZE];

        if (!o)
                return -ENOMEM;
        /* Insertion order is serialization order: it is part of the output_sha format. */
        if (json_object_object_add(o, "path", json_object_new_string(a->path)) < 0 ||
            json_object_object_add(o, "kind", json_object_new_string(artifact_kind_to_string(a->kind))) < 0 ||
            json_object_object_add(o, "change",
                                   json_object_new_string(artifact_change_to_string(a->change))) < 0 ||
            json_object_object_add(o, "output", json_object_new_boolean(a->output)) < 0 ||
            json_object_object_add(o, "size", json_object_new_int64((int64_t) a->size)) < 0)
                return -ENOMEM;
        if (a->kind == ARTIFACT_FILE) {
                hex_encode(a->sha256, SHA256_SIZE, hex);
                if (json_object_object_add(o, "sha256", json_object_new_string(hex)) < 0)
                        return -ENOMEM;
        }
        if (a->kind == ARTIFACT_LINK &&
            json_object_object_add(o, "target", json_object_new_string(a->target)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int manifest_to_json(const Manifest *m, json_object **ret) {
        _cleanup_json_ json_object *arr = json_object_new_array();
        int r;

        if (!arr)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_artifacts; i++) {
                json_object *o;
                r = artifact_to_json(&m->artifacts[i], &o);
                if (r < 0)
                        return r;
                if (json_object_array_add(arr, o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(arr);
        return 0;
}

int manifest_json_sha(json_object *array, char ret_hex[SHA256_HEX_SIZE]) {
        size_t len;

        if (!json_object_is_type(array, json_type_array))
                return -EINVAL;
        int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
        const char *s = json_object_to_json_string_length(array, flags, &len);
        if (!s)
                return -ENOMEM;
        sha256_hex(s, len, ret_hex);
        return 0;
}

/* Calls f with the canonical text of the manifest in pieces: "[", each entry serialized alone with flags,
 * "," between them, "]" -- what json-c writes for the whole array with JSON_C_TO_STRING_PLAIN, one small
 * object at a time, so that no tree of the whole manifest is ever built. */
static int manifest_stream(const Manifest *m, int flags, int (*f)(const char *p, size_t n, void *userdata),
                           void *userdata) {
        int r;

        r = f("[", 1, userdata);
        for (size_t i = 0; r >= 0 && i < m->n_artifacts; i++) {
                _cleanup_json_ json_object *o = NULL;
                const char *text;
                size_t len;

                r = artifact_to_json(&m->artifacts[i], &o);
                if (r < 0)
                        return r;
                text = json_object_to_json_string_length(o, flags, &len);
                if (!text)
                        return -ENOMEM;
                if (i > 0)
                        r = f(",", 1, userdata);
                if (r >= 0)
                        r = f(text, len, userdata);
        }
        return r < 0 ? r : f("]", 1, userdata);
}

static int sha_update(const char *p, size_t n, void *userdata) {
        return crypto_hash_sha256_update(userdata, (const uint8_t *) p, n) < 0 ? -EIO : 0;
}

int manifest_sha(const Manifest *m, char ret_hex[SHA256_HEX_SIZE]) {
        crypto_hash_sha256_state st;
        uint8_t digest[SHA256_SIZE];
        int r;

        if (crypto_hash_sha256_init(&st) < 0)
                return -EIO;
        r = manifest_stream(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, sha_update, &st);
        if (r < 0)
                return r;
        if (crypto_hash_sha256_final(&st, digest) < 0)
                return -EIO;
        hex_encode(digest, sizeof digest, ret_hex);
        return 0;
}

static int pb_append(const char *p, size_t n, void *userdata) {
        return printbuf_memappend(userdata, p, (int) n) < 0 ? -ENOMEM : 0;
}

/* json-c's serializer of a streamed manifest: the entries as they are serialized, one at a time. */
static int manifest_serialize(json_object *jso, struct printbuf *pb, int level, int flags) {
        return manifest_stream(json_object_get_userdata(jso), flags & ~JSON_C_TO_STRING_PRETTY, pb_append, pb) < 0
                       ? -1 : 0;
}

static void manifest_userdata_free(json_object *jso, void *userdata) {
        manifest_free(userdata);
}

int manifest_to_json_streamed(Manifest **m, json_object **ret) {
        _cleanup_json_ json_object *arr = json_object_new_array();

        if (!arr || !m || !*m)
                return -ENOMEM;
        json_object_set_serializer(arr, manifest_serialize, TAKE_PTR(*m), manifest_userdata_free);
        *ret = TAKE_PTR(arr);
        return 0;
}
