/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-image-store.c: the image store against real and hostile inputs made here with libarchive's writer:
 * import and idempotent re-import, whiteout and opaque conversion, a flipped byte, a missing blob, layers
 * that try to leave their directory, device nodes, setuid bits, bounds (entries, the decompressed stream
 * with data skipped rather than copied, the blob, time), rm and gc, and an importer killed with SIGKILL at
 * any moment leaving nothing a job could use. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "image/blob.h"
#include "image/image-store.h"
#include "oci/oci.h"
#include "policy/policy.h"
#include "rootfs/image.h"
#include "tests.h"

typedef struct Entry {
        const char *name;
        char type;              /* f file, d dir, l symlink, h hard link, c char device, p fifo */
        const char *data;       /* content, or the link target */
        mode_t mode;
} Entry;

/* A tar of entries, in memory. */
static int make_tar(const Entry *e, size_t n, char **ret, size_t *ret_len) {
        struct archive *a = archive_write_new();
        size_t cap = 8 << 20, used = 0;
        char *buf = malloc(cap);

        if (!a || !buf)
                return -ENOMEM;
        archive_write_set_format_pax_restricted(a);
        archive_write_set_bytes_in_last_block(a, 1);
        if (archive_write_open_memory(a, buf, cap, &used) != ARCHIVE_OK)
                return -EIO;
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *ae = archive_entry_new();
                size_t len = e[i].type == 'f' && e[i].data ? strlen(e[i].data) : 0;

                archive_entry_set_pathname(ae, e[i].name);
                archive_entry_set_mode(ae, (e[i].type == 'd' ? AE_IFDIR : e[i].type == 'l' ? AE_IFLNK :
                                            e[i].type == 'c' ? AE_IFCHR : e[i].type == 'p' ? AE_IFIFO : AE_IFREG) |
                                                   (e[i].mode ?: (e[i].type == 'd' ? 0755 : 0644)));
                if (e[i].type == 'l')
                        archive_entry_set_symlink(ae, e[i].data);
                if (e[i].type == 'h')
                        archive_entry_set_hardlink(ae, e[i].data);
                if (e[i].type == 'c')
                        archive_entry_set_rdev(ae, makedev(1, 3));
                archive_entry_set_size(ae, (la_int64_t) len);
                if (archive_write_header(a, ae) != ARCHIVE_OK ||
                    (len && archive_write_data(a, e[i].data, len) != (la_ssize_t) len))
                        return -EIO;
                archive_entry_free(ae);
        }
        archive_write_close(a);
        archive_write_free(a);
        *ret = buf;
        *ret_len = used;
        return 0;
}

static void write_blob(const char *layout, const void *p, size_t n, char digest[DIGEST_SIZE]) {
        char path[PATH_MAX];
        FILE *f;

        digest_of(p, n, digest);
        snprintf(path, sizeof path, "%s/blobs/sha256/%s", layout, digest_hex(digest));
        f = fopen(path, "we");
        fwrite(p, 1, n, f);
        fclose(f);
}

static void write_text(const char *dir, const char *name, const char *text) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = fopen(path, "we");
        fputs(text, f);
        fclose(f);
}

