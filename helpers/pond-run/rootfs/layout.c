/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layout.c: what every job root is made of and how it goes away: the mount points every image must have,
 * the host image's rootfs and pond's generated /etc, an ImageLayout's release and the removal of a job's
 * root directories. image.c and image-job.c build on it. */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "policy/landlock.h"
#include "rootfs/layout.h"

/* Every image must provide these, or the runtime would have to create them in a read-only root (home/job:
 * a confined job's home, HOME_DIR). */
static const char *const mount_points[] = { "usr", "etc", "proc", "dev", "sys", "tmp", "workspace", "home",
                                            "home/job" };
/* usr-merged top-level links, created only for those the host has as directories in /usr. */
static const char *const usr_links[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };

#define COPY_MAX (16U << 20)

/* Users and groups the job can name. The job's home is /tmp: the only writable place besides the
 * workspace. tty (5) is the group devpts gives the pty it allocates. */
static const char passwd_text[] =
        "root:x:0:0:root:/root:/bin/sh\n"
        "job:x:1000:1000:pond job:/tmp:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group_text[] =
        "root:x:0:\n"
        "tty:x:5:\n"
        "job:x:1000:\n"
        "nogroup:x:65534:\n";
static const char hosts_text[] =
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "127.0.1.1\t" IMAGE_HOSTNAME "\n";
/* No nameserver on purpose: the job has no DNS of its own (the egress proxy resolves and checks names).
 * Without a nameserver line glibc, musl and Go all ask 127.0.0.1:53, which in the job's network
 * namespace has no listener and refuses at once instead of timing out; one short try bounds the wait
 * if a packet is ever swallowed. An explicit unreachable address would only add a timeout. */
static const char resolv_text[] =
        "# pond: this sandbox has no DNS. Use HTTPS_PROXY; the proxy resolves allowlisted hosts.\n"
        "options timeout:1 attempts:1\n";
static const char nsswitch_text[] =
        "passwd: files\n"
        "group: files\n"
        "shadow: files\n"
        "hosts: files dns\n"
        "networks: files\n"
        "protocols: files\n"
        "services: files\n"
        "ethers: files\n"
        "rpc: files\n";

