/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lease-store.c: the lease directory: its flock, whole-record writes (a temporary file renamed or linked into
 * place), reads, removal, listing, and removal of what a caller's predicate proves stale. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "lease/lease-store.h"

/* Room for the temporary file's name, ".NAME.tmp", within NAME_MAX. */
#define LEASE_NAME_MAX (NAME_MAX - 5)

int lease_store_open(const char *dir, LeaseStoreFlags flags, LeaseStore *ret) {
        _cleanup_close_ int dfd = -EBADF;
        bool shared = flags & LEASE_STORE_SHARED;
        int r;

        if (flags & LEASE_STORE_CREATE) {
                r = mkdir_p(dir, 0700);
                if (r < 0)
                        return r;
        }
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT && (flags & LEASE_STORE_MISSING_OK) ? 0 : -errno;
        if (flock(dfd, shared ? LOCK_SH : LOCK_EX) < 0)
                return -errno;
        *ret = (LeaseStore) { .dfd = TAKE_FD(dfd), .shared = shared };
        return 1;
}

void lease_store_close(LeaseStore *s) {
        if (!s)
                return;
        s->dfd = safe_close(s->dfd);
}

bool lease_name_is_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        return n > 0 && n <= LEASE_NAME_MAX && name[0] != '.' && !strchr(name, '/');
}

/* A change needs the exclusive lock: under a shared one another reader may be looking. */
static int check_change(const LeaseStore *s, const char *name) {
        if (!lease_name_is_valid(name))
                return -EINVAL;
        return s->dfd < 0 ? -EBADF : s->shared ? -EPERM : 0;
}

int lease_store_read(const LeaseStore *s, const char *name, size_t max, char **ret) {
        if (!lease_name_is_valid(name))
                return -EINVAL;
        return read_full_file_at(s->dfd, name, max, ret, NULL);
}

int lease_store_write(const LeaseStore *s, const char *name, const char *text) {
        int r = check_change(s, name);

        return r < 0 ? r : write_file_atomic_at(s->dfd, name, text, strlen(text), 0600);
}

int lease_store_create(const LeaseStore *s, const char *name, const char *text) {
        _cleanup_close_ int fd = -EBADF;
        char tmp[NAME_MAX + 1];
        int r = check_change(s, name);

        if (r < 0)
                return r;
        snprintf(tmp, sizeof tmp, ".%s.tmp", name);
        (void) unlinkat(s->dfd, tmp, 0); /* a leftover of a power cut */
        fd = openat(s->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        /* The mode as given, whatever the umask; then the record, whole on disk before it has a name. */
        r = fchmod(fd, 0600) < 0 ? -errno : write_all(fd, text, strlen(text));
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        /* link(), unlike rename(), never replaces: the one who links first holds the lease. */
        if (r >= 0 && linkat(s->dfd, tmp, s->dfd, name, 0) < 0)
                r = -errno;
        (void) unlinkat(s->dfd, tmp, 0);
        if (r < 0)
                return r;
        (void) fsync(s->dfd);
        return 0;
}

int lease_store_remove(const LeaseStore *s, const char *name) {
        int r = check_change(s, name);

        if (r < 0)
                return r;
        return unlinkat(s->dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const LeaseEntry *) a)->name, ((const LeaseEntry *) b)->name);
}

void lease_list_free(LeaseList *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++) {
                free(l->entries[i].name);
                free(l->entries[i].text);
        }
        free(l->entries);
        l->entries = NULL;
        l->n = 0;
}

static int list_add(LeaseList *l, const LeaseStore *s, const char *name, size_t max) {
        LeaseEntry e = {};
        LeaseEntry *grown;

        if (l->n >= LEASE_STORE_ENTRIES_MAX)
                return -E2BIG;
        grown = reallocarray(l->entries, l->n + 1, sizeof *grown);
        if (!grown)
                return -ENOMEM;
        l->entries = grown;
        e.name = strdup(name);
        if (!e.name)
                return -ENOMEM;
        if (max > 0 && read_full_file_at(s->dfd, name, max, &e.text, NULL) < 0)
                e.text = NULL;
        l->entries[l->n++] = e;
        return 0;
}

int lease_store_list(const LeaseStore *s, const char *prefix, size_t max, LeaseList *ret) {
        _cleanup_(lease_list_free) LeaseList l = {};
        _cleanup_closedir_ DIR *d = NULL;
        size_t plen = prefix ? strlen(prefix) : 0;
        struct dirent *de;
        int r;

        r = opendir_fd(s->dfd, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                if (!lease_name_is_valid(de->d_name) || strncmp(de->d_name, prefix ?: "", plen) != 0)
                        continue;
                r = list_add(&l, s, de->d_name, max);
                if (r < 0)
                        return r;
        }
        if (l.n > 0)
                qsort(l.entries, l.n, sizeof *l.entries, entry_cmp);
        *ret = l;
        l = (LeaseList) {};
        return 0;
}

int lease_store_release(const LeaseStore *s, const char *name, size_t max, LeaseStaleFn stale, void *userdata) {
        _cleanup_free_ char *text = NULL;
        int r = check_change(s, name);

        if (r < 0)
                return r;
        if (stale) {
                r = read_full_file_at(s->dfd, name, max, &text, NULL);
                if (r == -ENOENT)
                        return 0;
                r = stale(s, name, r < 0 ? NULL : text, userdata);
                if (r == 0)
                        return -EBUSY;
                if (r < 0)
                        return r;
        }
        return lease_store_remove(s, name);
}

int lease_release(const char *dir, const char *name, size_t max, LeaseStaleFn stale, void *userdata) {
        _cleanup_(lease_store_close) LeaseStore s = LEASE_STORE_NULL;
        int r = lease_store_open(dir, LEASE_STORE_MISSING_OK, &s);

        return r <= 0 ? r : lease_store_release(&s, name, max, stale, userdata);
}

int lease_store_sweep(const LeaseStore *s, const char *prefix, size_t max, LeaseStaleFn stale, void *userdata) {
        _cleanup_(lease_list_free) LeaseList l = {};
        int r, removed = 0;

        r = lease_store_list(s, prefix, max, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                if (stale(s, l.entries[i].name, l.entries[i].text, userdata) <= 0)
                        continue;
                r = lease_store_remove(s, l.entries[i].name);
                if (r < 0)
                        return r;
                removed++;
        }
        return removed;
}