/* An OCI layout at dir with the given layers (tars), bottom first; the manifest's digest in ret. */
static int make_layout(const char *dir, char **layers, size_t *lens, size_t n, char ret[DIGEST_SIZE]) {
        char digests[8][DIGEST_SIZE], cdigest[DIGEST_SIZE], path[PATH_MAX + 32];
        char config[4096], manifest[8192], index[1024];
        size_t off;

        snprintf(path, sizeof path, "%s/blobs/sha256", dir);
        if (mkdir_p(path, 0755) < 0)
                return -EIO;
        for (size_t i = 0; i < n; i++)
                write_blob(dir, layers[i], lens[i], digests[i]);
        off = (size_t) snprintf(config, sizeof config, "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":"
                                "{\"Env\":[\"A=b\"],\"WorkingDir\":\"/srv\",\"User\":\"4242\"},"
                                "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[");
        for (size_t i = 0; i < n; i++)
                off += (size_t) snprintf(config + off, sizeof config - off, "%s\"%s\"", i ? "," : "", digests[i]);
        snprintf(config + off, sizeof config - off, "]},\"history\":[{\"created_by\":\"test\"}]}");
        write_blob(dir, config, strlen(config), cdigest);
        off = (size_t) snprintf(manifest, sizeof manifest, "{\"schemaVersion\":2,\"mediaType\":\"application/"
                                "vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci."
                                "image.config.v1+json\",\"digest\":\"%s\",\"size\":%zu},\"layers\":[",
                                cdigest, strlen(config));
        for (size_t i = 0; i < n; i++)
                off += (size_t) snprintf(manifest + off, sizeof manifest - off, "%s{\"mediaType\":\"application/"
                                         "vnd.oci.image.layer.v1.tar\",\"digest\":\"%s\",\"size\":%zu}",
                                         i ? "," : "", digests[i], lens[i]);
        snprintf(manifest + off, sizeof manifest - off, "],\"annotations\":{\"x\":\"y\"}}");
        write_blob(dir, manifest, strlen(manifest), ret);
        snprintf(index, sizeof index, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci."
                 "image.manifest.v1+json\",\"digest\":\"%s\",\"size\":%zu,\"annotations\":{\"org.opencontainers."
                 "image.ref.name\":\"test/img:one\"},\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}}]}",
                 ret, strlen(manifest));
        write_text(dir, "index.json", index);
        write_text(dir, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
        return 0;
}

static int layout_of(const char *dir, const Entry *a, size_t na, const Entry *b, size_t nb, char ret[DIGEST_SIZE]) {
        char *tars[2] = {};
        size_t lens[2] = {};
        int r;

        r = make_tar(a, na, &tars[0], &lens[0]);
        if (r >= 0 && b)
                r = make_tar(b, nb, &tars[1], &lens[1]);
        if (r >= 0)
                r = make_layout(dir, tars, lens, b ? 2 : 1, ret);
        free(tars[0]);
        free(tars[1]);
        return r;
}

static const Entry base[] = {
        { "etc", 'd', NULL, 0 },        { "etc/os-release", 'f', "ID=test\n", 0 }, { "gone", 'f', "x", 0 },
        { "opq", 'd', NULL, 0 },        { "opq/old", 'f', "old", 0 },              { "bin", 'd', NULL, 0 },
        { "bin/su", 'f', "#!", 04755 }, { "dev", 'd', NULL, 0 }, { "dev/null", 'c', NULL, 0 }, { "fifo", 'p', NULL, 0 },
        { "bin/link", 'h', "bin/su", 0 },
};
static const Entry upper[] = {
        { ".wh.gone", 'f', NULL, 0 },         { "opq", 'd', NULL, 0 },
        { "opq/.wh..wh..opq", 'f', NULL, 0 }, { "opq/new", 'f', "new", 0 },
};

static bool is_root(void) {
        return geteuid() == 0;
}

FIXTURE(store) {
        char dir[64];
        char layout[PATH_MAX];
        char digest[DIGEST_SIZE];
        ImageStore s;
};

FIXTURE_SETUP(store) {
        char path[PATH_MAX], run[PATH_MAX];

        snprintf(self->dir, sizeof self->dir, "/tmp/test-image-XXXXXX");
        if (!mkdtemp(self->dir))
                abort();
        snprintf(self->layout, sizeof self->layout, "%s/layout", self->dir);
        snprintf(path, sizeof path, "%s/store", self->dir);
        snprintf(run, sizeof run, "%s/run", self->dir);
        self->s = IMAGE_STORE_NULL;
        if (image_store_open(path, run, LOCK_SH, true, &self->s) < 0)
                abort();
}

FIXTURE_TEARDOWN(store) {
        image_store_close(&self->s);
        (void) rm_rf_at(AT_FDCWD, self->dir);
}

static int count_dir(const ImageStore *s, const char *sub) {
        char path[PATH_MAX];
        DIR *d;
        struct dirent *de;
        int n = 0;

        snprintf(path, sizeof path, "%s/%s", s->path, sub);
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -1;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static bool layer_has(const ImageStore *s, const char *layer_digest, const char *path, struct stat *st) {
        char p[PATH_MAX];

        snprintf(p, sizeof p, "%s/layers/%s/%s", s->path, digest_hex(layer_digest), path);
        return lstat(p, st) == 0;
}

TEST_F(store, import_converts_and_neutralises) {
        ImageRecord rec = {}, again = {};
        _cleanup_free_ char *err = NULL;
        struct stat st;
        char v[4] = {};

        if (!is_root())
                TEST_SKIP("whiteouts (mknod 0:0) and trusted.* xattrs need root");
        ASSERT_OK(layout_of(self->layout, base, ELEMENTSOF(base), upper, ELEMENTSOF(upper), self->digest));
        ASSERT_OK(image_store_import(&self->s, self->layout, NULL, &rec, &err));
        ASSERT_STREQ(self->digest, rec.digest);
        ASSERT_EQ(2u, rec.n_layers);
        ASSERT_STREQ("test/img:one", rec.names[0]);    /* the layout's own ref name */
        ASSERT_STREQ("/srv", rec.workdir);
        ASSERT_STREQ("A=b", rec.env[0]);
        /* the whiteout is a 0:0 character device, the opaque directory has the overlay xattr */
        ASSERT_TRUE(layer_has(&self->s, rec.layers[1], "gone", &st));
        ASSERT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        ASSERT_FALSE(layer_has(&self->s, rec.layers[1], ".wh.gone", &st));
        ASSERT_FALSE(layer_has(&self->s, rec.layers[1], "opq/.wh..wh..opq", &st));
        {
                char p[PATH_MAX];
                snprintf(p, sizeof p, "%s/layers/%s/opq", self->s.path, digest_hex(rec.layers[1]));
                ASSERT_EQ(1, (int) getxattr(p, "trusted.overlay.opaque", v, sizeof v));
                ASSERT_EQ('y', v[0]);
        }
        /* setuid stripped, device node and fifo not created, the hard link within the layer kept */
        ASSERT_TRUE(layer_has(&self->s, rec.layers[0], "bin/su", &st));
        ASSERT_EQ(0755u, st.st_mode & 07777);
        ASSERT_EQ(2u, (unsigned) st.st_nlink);
        ASSERT_FALSE(layer_has(&self->s, rec.layers[0], "dev/null", &st));
        ASSERT_FALSE(layer_has(&self->s, rec.layers[0], "fifo", &st));
        /* idempotent: same digest, nothing unpacked twice, nothing left in tmp/ */
        ASSERT_OK(image_store_import(&self->s, self->layout, "other:tag", &again, &err));
        ASSERT_STREQ(rec.digest, again.digest);
        ASSERT_EQ(2, count_dir(&self->s, "layers"));
        ASSERT_EQ(1, count_dir(&self->s, "records"));
        ASSERT_EQ(0, count_dir(&self->s, "tmp"));
        image_record_done(&again);
        ASSERT_OK(image_store_lookup(&self->s, "other:tag", &again, &err));
        ASSERT_EQ(2u, (unsigned) strv_length(again.names));
        image_record_done(&again);
        ASSERT_OK(image_store_lookup(&self->s, rec.digest, &again, NULL));
        image_record_done(&again);
        image_record_done(&rec);
}

TEST_F(store, flipped_byte_is_refused) {
        _cleanup_free_ char *err = NULL;
        ImageRecord rec = {};
        char path[PATH_MAX + 128], *tar;
        size_t len;
        FILE *f;

        ASSERT_OK(layout_of(self->layout, upper + 1, 1, NULL, 0, self->digest));
        ASSERT_OK(make_tar(upper + 1, 1, &tar, &len));
        tar[len / 3] ^= 1;
        /* the layer blob rewritten in place with one bit flipped: its name is now the wrong digest */
        {
                char *orig;
                size_t olen;
                char od[DIGEST_SIZE];
                ASSERT_OK(make_tar(upper + 1, 1, &orig, &olen));
                digest_of(orig, olen, od);
                snprintf(path, sizeof path, "%s/blobs/sha256/%s", self->layout, digest_hex(od));
                free(orig);
        }
        f = fopen(path, "we");
        fwrite(tar, 1, len, f);
        fclose(f);
        free(tar);
        ASSERT_ERROR(EBADMSG, image_store_import(&self->s, self->layout, NULL, &rec, &err));
        ASSERT_CONTAINS("does not match its digest", err);
        ASSERT_ERROR(ENOENT, image_store_lookup(&self->s, self->digest, &rec, NULL));
        ASSERT_EQ(0, count_dir(&self->s, "layers"));
}

TEST_F(store, missing_blob_is_refused) {
        _cleanup_free_ char *err = NULL;
        ImageRecord rec = {};
        char path[PATH_MAX + 128], *tar;
        char d[DIGEST_SIZE];
        size_t len;

        ASSERT_OK(layout_of(self->layout, upper + 1, 1, NULL, 0, self->digest));
        ASSERT_OK(make_tar(upper + 1, 1, &tar, &len));
        digest_of(tar, len, d);
        free(tar);
        snprintf(path, sizeof path, "%s/blobs/sha256/%s", self->layout, digest_hex(d));
        ASSERT_OK(unlink(path));
        ASSERT_ERROR(ENOENT, image_store_import(&self->s, self->layout, NULL, &rec, &err));
        ASSERT_CONTAINS("missing", err);
        ASSERT_ERROR(ENOENT, image_store_lookup(&self->s, self->digest, &rec, NULL));
}

/* Each hostile layer is refused as a whole, and nothing appears outside the store. */
static void refuse_layer(FIXTURE_DATA(store) *self, const Entry *e, size_t n, const char *why) {
        _cleanup_free_ char *err = NULL;
        ImageRecord rec = {};
        char d[DIGEST_SIZE];

        (void) rm_rf_at(AT_FDCWD, self->layout);
        ASSERT_OK(layout_of(self->layout, e, n, NULL, 0, d));
        EXPECT_ERROR(EPERM, image_store_import(&self->s, self->layout, NULL, &rec, &err));
        EXPECT_CONTAINS(why, err);
        EXPECT_ERROR(ENOENT, image_store_lookup(&self->s, d, &rec, NULL));
        EXPECT_EQ(0, count_dir(&self->s, "layers"));
}

TEST_F(store, hostile_layers_are_refused) {
        char outside[PATH_MAX], target[PATH_MAX + 16];
        struct stat st;
        const Entry dotdot[] = { { "a", 'd', NULL, 0 }, { "a/../../escape", 'f', "x", 0 } };
        const Entry absolute[] = { { "/escape", 'f', "x", 0 } };
        const Entry through_link[] = { { "lnk", 'l', "", 0 }, { "lnk/escape", 'f', "x", 0 } };
        const Entry hard_out[] = { { "h", 'h', "../../../etc/passwd", 0 } };
        const Entry hard_abs[] = { { "h", 'h', "/etc/passwd", 0 } };
        const Entry hard_to_link[] = { { "s", 'l', "/etc/passwd", 0 }, { "h", 'h', "s", 0 } };
        Entry through[2];

        snprintf(outside, sizeof outside, "%s/outside", self->dir);
        ASSERT_OK(mkdir(outside, 0755));
        memcpy(through, through_link, sizeof through);
        through[0].data = outside;      /* an absolute symlink, then a file through it */
        refuse_layer(self, dotdot, ELEMENTSOF(dotdot), "leaves the layer");
        refuse_layer(self, absolute, ELEMENTSOF(absolute), "leaves the layer");
        refuse_layer(self, through, ELEMENTSOF(through), "lnk/escape");
        snprintf(target, sizeof target, "%s/escape", outside);
        EXPECT_ERROR(ENOENT, RET_NERRNO(lstat(target, &st)));
        refuse_layer(self, hard_out, ELEMENTSOF(hard_out), "leaves the layer");
        refuse_layer(self, hard_abs, ELEMENTSOF(hard_abs), "leaves the layer");
        refuse_layer(self, hard_to_link, ELEMENTSOF(hard_to_link), "not a regular file of this layer");
        ASSERT_EQ(0, count_dir(&self->s, "tmp"));
}

TEST_F(store, entry_bound) {
        const Entry many[] = { { "a", 'f', NULL, 0 }, { "b", 'f', NULL, 0 }, { "c", 'f', NULL, 0 },
                               { "d", 'f', NULL, 0 }, { "e", 'f', NULL, 0 }, { "f", 'f', NULL, 0 } };

        self->s.limits.max_entries = 5;
        refuse_layer(self, many, ELEMENTSOF(many), "more than 5 entries");
}

/* A gzip bomb: one entry named name whose data (size bytes of zeros) pond does not copy, gzipped
 * (~1000:1), then a regular file. */
static int make_bomb(const char *name, size_t size, char **ret, size_t *ret_len) {
        struct archive *a = archive_write_new();
        struct archive_entry *ae = archive_entry_new();
        size_t cap = 4 << 20, used = 0;
        char *buf = malloc(cap), zeros[65536] = {};

        if (!a || !ae || !buf)
                return -ENOMEM;
        archive_write_set_format_pax_restricted(a);
        archive_write_add_filter_gzip(a);
        if (archive_write_open_memory(a, buf, cap, &used) != ARCHIVE_OK)
                return -EIO;
        archive_entry_set_pathname(ae, name);
        archive_entry_set_mode(ae, AE_IFREG | 0644);
        archive_entry_set_size(ae, (la_int64_t) size);
        if (archive_write_header(a, ae) != ARCHIVE_OK)
                return -EIO;
        for (size_t done = 0; done < size; done += sizeof zeros)
                if (archive_write_data(a, zeros, MIN(sizeof zeros, size - done)) < 0)
                        return -EIO;
        archive_entry_clear(ae);
        archive_entry_set_pathname(ae, "after");
        archive_entry_set_mode(ae, AE_IFREG | 0644);
        archive_entry_set_size(ae, 1);
        if (archive_write_header(a, ae) != ARCHIVE_OK || archive_write_data(a, "x", 1) != 1)
                return -EIO;
        archive_entry_free(ae);
        if (archive_write_close(a) != ARCHIVE_OK)
                return -EIO;
        archive_write_free(a);
        *ret = buf;
        *ret_len = used;
        return 0;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* The data of entries pond skips (a whiteout, an opaque marker) still comes out of the decompressor: it is
 * counted, and a small gzip of zeros claiming more than the stream's bound is refused at the bound,
 * quickly, leaving nothing. Before, it was skipped uncounted: any size went through. */
TEST_F(store, bomb_layers_are_refused) {
        static const char *const names[] = { ".wh.gone", "d/.wh..wh..opq" };
        _cleanup_free_ char *tar = NULL;
        size_t len = 0;

        self->s.limits.max_bytes = 1 << 20;
        self->s.limits.max_stream_bytes = 4 << 20;
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *err = NULL;
                ImageRecord rec = {};
                char d[DIGEST_SIZE];
                uint64_t start;

                free(tar);
                tar = NULL;
                ASSERT_OK(make_bomb(names[i], 256 << 20, &tar, &len));
                ASSERT_TRUE(len < (1 << 20)); /* 256 MiB of data in well under 1 MiB */
                (void) rm_rf_at(AT_FDCWD, self->layout);
                ASSERT_OK(make_layout(self->layout, &tar, &len, 1, d));
                start = now_ms();
                EXPECT_ERROR(EPERM, image_store_import(&self->s, self->layout, NULL, &rec, &err));
                EXPECT_CONTAINS("tar stream has more than 4194304 bytes", err);
                EXPECT_CONTAINS(names[i], err);
                EXPECT_TRUE(now_ms() - start < 10000);
                EXPECT_ERROR(ENOENT, image_store_lookup(&self->s, d, &rec, NULL));
                EXPECT_EQ(0, count_dir(&self->s, "layers"));
                EXPECT_EQ(0, count_dir(&self->s, "tmp"));
        }
        /* The same layer under a bound that holds it imports. */
        self->s.limits.max_stream_bytes = 512 << 20;
        {
                _cleanup_free_ char *err = NULL;
                _cleanup_(image_record_done) ImageRecord rec = {};
                char d[DIGEST_SIZE];

                (void) rm_rf_at(AT_FDCWD, self->layout);
                ASSERT_OK(make_layout(self->layout, &tar, &len, 1, d));
                EXPECT_OK(image_store_import(&self->s, self->layout, NULL, &rec, &err));
        }
}

/* The blob as stored counts too, and the clock: a layer past its time is refused, leaving nothing. */
TEST_F(store, blob_and_time_bounds) {
        const Entry some[] = { { "a", 'f', "some content", 0 }, { "b", 'f', "more", 0 } };
        char big[8192];
        Entry large[] = { { "big", 'f', big, 0 } };

        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = 0;
        self->s.limits.max_stream_bytes = 4096;
        refuse_layer(self, large, ELEMENTSOF(large), "has more than 4096 bytes");
        self->s.limits.max_stream_bytes = LAYER_LIMITS_DEFAULT.max_stream_bytes;
        self->s.limits.max_usec = 1;
        refuse_layer(self, some, ELEMENTSOF(some), "unpacking the layer took longer than");
}

TEST_F(store, rm_gc_and_use_lock) {
        _cleanup_free_ char *err = NULL;
        ImageRecord rec = {};
        int use;

        if (!is_root())
                TEST_SKIP("whiteouts need root");
        ASSERT_OK(layout_of(self->layout, base, ELEMENTSOF(base), upper, ELEMENTSOF(upper), self->digest));
        ASSERT_OK(image_store_import(&self->s, self->layout, NULL, &rec, &err));
        image_record_done(&rec);
        ASSERT_OK(image_store_import(&self->s, self->layout, "keep:me", &rec, &err));
        use = image_store_use(&self->s, rec.digest);
        ASSERT_TRUE(use >= 0);
        ASSERT_ERROR(EBUSY, image_store_remove(&self->s, rec.digest, &err));     /* a job holds it */
        close(use);
        image_record_done(&rec);
        ASSERT_OK(image_store_remove(&self->s, "test/img:one", &err));  /* one of two names */
        ASSERT_OK(image_store_lookup(&self->s, "keep:me", &rec, NULL) >= 0 ? 0 : -1);
        image_record_done(&rec);
        ASSERT_OK(image_store_remove(&self->s, "keep:me", &err));       /* the last name: the image goes */
        ASSERT_ERROR(ENOENT, image_store_lookup(&self->s, self->digest, &rec, NULL));
        ASSERT_OK(image_store_gc(&self->s, NULL));
        ASSERT_EQ(0, count_dir(&self->s, "layers"));
        ASSERT_EQ(0, count_dir(&self->s, "blobs/sha256"));
}

/* An importer killed at any moment leaves either the whole image or nothing a look-up returns, and the
 * next import or gc clears what it left. */
TEST_F(store, sigkill_during_import) {
        enum { FILES = 3000 };
        Entry *many = calloc(FILES, sizeof *many);
        char names[FILES][16];
        _cleanup_free_ char *err = NULL;
        ImageRecord rec = {};

        for (size_t i = 0; i < FILES; i++) {
                snprintf(names[i], sizeof names[i], "f%05zu", i);
                many[i] = (Entry) { names[i], 'f', "some content of a file in a layer", 0 };
        }
        ASSERT_OK(layout_of(self->layout, many, FILES, NULL, 0, self->digest));
        free(many);
        /* the killed importers' unpacking children come back here to be reaped */
        ASSERT_OK(RET_NERRNO(prctl(PR_SET_CHILD_SUBREAPER, 1)));
        for (unsigned delay_us = 1000; delay_us <= 4096000; delay_us *= 4) {
                pid_t pid = fork();
                int status, r;

                ASSERT_TRUE(pid >= 0);
                if (pid == 0) {
                        ImageRecord c = {};
                        _exit(image_store_import(&self->s, self->layout, NULL, &c, NULL) < 0 ? 1 : 0);
                }
                usleep(delay_us);
                kill(pid, SIGKILL);
                ASSERT_EQ(pid, waitpid(pid, &status, 0));
                TEST_LOG("killed after %u us: %s", delay_us, WIFSIGNALED(status) ? "mid-import" : "finished");
                r = image_store_lookup(&self->s, self->digest, &rec, NULL);
                if (r >= 0) {   /* finished before the kill: then it is whole */
                        char p[PATH_MAX];
                        snprintf(p, sizeof p, "layers/%s", digest_hex(rec.layers[0]));
                        EXPECT_EQ(FILES, count_dir(&self->s, p));
                        image_record_done(&rec);
                } else
                        EXPECT_EQ(-ENOENT, r);
                /* a layer directory is either absent or complete */
                if (count_dir(&self->s, "layers") == 1) {
                        DIR *d;
                        struct dirent *de;
                        char p[PATH_MAX + 80];
                        snprintf(p, sizeof p, "%s/layers", self->s.path);
                        d = opendir(p);
                        while ((de = readdir(d)))
                                if (de->d_name[0] != '.') {
                                        snprintf(p, sizeof p, "layers/%s", de->d_name);
                                        EXPECT_EQ(FILES, count_dir(&self->s, p));
                                }
                        closedir(d);
                }
                /* start again from nothing but what the kill left; the importer's unpacking child dies
                 * with it (PR_SET_PDEATHSIG) and holds the import's lock until it has */
                (void) image_store_remove(&self->s, self->digest, NULL);
                for (unsigned i = 0; i < 200 && count_dir(&self->s, "tmp") > 0; i++) {
                        ASSERT_OK(image_store_gc(&self->s, NULL));
                        usleep(10000);
                }
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;       /* the unpacking children, reparented to this subreaper */
                ASSERT_EQ(0, count_dir(&self->s, "tmp"));
                ASSERT_OK(image_store_gc(&self->s, NULL));
                ASSERT_EQ(0, count_dir(&self->s, "layers"));
        }
        ASSERT_OK(image_store_import(&self->s, self->layout, NULL, &rec, &err));
        image_record_done(&rec);
        /* the killed importers' unpacking children, reparented here, die with them: reap them */
        for (unsigned i = 0; i < 100; i++) {
                pid_t p = waitpid(-1, NULL, WNOHANG);
                if (p < 0)
                        break;
                if (p == 0)
                        usleep(10000);
        }
}

/* A layer that comes twice (docker save of an image with two empty layers) is imported, and a job's
 * overlay gets it once, at its topmost place: overlayfs refuses the same directory twice. */
TEST_F(store, repeated_layer) {
        _cleanup_(image_layout_done) ImageLayout l = {};
        _cleanup_free_ char *err = NULL, *expect_top = NULL;
        const Entry a[] = { { "a", 'f', "a", 0 } }, b[] = { { "b", 'f', "b", 0 } };
        char *tars[3] = {}, run[PATH_MAX];
        size_t lens[3];
        ImageRecord rec = {};

        ASSERT_OK(make_tar(a, 1, &tars[0], &lens[0]));
        ASSERT_OK(make_tar(b, 1, &tars[1], &lens[1]));
        tars[2] = tars[0];
        lens[2] = lens[0];
        ASSERT_OK(make_layout(self->layout, tars, lens, 3, self->digest));
        free(tars[0]);
        free(tars[1]);
        ASSERT_OK(image_store_import(&self->s, self->layout, NULL, &rec, &err));
        ASSERT_EQ(3u, rec.n_layers);
        snprintf(run, sizeof run, "%s/run", self->dir);
        ASSERT_OK(setenv("POND_RUNDIR", run, 1));
        ASSERT_OK(image_prepare_store(rec.digest, self->s.path, &l, &err));
        ASSERT_EQ(2u, (unsigned) strv_length(l.lowers));
        ASSERT_OK(image_store_layer_path(&self->s, rec.layers[2], &expect_top));
        ASSERT_STREQ(expect_top, l.lowers[0]);
        ASSERT_TRUE(l.use_fd && *l.use_fd >= 0);
        image_record_done(&rec);
}

TEST(names) {
        _cleanup_free_ char *n = NULL;

        ASSERT_TRUE(image_name_is_valid("debian:trixie"));
        ASSERT_TRUE(image_name_is_valid("localhost/my_tools/node:22.1-slim"));
        ASSERT_FALSE(image_name_is_valid("Debian:trixie"));
        ASSERT_FALSE(image_name_is_valid("a/../b:x"));
        ASSERT_FALSE(image_name_is_valid("a:"));
        ASSERT_FALSE(image_name_is_valid("a//b"));
        ASSERT_FALSE(image_name_is_valid("/abs"));
        ASSERT_TRUE(image_ref_is_valid("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
        ASSERT_FALSE(image_ref_is_valid("sha256:0123"));
        ASSERT_OK(image_name_normalise("debian", &n));
        ASSERT_STREQ("debian:latest", n);
}

static bool has(char **l, const char *s) {
        for (size_t i = 0; l && l[i]; i++)
                if (streq(l[i], s))
                        return true;
        return false;
}

/* The image's Env sits between pond's base and the spec's; pond's own variables are not the image's. */
TEST(image_environment) {
        char *image_env[] = { "PATH=/opt/node/bin:/usr/bin:/bin", "HOME=/root", "USER=root", "LANG=de_DE.UTF-8",
                              "POND_JOB_ID=forged", "NODE_ENV=production", "FOO=image", NULL };
        char *spec_env[] = { "FOO=spec", NULL };
        char *posture[] = { "HTTPS_PROXY=http://10.0.0.1:3128", NULL };
        ResolvedPolicy r = { .confined = true };
        JobSpec spec = { .job_id = (char *) "job-1", .env = spec_env };
        _cleanup_strv_free_ char **env = NULL;

        ASSERT_OK(oci_job_environment_image(&r, &spec, image_env, posture, &env));
        ASSERT_TRUE(has(env, "PATH=/opt/node/bin:/usr/bin:/bin"));
        ASSERT_TRUE(has(env, "LANG=de_DE.UTF-8"));
        ASSERT_TRUE(has(env, "NODE_ENV=production"));
        ASSERT_TRUE(has(env, "HOME=/home/job"));
        ASSERT_TRUE(has(env, "USER=job"));
        ASSERT_TRUE(has(env, "POND_JOB_ID=job-1"));
        ASSERT_TRUE(has(env, "FOO=spec"));
        ASSERT_TRUE(has(env, "HTTPS_PROXY=http://10.0.0.1:3128"));
        ASSERT_FALSE(has(env, "HOME=/root"));
        ASSERT_FALSE(has(env, "POND_JOB_ID=forged"));
}

TEST(policy_images_allowed) {
        char *list[] = { "debian:trixie", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                         "host", NULL };
        char *star[] = { "*", NULL };
        char *other = "sha256:1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        char *names[] = { "other:1", "debian:trixie", NULL }, *none[] = { "other:1", NULL };
        ResolvedPolicy r = { .images_allowed = list };
        ResolvedPolicy any = { .images_allowed = star };

        ASSERT_TRUE(policy_image_allowed(&r, NULL, names));
        ASSERT_FALSE(policy_image_allowed(&r, NULL, none));
        ASSERT_TRUE(policy_image_allowed(&r, list[1], none));
        ASSERT_FALSE(policy_image_allowed(&r, other, none));
        ASSERT_TRUE(policy_image_allowed(&any, other, NULL));
        ASSERT_FALSE(policy_image_allowed(NULL, NULL, names));
}

TEST_MAIN()
