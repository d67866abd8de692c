/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* import.c: owns importing an image into the store: recognising the source (OCI layout directory,
 * oci-archive, docker-archive), bringing every blob in through verification, choosing the manifest,
 * unpacking each layer once into its own directory, and writing the record last. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/image-store.h"
#include "image/oci-json.h"
#include "image/store-internal.h"
#include "import/layer.h"

#define ARCHIVE_MEMBERS_MAX 4096U
#define BLOB_MAX (64ULL << 30)

typedef struct Import {
        ImageStore *s;
        int srcfd;              /* an OCI layout directory, or -EBADF for an archive */
        int tmpfd;              /* this import's directory under tmp/, locked */
        char *tmpname;
        char *index, *docker;   /* index.json / manifest.json as read */
        size_t index_len, docker_len;
        char **members, **member_digests; /* an archive's regular files and the blobs they became */
        char **links, **link_targets;     /* its symlinks and hard links, resolved to member names */
} Import;

static void import_done(Import *i) {
        safe_close(i->srcfd);
        safe_close(i->tmpfd);
        free(i->index);
        free(i->docker);
        free(i->tmpname);
        strv_free(i->members);
        strv_free(i->member_digests);
        strv_free(i->links);
        strv_free(i->link_targets);
}

static const char *native_arch(void) {
        struct utsname u;

        if (uname(&u) < 0)
                return NULL;
        if (streq(u.machine, "x86_64"))
                return "amd64";
        if (streq(u.machine, "aarch64"))
                return "arm64";
        return NULL;
}

