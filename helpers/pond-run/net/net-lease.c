/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* net-lease.c: per-job /30 blocks from a private pool, and the claims on the job's network object names.
 * A lease is a file named after the block, created with O_EXCL (so two jobs never get the same block) and
 * holding the job id (so cleanup, which knows only the id, finds it). The search starts at a hash of the
 * id: usually the first probe is free. A name claim is a file "name-NAME" holding the job id, linked into
 * place whole (so no job ever sees it half-written): the job that holds it alone makes and removes the
 * objects of that name. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "basic/log.h"
#include "net/net.h"

static int pool_parse(const char *pool, uint32_t *ret_base, unsigned *ret_blocks) {
        char addr[32];
        const char *slash = strchr(pool, '/');
        struct in_addr a;
        unsigned len;

        if (!slash || (size_t) (slash - pool) >= sizeof addr || sscanf(slash + 1, "%u", &len) != 1 || len < 8 ||
            len > 30)
                return -EINVAL;
        memcpy(addr, pool, (size_t) (slash - pool));
        addr[slash - pool] = 0;
        if (inet_pton(AF_INET, addr, &a) != 1)
                return -EINVAL;
        *ret_base = ntohl(a.s_addr) & (len == 0 ? 0 : ~((1U << (32 - len)) - 1));
        *ret_blocks = 1U << (30 - len);
        return 0;
}

static unsigned start_index(const char *job_id, unsigned blocks) {
        uint8_t h[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(h, (const uint8_t *) job_id, strlen(job_id));
        return ((unsigned) h[0] << 24 | (unsigned) h[1] << 16 | (unsigned) h[2] << 8 | h[3]) % blocks;
}

static void fill(NetLease *l, uint32_t base, unsigned index) {
        l->index = index;
        l->host_addr.s_addr = htonl(base + index * 4 + 1);
        l->job_addr.s_addr = htonl(base + index * 4 + 2);
}

int net_lease_acquire(const char *lease_dir, const char *pool, const char *job_id, NetLease *ret) {
        _cleanup_close_ int dfd = -EBADF;
        uint32_t base;
        unsigned blocks, start;
        int r;

        r = pool_parse(pool, &base, &blocks);
        if (r < 0)
                return log_debug_errno(r, "Invalid address pool '%s'.", pool);
        r = mkdir_p(lease_dir, 0700);
        if (r < 0)
                return r;
        dfd = open(lease_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        start = start_index(job_id, blocks);
        for (unsigned i = 0; i < blocks; i++) {
                unsigned idx = (start + i) % blocks;
                char name[16];
                _cleanup_close_ int fd = -EBADF;

                snprintf(name, sizeof name, "%u", idx);
                fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0 && errno == EEXIST)
                        continue;
                if (fd < 0)
                        return -errno;
                r = write_all(fd, job_id, strlen(job_id));
                if (r < 0) {
                        (void) unlinkat(dfd, name, 0);
                        return r;
                }
                /* The reverse index lets the release find the block from the job id alone. */
                char byjob[JOB_ID_MAX + 8], text[16];
                snprintf(byjob, sizeof byjob, "job-%s", job_id);
                snprintf(text, sizeof text, "%u", idx);
                r = write_file_atomic_at(dfd, byjob, text, strlen(text), 0600);
                if (r < 0) {
                        (void) unlinkat(dfd, name, 0);
                        return r;
                }
                fill(ret, base, idx);
                return 0;
        }
        return log_debug_errno(EADDRINUSE, "Address pool %s is exhausted.", pool);
}

int net_lease_release(const char *lease_dir, const char *job_id) {
        _cleanup_close_ int dfd = open(lease_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *index = NULL, *owner = NULL;
        char byjob[JOB_ID_MAX + 8];
        unsigned idx;

        if (dfd < 0)
                return errno == ENOENT ? 0 : -errno;
        snprintf(byjob, sizeof byjob, "job-%s", job_id);
        if (read_full_file_at(dfd, byjob, 32, &index, NULL) < 0)
                return 0; /* no lease (never taken, or released already) */
        if (sscanf(index, "%u", &idx) == 1) {
                char name[16];
                snprintf(name, sizeof name, "%u", idx);
                /* Only a lease this job holds: never another job's. */
                if (read_full_file_at(dfd, name, 256, &owner, NULL) >= 0 && streq(owner, job_id) &&
                    unlinkat(dfd, name, 0) < 0)
                        return -errno;
        }
        return unlinkat(dfd, byjob, 0) < 0 && errno != ENOENT ? -errno : 0;
}

static int claim_file(const char *name, char ret[static NET_NAME_CLAIM_MAX]) {
        if (!name[0] || strchr(name, '/') || strlen(name) + 6 > NET_NAME_CLAIM_MAX)
                return -EINVAL;
        snprintf(ret, NET_NAME_CLAIM_MAX, "name-%s", name);
        return 0;
}

/* 1: job_id holds the claim file; 0: nobody does, or another job. */
static int claim_held(int dfd, const char *file, const char *job_id) {
        _cleanup_free_ char *owner = NULL;
        int r = read_full_file_at(dfd, file, JOB_ID_MAX + 1, &owner, NULL);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return streq(owner, job_id);
}

int net_name_claim(const char *lease_dir, const char *name, const char *job_id) {
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        char file[NET_NAME_CLAIM_MAX], proc[64];
        int r;

        r = claim_file(name, file);
        if (r < 0)
                return r;
        r = mkdir_p(lease_dir, 0700);
        if (r < 0)
                return r;
        dfd = open(lease_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        /* Written first, linked into place whole: a claim is never seen empty, and never replaced. */
        fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, job_id, strlen(job_id));
        if (r < 0)
                return r;
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, proc, dfd, file, AT_SYMLINK_FOLLOW) >= 0)
                return 0;
        if (errno != EEXIST)
                return -errno;
        r = claim_held(dfd, file, job_id);
        if (r < 0)
                return r;
        return r > 0 ? 0 : log_debug_errno(EADDRINUSE, "The network name %s is another job's.", name);
}

int net_name_claimed(const char *lease_dir, const char *name, const char *job_id) {
        _cleanup_close_ int dfd = -EBADF;
        char file[NET_NAME_CLAIM_MAX];
        int r;

        r = claim_file(name, file);
        if (r < 0)
                return r;
        dfd = open(lease_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : -errno;
        return claim_held(dfd, file, job_id);
}

int net_name_release(const char *lease_dir, const char *name, const char *job_id) {
        _cleanup_close_ int dfd = -EBADF;
        char file[NET_NAME_CLAIM_MAX];
        int r;

        r = claim_file(name, file);
        if (r < 0)
                return r;
        dfd = open(lease_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = claim_held(dfd, file, job_id);
        if (r <= 0)
                return r; /* never another job's claim */
        return unlinkat(dfd, file, 0) < 0 && errno != ENOENT ? -errno : 0;
}
