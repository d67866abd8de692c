/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* store.c: owns the image store's on-disk layout and locking: opening it, names and refs, image records,
 * look-up, rm, gc and the jobs' use locks. Imports are import.c's. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/dirs.h"
#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "image/image-store.h"
#include "image/store-internal.h"

#define RECORD_MAX (1U << 20)

/* refs/ file names: the name with '/' as '%' (which no name contains). */
int store_ref_file(const char *name, char ret[IMAGE_REF_MAX + 1]) {
        if (!image_name_is_valid(name))
                return -EINVAL;
        snprintf(ret, IMAGE_REF_MAX + 1, "%s", name);
        for (char *p = ret; *p; p++)
                if (*p == '/')
                        *p = '%';
        return 0;
}

static int open_subdir(int dirfd, const char *name) {
        int fd;

        if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static bool strv_contains(char **l, const char *s) {
        for (size_t i = 0; l && l[i]; i++)
                if (streq(l[i], s))
                        return true;
        return false;
}

int store_subdir(const ImageStore *s, const char *name) {
        return open_subdir(s->dirfd, name);
}

int image_store_open(const char *path, const char *run_path, int lock_op, bool create, ImageStore *ret) {
        _cleanup_(image_store_close) ImageStore s = IMAGE_STORE_NULL;
        _cleanup_close_ int bfd = -EBADF;
        int r;

        r = create ? mkdir_p(path, 0700) : 0;
        if (r < 0)
                return r;
        s.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s.dirfd < 0)
                return -errno;
        /* no lock file: nothing was ever imported here (a directory image's parent, say) */
        s.lockfd = openat(s.dirfd, "lock", O_RDWR | (create ? O_CREAT : 0) | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (s.lockfd < 0)
                return -errno;
        while (flock(s.lockfd, lock_op) < 0)
                if (errno != EINTR)
                        return -errno;
        bfd = open_subdir(s.dirfd, "blobs");
        if (bfd < 0)
                return bfd;
        s.blobsfd = open_subdir(bfd, "sha256");
        if (s.blobsfd < 0)
                return s.blobsfd;
        s.path = strdup(path);
        s.run_path = strdup(run_path);
        if (!s.path || !s.run_path)
                return -ENOMEM;
        s.limits = LAYER_LIMITS_DEFAULT;
        *ret = s;
        s = IMAGE_STORE_NULL;
        return 0;
}

int image_store_open_default(int lock_op, bool create, ImageStore *ret) {
        _cleanup_free_ char *path = NULL, *run = NULL;

        if (asprintf(&path, "%s/images", pond_dir(POND_DIR_STATE)) < 0 ||
            asprintf(&run, "%s/images", pond_dir(POND_DIR_RUN)) < 0)
                return -ENOMEM;
        return image_store_open(path, run, lock_op, create, ret);
}

void image_store_close(ImageStore *s) {
        if (!s)
                return;
        free(s->path);
        free(s->run_path);
        safe_close(s->blobsfd);
        safe_close(s->lockfd);  /* releases the lock */
        safe_close(s->dirfd);
        *s = IMAGE_STORE_NULL;
}

void image_record_done(ImageRecord *r) {
        if (!r)
                return;
        free(r->digest);
        free(r->config);
        strv_free(r->layers);
        strv_free(r->env);
        free(r->workdir);
        free(r->arch);
        strv_free(r->names);
        *r = (ImageRecord) {};
}

void image_records_free(ImageRecord *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                image_record_done(&l[i]);
        free(l);
}

static json_object *strv_json(char **l) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && l && l[i]; i++)
                json_object_array_add(a, json_object_new_string(l[i]));
        return a;
}

int store_record_write(const ImageStore *s, const ImageRecord *rec) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_close_ int fd = -EBADF;
        char file[DIGEST_HEX_LEN + 8];
        const char *text;

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "digest", json_object_new_string(rec->digest));
        json_object_object_add(o, "config", json_object_new_string(rec->config));
        json_object_object_add(o, "layers", strv_json(rec->layers));
        if (rec->env)
                json_object_object_add(o, "env", strv_json(rec->env));
        if (rec->workdir)
                json_object_object_add(o, "workdir", json_object_new_string(rec->workdir));
        json_object_object_add(o, "architecture", json_object_new_string(rec->arch ?: ""));
        json_object_object_add(o, "size", json_object_new_int64((int64_t) rec->size));
        fd = store_subdir(s, "records");
        if (fd < 0)
                return fd;
        snprintf(file, sizeof file, "%s.json", digest_hex(rec->digest));
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        return write_file_atomic_at(fd, file, text, strlen(text), 0600);
}