/* The blob is in the store afterwards, its digest verified on the way in. */
static int ensure_blob(Import *i, const char *digest, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        BlobWriter w = { .fd = -EBADF };
        char path[DIGEST_HEX_LEN + 16];
        struct stat st;
        int r;

        if (fstatat(i->s->blobsfd, digest_hex(digest), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                return 0;
        if (i->srcfd < 0)
                return error_set(ret_error, -ENOENT, "blob %s is named but missing from the archive", digest);
        snprintf(path, sizeof path, "blobs/sha256/%s", digest_hex(digest));
        fd = openat_beneath(i->srcfd, path, O_RDONLY, 0);
        if (fd < 0)
                return error_set(ret_error, fd, "blob %s is named but missing from the layout: %s", digest,
                                 strerror(-fd));
        r = fcntl(fd, F_SETFL, 0);      /* openat_beneath() adds O_NONBLOCK; this is a regular file */
        r = r < 0 ? -errno : blob_writer_open(&w, i->s->blobsfd, BLOB_MAX);
        if (r >= 0)
                r = blob_writer_copy_fd(&w, fd);
        if (r >= 0)
                r = blob_writer_commit(&w, digest, NULL, NULL);
        blob_writer_done(&w);
        if (r == -EBADMSG)
                return error_set(ret_error, r, "blob %s: its content does not match its digest", digest);
        if (r < 0)
                return error_set(ret_error, r, "blob %s: cannot store it: %s", digest, strerror(-r));
        return 0;
}

static int read_json_blob(Import *i, const char *digest, uint64_t size, char **ret, size_t *ret_len,
                          char **ret_error) {
        int r = ensure_blob(i, digest, ret_error);

        if (r < 0)
                return r;
        r = blob_read_verified(i->s->blobsfd, digest, OCI_JSON_MAX, ret, ret_len);
        if (r < 0)
                return error_set(ret_error, r, "blob %s: %s", digest,
                                 r == -EBADMSG ? "does not match its digest" : strerror(-r));
        if (size != UINT64_MAX && *ret_len != size)
                return error_set(ret_error, -EBADMSG, "blob %s: %zu bytes, its descriptor says %llu", digest,
                                 *ret_len, (unsigned long long) size);
        return 0;
}

static int ensure_layer(Import *i, const char *digest, char **ret_error) {
        _cleanup_close_ int layers = -EBADF, blob = -EBADF, dfd = -EBADF;
        char tmpname[DIGEST_HEX_LEN + 8];
        struct stat st;
        int r;

        layers = store_subdir(i->s, "layers");
        if (layers < 0)
                return layers;
        if (fstatat(layers, digest_hex(digest), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return 0;       /* unpacked once, by an earlier import */
        blob = blob_open(i->s->blobsfd, digest);
        /* a concurrent import may have unpacked it and dropped the blob since the look above */
        if (blob == -ENOENT && fstatat(layers, digest_hex(digest), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode))
                return 0;
        if (blob < 0)
                return error_set(ret_error, blob, "layer %s: %s", digest, strerror(-blob));
        snprintf(tmpname, sizeof tmpname, "layer-%.16s", digest_hex(digest));
        if (mkdirat(i->tmpfd, tmpname, 0755) < 0)
                return error_set(ret_error, -errno, "layer %s: cannot create a directory: %m", digest);
        dfd = openat(i->tmpfd, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        r = layer_unpack(blob, dfd, &i->s->limits, NULL, ret_error);
        if (r < 0) {
                char *inner = ret_error ? TAKE_PTR(*ret_error) : NULL;
                error_set(ret_error, r, "layer %s refused: %s", digest, inner ?: strerror(-r));
                free(inner);
                return r;
        }
        if (fchmod(dfd, 0755) < 0 || fsync(dfd) < 0)
                return -errno;
        if (renameat(i->tmpfd, tmpname, layers, digest_hex(digest)) < 0) {
                if (errno != EEXIST && errno != ENOTEMPTY)
                        return error_set(ret_error, -errno, "layer %s: cannot move it in place: %m", digest);
                (void) rm_rf_at(i->tmpfd, tmpname);     /* a concurrent import was first: same content */
        }
        return RET_NERRNO(fsync(layers));
}

static bool layer_present(Import *i, const char *digest) {
        _cleanup_close_ int layers = store_subdir(i->s, "layers");
        struct stat st;

        return layers >= 0 && fstatat(layers, digest_hex(digest), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISDIR(st.st_mode);
}

static int import_manifest(Import *i, const char *digest, uint64_t size, const char *name, ImageRecord *ret,
                           char **ret_error) {
        _cleanup_(image_record_done) ImageRecord rec = {};
        _cleanup_free_ char *mbuf = NULL, *cbuf = NULL;
        OciManifest m = {};
        OciConfig c = {};
        const char *arch = native_arch();
        size_t mlen = 0, clen = 0;
        int r;

        r = read_json_blob(i, digest, size, &mbuf, &mlen, ret_error);
        if (r >= 0)
                r = oci_manifest_parse(mbuf, mlen, &m, ret_error);
        if (r >= 0)
                r = read_json_blob(i, m.config.digest, m.config.size, &cbuf, &clen, ret_error);
        if (r >= 0)
                r = oci_config_parse(cbuf, clen, &c, ret_error);
        if (r >= 0 && c.n_diff_ids != m.n_layers)
                r = error_set(ret_error, -EBADMSG, "config lists %zu layers, the manifest %zu", c.n_diff_ids,
                              m.n_layers);
        if (r >= 0 && (!arch || !streq(c.arch, arch)))
                r = error_set(ret_error, -EINVAL, "config.architecture '%s' cannot run on this worker (%s)",
                              c.arch, arch ?: "unknown");
        rec.digest = strdup(digest);
        rec.config = m.config.digest ? strdup(m.config.digest) : NULL;
        rec.size = mlen + clen;
        for (size_t k = 0; r >= 0 && k < m.n_layers; k++) {
                r = layer_present(i, m.layers[k].digest) ? 0 : ensure_blob(i, m.layers[k].digest, ret_error);
                if (r >= 0)
                        r = ensure_layer(i, m.layers[k].digest, ret_error);
                /* Unpacked, the layer is the content: its blob would only double the disk it takes. */
                if (r >= 0 && unlinkat(i->s->blobsfd, digest_hex(m.layers[k].digest), 0) < 0 && errno != ENOENT)
                        r = -errno;
                if (r >= 0)
                        r = strv_push(&rec.layers, strdup(m.layers[k].digest));
                rec.size += m.layers[k].size;
        }
        if (r >= 0) {
                rec.n_layers = m.n_layers;
                rec.env = TAKE_PTR(c.env);
                rec.workdir = TAKE_PTR(c.workdir);
                rec.arch = TAKE_PTR(c.arch);
                if (!rec.digest || !rec.config || (!rec.layers && m.n_layers > 0))
                        r = -ENOMEM;
        }
        oci_manifest_done(&m);
        oci_config_done(&c);
        if (r < 0)
                return r;
        r = store_record_write(i->s, &rec);
        if (r >= 0 && name)
                r = store_ref_write(i->s, name, digest);
        if (r < 0)
                return error_set(ret_error, r, "cannot record image %s: %s", digest, strerror(-r));
        if (name && strv_push(&rec.names, strdup(name)) < 0)
                return -ENOMEM;
        *ret = rec;
        rec = (ImageRecord) {};
        return 0;
}

static bool is_manifest(const OciDescriptor *d) {
        return streq(d->media_type, OCI_MT_MANIFEST) || streq(d->media_type, DOCKER_MT_MANIFEST);
}

/* One manifest for this worker's platform, through at most one nested index. */
static int choose_manifest(Import *i, const char *buf, size_t len, int depth, char **ret_digest,
                           uint64_t *ret_size, char **ret_ref, char **ret_error) {
        const char *arch = native_arch();
        OciIndex idx = {};
        const OciDescriptor *pick = NULL;
        size_t n = 0;
        int r;

        r = oci_index_parse(buf, len, &idx, ret_error);
        if (r < 0)
                return r;
        for (size_t k = 0; k < idx.n_manifests; k++) {
                const OciDescriptor *d = &idx.manifests[k];
                bool ours = !d->arch || (arch && streq(d->arch, arch) && (!d->os || streq(d->os, "linux")));

                if ((is_manifest(d) || streq(d->media_type, OCI_MT_INDEX) || streq(d->media_type, DOCKER_MT_LIST)) &&
                    ours) {
                        pick = pick ?: d;
                        n++;
                }
        }
        if (!pick)
                r = error_set(ret_error, -ENOENT, "index: no image manifest for linux/%s", arch ?: "?");
        else if (n > 1)
                r = error_set(ret_error, -EINVAL, "index: %zu manifests fit this worker; pick one with skopeo "
                              "copy or umoci first", n);
        else if (!is_manifest(pick)) {
                _cleanup_free_ char *nested = NULL;
                size_t nlen;

                r = depth > 0 ? error_set(ret_error, -EINVAL, "index: nested more than one level deep")
                              : read_json_blob(i, pick->digest, pick->size, &nested, &nlen, ret_error);
                if (r >= 0)
                        r = choose_manifest(i, nested, nlen, depth + 1, ret_digest, ret_size, ret_ref, ret_error);
                if (r >= 0 && !*ret_ref && pick->ref_name)
                        *ret_ref = strdup(pick->ref_name);
        } else {
                *ret_digest = strdup(pick->digest);
                *ret_size = pick->size;
                *ret_ref = pick->ref_name ? strdup(pick->ref_name) : NULL;
                r = *ret_digest ? 0 : -ENOMEM;
        }
        oci_index_done(&idx);
        return r;
}

/* The archive's own name for the image, when it is a full repo:tag (a bare tag is not a name). */
static char *name_from(const char *candidate) {
        char *n = NULL;

        if (candidate && strchr(candidate, ':') && image_name_normalise(candidate, &n) >= 0)
                return n;
        return NULL;
}

static int import_oci(Import *i, const char *name, ImageRecord *ret, char **ret_error) {
        _cleanup_free_ char *digest = NULL, *ref = NULL, *auto_name = NULL;
        uint64_t size = 0;
        int r;

        r = choose_manifest(i, i->index, i->index_len, 0, &digest, &size, &ref, ret_error);
        if (r < 0)
                return r;
        if (!name)
                name = auto_name = name_from(ref);
        return import_manifest(i, digest, size, name, ret, ret_error);
}

/* docker save writes a layer it already wrote as a symlink to the first copy: followed here, a few deep. */
static const char *member_digest(Import *i, const char *name) {
        for (unsigned depth = 0; name && depth < 8; depth++) {
                const char *next = NULL;

                for (size_t k = 0; i->members && i->members[k]; k++)
                        if (streq(i->members[k], name))
                                return i->member_digests[k];
                for (size_t k = 0; i->links && i->links[k]; k++)
                        if (streq(i->links[k], name))
                                next = i->link_targets[k];
                name = next;
        }
        return NULL;
}

/* The member a link names: a symlink's target is relative to the link's directory, a hard link's to the
 * archive's top. NULL if it leaves the archive. */
static char *link_resolve(const char *name, const char *target, bool symlink) {
        _cleanup_free_ char *joined = NULL;
        const char *slash = strrchr(name, '/');
        char *out, *w;

        if (!target || target[0] == '/')
                return NULL;
        if (asprintf(&joined, "%.*s%s", symlink && slash ? (int) (slash - name + 1) : 0, name, target) < 0)
                return NULL;
        out = w = calloc(strlen(joined) + 1, 1);
        if (!out)
                return NULL;
        for (const char *p = joined; *p; p += strspn(p, "/")) {
                size_t n = strcspn(p, "/");

                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        if (w == out) {
                                free(out);
                                return NULL;
                        }
                        while (w > out && *--w != '/')
                                ;
                        *w = 0;
                } else if (n > 0 && !(n == 1 && p[0] == '.')) {
                        if (w != out)
                                *w++ = '/';
                        memcpy(w, p, n);
                        w += n;
                        *w = 0;
                }
                p += n;
        }
        return out;
}

static uint64_t blob_size(Import *i, const char *digest) {
        struct stat st;
        return fstatat(i->s->blobsfd, digest_hex(digest), &st, 0) < 0 ? 0 : (uint64_t) st.st_size;
}

/* The layers' descriptors, each checked against the config's diff_ids (docker-archive layers are
 * uncompressed tars, so their digest is their diff_id). */
static int docker_layers(Import *i, const DockerImage *d, const OciConfig *c, json_object **ret, char **ret_error) {
        _cleanup_json_ json_object *layers = json_object_new_array();

        if (!layers)
                return -ENOMEM;
        if (c->n_diff_ids != d->n_layers)
                return error_set(ret_error, -EBADMSG, "config lists %zu layers, manifest.json %zu", c->n_diff_ids,
                                 d->n_layers);
        for (size_t k = 0; k < d->n_layers; k++) {
                const char *ld = member_digest(i, d->layers[k]);
                json_object *desc;

                if (!ld)
                        return error_set(ret_error, -ENOENT, "manifest.json names layer %s, which is missing",
                                         d->layers[k]);
                if (!streq(ld, c->diff_ids[k]))
                        return error_set(ret_error, -EBADMSG, "layer %s does not match the config's "
                                         "diff_ids[%zu]", d->layers[k], k);
                desc = json_object_new_object();
                if (!desc || json_object_array_add(layers, desc) < 0) {
                        json_object_put(desc);
                        return -ENOMEM;
                }
                json_object_object_add(desc, "mediaType", json_object_new_string(OCI_MT_LAYER_TAR));
                json_object_object_add(desc, "digest", json_object_new_string(ld));
                json_object_object_add(desc, "size", json_object_new_int64((int64_t) blob_size(i, ld)));
        }
        *ret = TAKE_PTR(layers);
        return 0;
}

/* Stores the OCI manifest a docker-archive stands for; its digest names the image. */
static int docker_write_manifest(Import *i, const char *cdigest, size_t clen, json_object *layers,
                                 char ret[DIGEST_SIZE]) {
        _cleanup_json_ json_object *m = json_object_new_object(), *cd = json_object_new_object();
        BlobWriter w = { .fd = -EBADF };
        const char *text;
        int r;

        if (!m || !cd)
                return -ENOMEM;
        json_object_object_add(cd, "mediaType", json_object_new_string(OCI_MT_CONFIG));
        json_object_object_add(cd, "digest", json_object_new_string(cdigest));
        json_object_object_add(cd, "size", json_object_new_int64((int64_t) clen));
        json_object_object_add(m, "schemaVersion", json_object_new_int(2));
        json_object_object_add(m, "mediaType", json_object_new_string(OCI_MT_MANIFEST));
        json_object_object_add(m, "config", TAKE_PTR(cd));
        json_object_object_add(m, "layers", json_object_get(layers));
        text = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        r = blob_writer_open(&w, i->s->blobsfd, OCI_JSON_MAX);
        if (r >= 0)
                r = blob_writer_write(&w, text, strlen(text));
        if (r >= 0)
                r = blob_writer_commit(&w, NULL, ret, NULL);
        blob_writer_done(&w);
        return r;
}

/* docker-archive: no manifest blob exists, so pond writes the OCI manifest the archive stands for once the
 * layers are checked against the config's diff_ids. */
static int import_docker(Import *i, const char *name, ImageRecord *ret, char **ret_error) {
        _cleanup_json_ json_object *layers = NULL;
        _cleanup_free_ char *cbuf = NULL, *auto_name = NULL;
        char mdigest[DIGEST_SIZE];
        DockerImage d = {};
        OciConfig c = {};
        const char *cdigest;
        size_t clen;
        int r;

        r = docker_manifest_parse(i->docker, i->docker_len, &d, ret_error);
        if (r < 0)
                return r;
        cdigest = member_digest(i, d.config);
        r = cdigest ? read_json_blob(i, cdigest, UINT64_MAX, &cbuf, &clen, ret_error)
                    : error_set(ret_error, -ENOENT, "manifest.json names config %s, which is missing", d.config);
        if (r >= 0)
                r = oci_config_parse(cbuf, clen, &c, ret_error);
        if (r >= 0)
                r = docker_layers(i, &d, &c, &layers, ret_error);
        if (r >= 0)
                r = docker_write_manifest(i, cdigest, clen, layers, mdigest);
        if (r >= 0 && !name)
                name = auto_name = name_from(d.repo_tags ? d.repo_tags[0] : NULL);
        if (r >= 0)
                r = import_manifest(i, mdigest, UINT64_MAX, name, ret, ret_error);
        docker_image_done(&d);
        oci_config_done(&c);
        return r;
}

/* "./blobs/sha256/x" and "blobs/sha256/x" are the same member. */
static const char *member_name(const char *p) {
        while (p[0] == '.' && p[1] == '/')
                p += 2;
        return p;
}

static int read_member(struct archive *a, char **ret, size_t *ret_len, char **ret_error, const char *what) {
        _cleanup_free_ char *buf = malloc(OCI_JSON_MAX + 1);
        size_t n = 0;

        if (!buf)
                return -ENOMEM;
        for (;;) {
                la_ssize_t k = archive_read_data(a, buf + n, OCI_JSON_MAX + 1 - n);
                if (k < 0)
                        return error_set(ret_error, -EBADMSG, "%s: %s", what, archive_error_string(a));
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > OCI_JSON_MAX)
                        return error_set(ret_error, -EFBIG, "%s: larger than %u bytes", what, OCI_JSON_MAX);
        }
        buf[n] = 0;
        free(*ret);
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

static int ingest_member(Import *i, struct archive *a, const char *name, char **ret_error) {
        char expected[DIGEST_SIZE], digest[DIGEST_SIZE];
        BlobWriter w = { .fd = -EBADF };
        bool named = false;
        int r;

        if (strncmp(name, "blobs/sha256/", 13) == 0) {
                snprintf(expected, sizeof expected, DIGEST_PREFIX "%s", name + 13);
                if (!digest_is_valid(expected))
                        return error_set(ret_error, -EINVAL, "%s: not a sha256 blob name", name);
                named = true;
        }
        r = blob_writer_open(&w, i->s->blobsfd, BLOB_MAX);
        for (;;) {
                const void *buf;
                size_t len;
                la_int64_t off;
                int k;

                if (r < 0)
                        break;
                k = archive_read_data_block(a, &buf, &len, &off);
                if (k == ARCHIVE_EOF)
                        break;
                if (k < ARCHIVE_WARN || (uint64_t) off != w.size) {
                        r = error_set(ret_error, -EBADMSG, "%s: %s", name,
                                      k < ARCHIVE_WARN ? archive_error_string(a) : "sparse members are refused");
                        break;
                }
                r = blob_writer_write(&w, buf, len);
        }
        if (r >= 0)
                r = blob_writer_commit(&w, named ? expected : NULL, digest, NULL);
        blob_writer_done(&w);
        if (r == -EBADMSG && named)
                return error_set(ret_error, r, "%s: its content does not match its digest", name);
        if (r < 0)
                return ret_error && *ret_error ? r : error_set(ret_error, r, "%s: %s", name, strerror(-r));
        if (strv_length(i->members) >= ARCHIVE_MEMBERS_MAX)
                return error_set(ret_error, -E2BIG, "more than %u files in the archive", ARCHIVE_MEMBERS_MAX);
        if (strv_push(&i->members, strdup(name)) < 0 || strv_push(&i->member_digests, strdup(digest)) < 0)
                return -ENOMEM;
        return 0;
}

/* One pass over the archive: every regular member becomes a verified blob; index.json and manifest.json
 * are kept in memory. */
static int scan_archive(Import *i, int fd, char **ret_error) {
        struct archive *a = archive_read_new();
        struct archive_entry *e;
        int r = 0;

        if (!a)
                return -ENOMEM;
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_format_tar(a);
        if (archive_read_open_fd(a, fd, 128 * 1024) != ARCHIVE_OK)
                r = error_set(ret_error, -EINVAL, "not a tar archive: %s", archive_error_string(a));
        while (r >= 0) {
                const char *name;
                int k = archive_read_next_header(a, &e);

                if (k == ARCHIVE_EOF)
                        break;
                if (k < ARCHIVE_WARN) {
                        r = error_set(ret_error, -EBADMSG, "bad archive: %s", archive_error_string(a));
                        break;
                }
                name = member_name(archive_entry_pathname(e) ?: "");
                if (archive_entry_hardlink(e) || archive_entry_filetype(e) == AE_IFLNK) {
                        bool sym = !archive_entry_hardlink(e);
                        char *t = link_resolve(name, sym ? archive_entry_symlink(e) : archive_entry_hardlink(e),
                                               sym);
                        if (!t || strv_length(i->links) >= ARCHIVE_MEMBERS_MAX)
                                free(t);
                        else if (strv_push(&i->links, strdup(name)) < 0) {
                                free(t);
                                r = -ENOMEM;
                        } else if (strv_push(&i->link_targets, t) < 0)
                                r = -ENOMEM;
                        continue;
                }
                if (archive_entry_filetype(e) != AE_IFREG)
                        continue;
                if (streq(name, "index.json"))
                        r = read_member(a, &i->index, &i->index_len, ret_error, name);
                else if (streq(name, "manifest.json"))
                        r = read_member(a, &i->docker, &i->docker_len, ret_error, name);
                else if (!streq(name, "oci-layout") && !streq(name, "repositories"))
                        r = ingest_member(i, a, name, ret_error);
        }
        archive_read_free(a);
        return r;
}

static int open_source(Import *i, const char *source, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(source, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0)
                return error_set(ret_error, -errno, "%s: %m", source);
        if (S_ISDIR(st.st_mode)) {
                int r;
                if (faccessat(fd, "oci-layout", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                        return error_set(ret_error, -EINVAL, "%s: a directory without oci-layout is not an OCI "
                                         "image layout", source);
                r = read_full_file_at(fd, "index.json", OCI_JSON_MAX, &i->index, &i->index_len);
                if (r < 0)
                        return error_set(ret_error, r, "%s/index.json: %s", source, strerror(-r));
                i->srcfd = TAKE_FD(fd);
                return 0;
        }
        /* a pipe too: `podman save ... | pondctl image import /dev/stdin` */
        if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
                return error_set(ret_error, -EINVAL, "%s: neither a directory nor an archive", source);
        return scan_archive(i, fd, ret_error);
}

static int begin(Import *i, char **ret_error) {
        _cleanup_free_ char *tmpl = NULL;
        _cleanup_close_ int tmp = -EBADF;
        int r;

        tmp = store_subdir(i->s, "tmp");
        if (tmp < 0)
                return tmp;
        if (asprintf(&tmpl, "%s/tmp/import-XXXXXX", i->s->path) < 0)
                return -ENOMEM;
        if (!mkdtemp(tmpl))
                return error_set(ret_error, -errno, "cannot create %s: %m", tmpl);
        i->tmpname = strdup(strrchr(tmpl, '/') + 1);
        if (!i->tmpname)
                return -ENOMEM;
        i->tmpfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (i->tmpfd < 0 || flock(i->tmpfd, LOCK_EX) < 0)
                return -errno;
        /* what an import killed part-way left behind (ours is locked) */
        r = store_tmp_sweep(i->s);
        return r < 0 ? error_set(ret_error, r, "cannot clear old imports: %s", strerror(-r)) : 0;
}

static void end(Import *i) {
        _cleanup_close_ int tmp = store_subdir(i->s, "tmp");

        if (tmp >= 0 && i->tmpname)
                (void) rm_rf_at(tmp, i->tmpname);
}

int image_store_import(ImageStore *s, const char *source, const char *name, ImageRecord *ret,
                       char **ret_error) {
        _cleanup_free_ char *norm = NULL;
        Import i = { .s = s, .srcfd = -EBADF, .tmpfd = -EBADF };
        int r;

        if (!s || !source || !ret)
                return -EINVAL;
        if (name && image_name_normalise(name, &norm) < 0)
                return error_set(ret_error, -EINVAL, "--name '%s': must be repo[:tag] ([a-z0-9][a-z0-9._/-]* "
                                 "and [A-Za-z0-9_][A-Za-z0-9_.-]*)", name);
        r = begin(&i, ret_error);
        if (r >= 0)
                r = open_source(&i, source, ret_error);
        if (r >= 0 && i.index)
                r = import_oci(&i, norm, ret, ret_error);
        else if (r >= 0 && i.docker)
                r = import_docker(&i, norm, ret, ret_error);
        else if (r >= 0)
                r = error_set(ret_error, -EINVAL, "%s: neither an OCI layout, an oci-archive nor a "
                              "docker-archive (no index.json or manifest.json)", source);
        end(&i);
        import_done(&i);
        return r;
}