const char *image_mount_point_missing(int rootfd) {
        for (size_t i = 0; i < ELEMENTSOF(mount_points); i++) {
                struct stat st;

                if (fstatat(rootfd, mount_points[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        return mount_points[i];
        }
        return NULL;
}

static int mkdir_mode_at(int dirfd, const char *name, mode_t mode) {
        if (mkdirat(dirfd, name, mode) < 0)
                return -errno;
        return RET_NERRNO(fchmodat(dirfd, name, mode, 0));
}

static int write_text_at(int dirfd, const char *name, const void *buf, size_t len) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        r = write_all(fd, buf, len);
        if (r < 0)
                return r;
        return RET_NERRNO(fchmod(fd, 0644));
}

/* A copy, not a bind: the host may replace its file at any time; the job keeps what it started with. */
static int copy_optional(const char *src, int dirfd, const char *name) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_full_file(src, COPY_MAX, &buf, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return write_text_at(dirfd, name, buf, len);
}

/* Alternatives are symlinks into /usr (gcc, cc, editor, python ...): recreated as they are, never
 * followed, so a link to a host file outside /usr stays dangling instead of exposing the file. */
static int copy_alternatives(int etcfd) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_close_ int altfd = -EBADF;
        struct dirent *de;
        int r;

        d = opendir("/etc/alternatives");
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        r = mkdir_mode_at(etcfd, "alternatives", 0755);
        if (r < 0)
                return r;
        altfd = openat(etcfd, "alternatives", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (altfd < 0)
                return -errno;
        while ((de = readdir(d))) {
                char target[PATH_MAX];
                ssize_t n;

                if (de->d_type != DT_LNK)
                        continue;
                n = readlinkat(dirfd(d), de->d_name, target, sizeof target - 1);
                if (n < 0)
                        return -errno;
                target[n] = 0;
                if (symlinkat(target, altfd, de->d_name) < 0)
                        return -errno;
        }
        return 0;
}

int image_make_mount_points(int rootfd) {
        for (size_t i = 0; i < ELEMENTSOF(mount_points); i++) {
                /* runc gives a tmpfs root the mode of the directory it is mounted on, whatever mode= says */
                int r = mkdir_mode_at(rootfd, mount_points[i], streq(mount_points[i], "tmp") ? 01777 : 0755);
                if (r < 0)
                        return r;
        }
        /* pond-init's mount point: runc makes it in the job's /dev tmpfs, but runsc's gofer makes a bind
         * mount's point in the root it serves, which is read-only here (measured: EROFS at create) */
        return write_text_at(rootfd, &LANDLOCK_INIT_PATH[1], "", 0);
}

int image_make_host_rootfs(int jobfd) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = mkdir_mode_at(jobfd, "rootfs", 0755);
        if (r < 0)
                return r;
        fd = openat(jobfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = image_make_mount_points(fd);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(usr_links); i++) {
                char src[64], dst[64];
                struct stat st;

                snprintf(src, sizeof src, "/usr/%s", usr_links[i]);
                if (lstat(src, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                snprintf(dst, sizeof dst, "usr/%s", usr_links[i]);
                if (symlinkat(dst, fd, usr_links[i]) < 0)
                        return -errno;
        }
        return 0;
}

static int make_etc_files(int etcfd, bool host) {
        static const struct {
                const char *name;
                const char *text;
                size_t len;
        } files[] = {
#define F(n, t) { n, t, sizeof(t) - 1 }
                F("passwd", passwd_text),    F("group", group_text),
                F("hosts", hosts_text),      F("resolv.conf", resolv_text),
                F("nsswitch.conf", nsswitch_text), F("hostname", IMAGE_HOSTNAME "\n"),
#undef F
        };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                r = write_text_at(etcfd, files[i].name, files[i].text, files[i].len);
                if (r < 0)
                        return r;
        }
        if (!host)
                return 0;       /* an image's own os-release, mtab and loader cache stay its own */
        if (symlinkat("../usr/lib/os-release", etcfd, "os-release") < 0 ||
            symlinkat("../proc/self/mounts", etcfd, "mtab") < 0)
                return -errno;
        return copy_optional("/etc/ld.so.cache", etcfd, "ld.so.cache");
}

static int make_etc_ssl(int etcfd, bool host) {
        _cleanup_close_ int sslfd = -EBADF, certsfd = -EBADF;
        int r;

        r = mkdir_mode_at(etcfd, "ssl", 0755);
        if (r < 0)
                return r;
        sslfd = openat(etcfd, "ssl", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sslfd < 0)
                return -errno;
        r = mkdir_mode_at(sslfd, "certs", 0755);
        if (r < 0)
                return r;
        certsfd = openat(sslfd, "certs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (certsfd < 0)
                return -errno;
        /* OpenSSL's default config: /usr/lib/ssl/openssl.cnf points here (an image brings its own) */
        r = host ? copy_optional("/etc/ssl/openssl.cnf", sslfd, "openssl.cnf") : 0;
        if (r < 0)
                return r;
        return copy_optional(IMAGE_CA_BUNDLE, certsfd, "ca-certificates.crt");
}

int image_make_host_etc(int jobfd) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = mkdir_mode_at(jobfd, "etc", 0755);
        if (r < 0)
                return r;
        fd = openat(jobfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = make_etc_files(fd, true);
        if (r >= 0)
                r = make_etc_ssl(fd, true);
        if (r >= 0)
                r = copy_alternatives(fd);
        return r;
}

int image_etc_populate(int etcfd) {
        int r = make_etc_files(etcfd, false);
        return r < 0 ? r : make_etc_ssl(etcfd, false);
}

void image_layout_done(ImageLayout *l) {
        if (!l)
                return;
        free(l->rootfs);
        free(l->host_usr);
        free(l->etc);
        free(l->digest);
        free(l->name);
        strv_free(l->names);
        strv_free(l->env);
        free(l->workdir);
        strv_free(l->lowers);
        if (l->use_fd) {
                safe_close(*l->use_fd);  /* releases the use lock */
                free(l->use_fd);
        }
        *l = (ImageLayout) {};
}

static int remove_below(int jobfd, const struct stat *job_st, const char *name) {
        struct statx stx;

        if (statx(jobfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) < 0)
                return errno == ENOENT ? 0 : -errno;
        /* rm_rf_at() guards what is below; the top itself must not be a mount point either (a bind mount of
         * the same file system has the same st_dev, hence the mount-root attribute as well). */
        if (S_ISDIR(stx.stx_mode) &&
            (makedev(stx.stx_dev_major, stx.stx_dev_minor) != job_st->st_dev ||
             (stx.stx_attributes_mask & stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)))
                return -EBUSY;
        return rm_rf_at(jobfd, name);
}

/* A store image's overlay, or the idmapped root of a job with a uid range of its own (with what is mounted
 * on it: a lazy detach takes the whole tree), stacked if an earlier attempt mounted it twice: detached until
 * nothing is left, so that remove_below() sees the plain directory or fails closed with -EBUSY. */
static int unmount_at(int jobfd, const char *name) {
        char path[64];

        snprintf(path, sizeof path, "/proc/self/fd/%d/%s", jobfd, name);
        for (unsigned i = 0; i < 16; i++)
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        return errno == EINVAL || errno == ENOENT || errno == EPERM ? 0 : -errno;
        return -EBUSY;
}

int image_cleanup(const char *job_dir) {
        _cleanup_close_ int jobfd = -EBADF;
        struct stat st;
        int r;

        jobfd = open(job_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (jobfd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(jobfd, &st) < 0)
                return -errno;
        r = unmount_at(jobfd, "root");
        if (r >= 0)
                r = unmount_at(jobfd, "rootfs");
        if (r >= 0)
                r = remove_below(jobfd, &st, "root");
        if (r >= 0)
                r = remove_below(jobfd, &st, "rootfs");
        if (r >= 0)
                r = remove_below(jobfd, &st, "image-top");
        if (r < 0)
                return r;
        return remove_below(jobfd, &st, "etc");
}