static int strv_member(json_object *o, const char *key, char ***ret) {
        json_object *a = json_get(o, key);
        _cleanup_strv_free_ char **l = NULL;
        size_t n;

        if (!a)
                return 0;
        if (!json_object_is_type(a, json_type_array))
                return -EBADMSG;
        n = json_object_array_length(a);
        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *v = json_object_get_string(json_object_array_get_idx(a, i));
                if (!v || !(l[i] = strdup(v)))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Records are the store's own files (root's, 0600): read back with the same strictness all the same. */
static int record_read(const ImageStore *s, const char *digest, ImageRecord *ret) {
        _cleanup_(image_record_done) ImageRecord rec = {};
        _cleanup_json_ json_object *o = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        char file[DIGEST_HEX_LEN + 8];
        size_t len;
        int r;

        if (!digest_is_valid(digest))
                return -EINVAL;
        fd = store_subdir(s, "records");
        if (fd < 0)
                return fd;
        snprintf(file, sizeof file, "%s.json", digest_hex(digest));
        r = read_full_file_at(fd, file, RECORD_MAX, &buf, &len);
        if (r < 0)
                return r;
        r = json_parse_strict(buf, len, RECORD_MAX, JSON_STRICT_MAX_DEPTH, &o, NULL);
        if (r < 0)
                return -EBADMSG;
        if (!streq(json_get_str(o, "digest") ?: "", digest) || !digest_is_valid(json_get_str(o, "config")))
                return -EBADMSG;
        rec.digest = strdup(digest);
        rec.config = strdup(json_get_str(o, "config"));
        rec.arch = strdup(json_get_str(o, "architecture") ?: "");
        if (json_get_str(o, "workdir") && !(rec.workdir = strdup(json_get_str(o, "workdir"))))
                return -ENOMEM;
        rec.size = (uint64_t) json_object_get_int64(json_get(o, "size"));
        if (!rec.digest || !rec.config || !rec.arch || strv_member(o, "layers", &rec.layers) < 0 ||
            strv_member(o, "env", &rec.env) < 0)
                return -ENOMEM;
        rec.n_layers = strv_length(rec.layers);
        for (size_t i = 0; i < rec.n_layers; i++)
                if (!digest_is_valid(rec.layers[i]))
                        return -EBADMSG;
        *ret = rec;
        rec = (ImageRecord) {};
        return 0;
}

static int ref_read(int refsfd, const char *file, char ret[DIGEST_SIZE]) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_full_file_at(refsfd, file, 128, &buf, &len);
        if (r < 0)
                return r;
        buf[strcspn(buf, "\n")] = 0;
        if (!digest_is_valid(buf))
                return -EBADMSG;
        memcpy(ret, buf, DIGEST_SIZE);
        return 0;
}

int store_ref_write(const ImageStore *s, const char *name, const char *digest) {
        _cleanup_close_ int fd = -EBADF;
        char file[IMAGE_REF_MAX + 1], line[DIGEST_SIZE + 1];
        int r;

        r = store_ref_file(name, file);
        if (r < 0)
                return r;
        fd = store_subdir(s, "refs");
        if (fd < 0)
                return fd;
        snprintf(line, sizeof line, "%s\n", digest);
        return write_file_atomic_at(fd, file, line, strlen(line), 0600);
}

/* Every ref, as (name, digest) pairs: names[i] and digests[i]. */
static int refs_all(const ImageStore *s, char ***ret_names, char ***ret_digests) {
        _cleanup_strv_free_ char **names = NULL, **digests = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct dirent *de;
        int r;

        fd = store_subdir(s, "refs");
        if (fd < 0)
                return fd;
        r = opendir_fd(fd, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                char digest[DIGEST_SIZE];
                _cleanup_free_ char *name = NULL;

                if (de->d_name[0] == '.' || ref_read(fd, de->d_name, digest) < 0)
                        continue;
                name = strdup(de->d_name);
                if (!name)
                        return -ENOMEM;
                for (char *p = name; *p; p++)
                        if (*p == '%')
                                *p = '/';
                if (strv_push(&names, TAKE_PTR(name)) < 0 || strv_push(&digests, strdup(digest)) < 0)
                        return -ENOMEM;
        }
        *ret_names = TAKE_PTR(names);
        *ret_digests = TAKE_PTR(digests);
        return 0;
}

