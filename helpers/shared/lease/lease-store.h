/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lease-store.h: the one store of the worker's leases (cpus, host uid ranges, addresses and network names,
 * admission): a directory with one small file per lease, named by what it leases (the job id, with a prefix
 * where one directory holds several kinds), holding the lease's record. Read and changed only under an
 * flock of the directory; every record is written whole (temporary file, fsync, rename or link, fsync of
 * the directory), so neither a concurrent reader nor a power cut ever sees half of one. What proves a lease
 * stale is the caller's to say (a predicate): the store only removes what the proof allows. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/* The most entries a listing returns (-E2BIG past it): far more than a worker's jobs, pool slots and
 * queue together. */
#define LEASE_STORE_ENTRIES_MAX 65536U

typedef enum LeaseStoreFlags {
        LEASE_STORE_CREATE = 1 << 0,    /* create the directory (0700) if need be; else a missing one: -ENOENT */
        LEASE_STORE_SHARED = 1 << 1,    /* a shared lock, for readers; else exclusive (needed to change it) */
        LEASE_STORE_MISSING_OK = 1 << 2, /* a missing directory is no store, not an error: nothing to release */
} LeaseStoreFlags;

typedef struct LeaseStore {
        int dfd;                        /* the directory, flocked while it is open */
        bool shared;
} LeaseStore;

#define LEASE_STORE_NULL ((LeaseStore) { .dfd = -EBADF })

typedef struct LeaseEntry {
        char *name;                     /* the file's name, prefix included */
        char *text;                     /* its record; NULL if unreadable (or too long), or not read */
} LeaseEntry;

typedef struct LeaseList {
        LeaseEntry *entries;            /* sorted by name */
        size_t n;
} LeaseList;

/* Opens dir and takes its flock (blocking until it is free): held until lease_store_close(). Returns 1;
 * 0 (and *ret untouched) for a missing directory with LEASE_STORE_MISSING_OK. */
int lease_store_open(const char *dir, LeaseStoreFlags flags, LeaseStore *ret);
/* Drops the lock; a closed (or never opened) store is fine. */
void lease_store_close(LeaseStore *s);

/* An entry's name: a file name of the directory, never hidden (the temporary files are) and never a path. */
bool lease_name_is_valid(const char *name);

/* The record of name, at most max bytes (-EFBIG past it), NUL-terminated; -ENOENT: no such lease. */
int lease_store_read(const LeaseStore *s, const char *name, size_t max, char **ret);
/* Writes name's record whole, replacing any: a reader sees the old record or the new one. */
int lease_store_write(const LeaseStore *s, const char *name, const char *text);
/* The same for a new lease only: -EEXIST if name exists (its record untouched). Exclusive even against
 * writers that hold no lock (O_EXCL's guarantee: the record is linked into place, never renamed over). */
int lease_store_create(const LeaseStore *s, const char *name, const char *text);
/* Removes name; no such lease is fine. */
int lease_store_remove(const LeaseStore *s, const char *name);

/* The entries whose names start with prefix (NULL or "": all but the hidden ones), each record read up to
 * max bytes (max 0: names only). */
int lease_store_list(const LeaseStore *s, const char *prefix, size_t max, LeaseList *ret);
void lease_list_free(LeaseList *l);

/* Whether a lease's holder is proven gone: > 0 stale (the lease may go), 0 live, < 0 cannot tell (kept).
 * text is the record (NULL: unreadable or not read). */
typedef int (*LeaseStaleFn)(const LeaseStore *s, const char *name, const char *text, void *userdata);

/* Gives name back: removed if stale() proves it stale (stale NULL: always), else kept: -EBUSY if live,
 * stale()'s error if it cannot tell. No such lease is fine. The record is read up to max bytes for
 * stale(). */
int lease_store_release(const LeaseStore *s, const char *name, size_t max, LeaseStaleFn stale, void *userdata);
/* The same in one call: opens dir's store (no directory: no lease), releases name, and drops the lock. */
int lease_release(const char *dir, const char *name, size_t max, LeaseStaleFn stale, void *userdata);
/* Removes every entry of prefix that stale() proves stale (an entry it cannot judge stays). Returns how
 * many went, or the first error of a listing or a removal. */
int lease_store_sweep(const LeaseStore *s, const char *prefix, size_t max, LeaseStaleFn stale, void *userdata);