static int names_of(const ImageStore *s, const char *digest, char ***ret) {
        _cleanup_strv_free_ char **names = NULL, **digests = NULL, **out = NULL;
        int r;

        r = refs_all(s, &names, &digests);
        if (r < 0)
                return r;
        for (size_t i = 0; names && names[i]; i++)
                if (streq(digests[i], digest) && strv_push(&out, strdup(names[i])) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

/* name or digest -> digest */
static int resolve_ref(const ImageStore *s, const char *ref, char ret[DIGEST_SIZE]) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *name = NULL;
        char file[IMAGE_REF_MAX + 1];
        int r;

        if (digest_is_valid(ref)) {
                memcpy(ret, ref, DIGEST_SIZE);
                return 0;
        }
        r = image_name_normalise(ref, &name);
        if (r < 0)
                return r;
        r = store_ref_file(name, file);
        if (r < 0)
                return r;
        fd = store_subdir(s, "refs");
        if (fd < 0)
                return fd;
        return ref_read(fd, file, ret);
}

int image_store_lookup(ImageStore *s, const char *ref, ImageRecord *ret, char **ret_error) {
        _cleanup_(image_record_done) ImageRecord rec = {};
        char digest[DIGEST_SIZE];
        int r;

        if (!image_ref_is_valid(ref))
                return error_set(ret_error, -EINVAL, "image '%s': not a name (repo:tag) or sha256 digest", ref ?: "");
        r = resolve_ref(s, ref, digest);
        if (r >= 0)
                r = record_read(s, digest, &rec);
        if (r == -ENOENT)
                return error_set(ret_error, r, "image '%s' is not present on this worker (pondctl image list)", ref);
        if (r < 0)
                return error_set(ret_error, r, "image '%s': cannot read its record: %s", ref, strerror(-r));
        r = names_of(s, rec.digest, &rec.names);
        if (r < 0)
                return r;
        *ret = rec;
        rec = (ImageRecord) {};
        return 0;
}

static int record_digests(const ImageStore *s, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct dirent *de;
        int r;

        fd = store_subdir(s, "records");
        if (fd < 0)
                return fd;
        r = opendir_fd(fd, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                char *digest;

                if (n != DIGEST_HEX_LEN + 5 || !streq(de->d_name + DIGEST_HEX_LEN, ".json"))
                        continue;
                if (asprintf(&digest, DIGEST_PREFIX "%.*s", DIGEST_HEX_LEN, de->d_name) < 0)
                        return -ENOMEM;
                if (!digest_is_valid(digest)) {
                        free(digest);
                        continue;
                }
                r = strv_push(&l, digest);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int image_store_list(ImageStore *s, ImageRecord **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **digests = NULL;
        ImageRecord *l;
        size_t n = 0;
        int r;

        r = record_digests(s, &digests);
        if (r < 0)
                return r;
        l = calloc(strv_length(digests) + 1, sizeof *l);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; digests && digests[i]; i++) {
                if (record_read(s, digests[i], &l[n]) < 0)
                        continue;       /* a damaged record is not an image; gc keeps its layers */
                r = names_of(s, l[n].digest, &l[n].names);
                n++;
                if (r < 0) {
                        image_records_free(l, n);
                        return r;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

static int use_lock_open(const ImageStore *s, const char *digest) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = mkdir_p(s->run_path, 0700);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/%s.lock", s->run_path, digest_hex(digest)) < 0)
                return -ENOMEM;
        r = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        return r < 0 ? -errno : r;
}

static int use_lock_unlink(const ImageStore *s, const char *digest) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s.lock", s->run_path, digest_hex(digest)) < 0)
                return -ENOMEM;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int image_store_use(const ImageStore *s, const char *digest) {
        _cleanup_close_ int fd = -EBADF;

        fd = use_lock_open(s, digest);
        if (fd < 0)
                return fd;
        while (flock(fd, LOCK_SH) < 0)
                if (errno != EINTR)
                        return -errno;
        return TAKE_FD(fd);
}

static int remove_image(ImageStore *s, const char *digest, char **ret_error) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_close_ int lock = -EBADF, refs = -EBADF, recs = -EBADF;
        char file[IMAGE_REF_MAX + 1];
        int r;

        lock = use_lock_open(s, digest);
        if (lock < 0)
                return lock;
        if (flock(lock, LOCK_EX | LOCK_NB) < 0)
                return error_set(ret_error, -EBUSY, "image %s is in use by a running job", digest);
        r = names_of(s, digest, &names);
        if (r < 0)
                return r;
        refs = store_subdir(s, "refs");
        recs = store_subdir(s, "records");
        if (refs < 0 || recs < 0)
                return refs < 0 ? refs : recs;
        for (size_t i = 0; names && names[i]; i++)
                if (store_ref_file(names[i], file) >= 0 && unlinkat(refs, file, 0) < 0 && errno != ENOENT)
                        return -errno;
        snprintf(file, sizeof file, "%s.json", digest_hex(digest));
        if (unlinkat(recs, file, 0) < 0)
                return errno == ENOENT ? error_set(ret_error, -ENOENT, "image %s is not present", digest) : -errno;
        (void) fsync(recs);
        /* no job can open it now: they look up under the store's lock, which rm holds exclusively */
        return use_lock_unlink(s, digest);
}

int image_store_remove(ImageStore *s, const char *ref, char **ret_error) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int refs = -EBADF;
        char digest[DIGEST_SIZE], file[IMAGE_REF_MAX + 1];
        int r;

        if (!image_ref_is_valid(ref))
                return error_set(ret_error, -EINVAL, "'%s': not a name (repo:tag) or sha256 digest", ref ?: "");
        r = resolve_ref(s, ref, digest);
        if (r < 0)
                return error_set(ret_error, r, "image '%s' is not present", ref);
        if (digest_is_valid(ref))
                return remove_image(s, digest, ret_error);
        r = names_of(s, digest, &names);
        if (r < 0)
                return r;
        if (strv_length(names) <= 1)
                return remove_image(s, digest, ret_error);
        /* other names stay: only this one goes */
        if (image_name_normalise(ref, &name) < 0 || store_ref_file(name, file) < 0)
                return -EINVAL;
        refs = store_subdir(s, "refs");
        if (refs < 0)
                return refs;
        return RET_NERRNO(unlinkat(refs, file, 0));
}

static int tmp_sweep(const ImageStore *s, uint64_t *count);

/* Removes each entry of dir (a directory fd) whose name is a 64-hex digest not in keep. */
static int sweep(int dirfd, char **keep, uint64_t *count) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        r = opendir_fd(dirfd, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                char digest[DIGEST_SIZE];

                if (strlen(de->d_name) != DIGEST_HEX_LEN)
                        continue;
                snprintf(digest, sizeof digest, DIGEST_PREFIX "%s", de->d_name);
                if (!digest_is_valid(digest) || strv_contains(keep, digest))
                        continue;
                r = rm_rf_at(dirfd, de->d_name);
                if (r < 0)
                        return r;
                (*count)++;
        }
        return 0;
}

int image_store_gc(ImageStore *s, ImageGcStats *ret) {
        _cleanup_strv_free_ char **digests = NULL, **keep = NULL, **keep_layers = NULL;
        _cleanup_close_ int layers = -EBADF;
        ImageGcStats st = {};
        int r;

        r = tmp_sweep(s, &st.tmp);
        if (r < 0)
                return r;
        r = record_digests(s, &digests);
        if (r < 0)
                return r;
        for (size_t i = 0; digests && digests[i]; i++) {
                _cleanup_(image_record_done) ImageRecord rec = {};

                r = record_read(s, digests[i], &rec);
                if (r < 0)
                        return r;       /* cannot tell what it names: keep everything */
                if (strv_push(&keep, strdup(rec.digest)) < 0 || strv_push(&keep, strdup(rec.config)) < 0)
                        return -ENOMEM;
                for (size_t k = 0; k < rec.n_layers; k++)
                        if (strv_push(&keep_layers, strdup(rec.layers[k])) < 0)
                                return -ENOMEM;
        }
        layers = store_subdir(s, "layers");
        if (layers < 0)
                return layers;
        /* a layer's blob goes once it is unpacked (import.c); one still here is a crashed import's */
        r = sweep(layers, keep_layers, &st.layers);
        if (r >= 0)
                r = sweep(s->blobsfd, keep, &st.blobs);
        if (r < 0)
                return r;
        if (ret)
                *ret = st;
        return 0;
}

/* Imports in progress hold their tmp/ directory locked; one whose lock is free was left by a crash. */
static int tmp_sweep(const ImageStore *s, uint64_t *count) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_close_ int tmp = -EBADF;
        struct dirent *de;
        int r;

        tmp = store_subdir(s, "tmp");
        if (tmp < 0)
                return tmp;
        r = opendir_fd(tmp, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                _cleanup_close_ int fd = -EBADF;

                if (de->d_name[0] == '.')
                        continue;
                fd = openat(tmp, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue;       /* a live import */
                r = rm_rf_at(tmp, de->d_name);
                if (r < 0)
                        return r;
                (*count)++;
        }
        return 0;
}

int store_tmp_sweep(const ImageStore *s) {
        uint64_t n = 0;
        return tmp_sweep(s, &n);
}

int image_store_layer_path(const ImageStore *s, const char *digest, char **ret) {
        if (!digest_is_valid(digest))
                return -EINVAL;
        return asprintf(ret, "%s/layers/%s", s->path, digest_hex(digest)) < 0 ? -ENOMEM : 0;
}
