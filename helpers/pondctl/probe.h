/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* probe.h: what this host can really enforce (pondctl probe): each backend (binary present and a trivial
 * container actually run under it), KVM, Landlock, seccomp, the cgroup layout and its usable controllers,
 * nftables, user namespaces and systemd; and the capabilities a worker advertises, derived from that and
 * nothing else. Every check is made for real; an item that cannot be checked is reported absent. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "basic/macro.h"
#include "cgroup/cgroup-util.h"
#include "runtime/runtime.h"

/* One per runtime provider, in the table's order. */
typedef struct ProbeBackendResult {
        const char *name; /* the provider's */
        bool present;    /* the binary exists and is executable */
        char *path;
        char *version;   /* first line of its version output, or NULL */
        bool works;      /* a trivial container ran and exited 0 */
        char *platform;  /* runsc: the platform it ran on; kata: the runtime flavour; else NULL */
        char *reason;    /* why not present / not working; NULL when it works */
} ProbeBackendResult;

typedef struct ProbeFeature {
        bool available;
        char *detail;    /* a version or a setting when available, else NULL */
        char *reason;    /* why not available, else NULL */
} ProbeFeature;

/* The v1 controller names and v2 controller names pond limits through. */
typedef enum ProbeController {
        PROBE_CONTROLLER_CPU,
        PROBE_CONTROLLER_MEMORY,
        PROBE_CONTROLLER_PIDS,
        PROBE_CONTROLLER_CPUSET,
        PROBE_CONTROLLER_IO,      /* v1: blkio */
        _PROBE_CONTROLLER_MAX,
} ProbeController;

const char *probe_controller_to_string(ProbeController c);

typedef struct ProbeCgroup {
        CgroupLayout layout;
        /* Per controller: 0 not found, 1 or 2: the hierarchy version it is usable in. */
        int usable[_PROBE_CONTROLLER_MAX];
        /* Why a controller is not usable (read-only mount, not delegated...), or NULL. */
        char *reason[_PROBE_CONTROLLER_MAX];
} ProbeCgroup;

typedef struct HostProbe {
        ProbeBackendResult *backends;
        size_t n_backends;
        ProbeFeature kvm;
        unsigned landlock_abi;  /* 0: not available */
        char *landlock_reason;
        ProbeFeature seccomp;   /* detail: the filter actions the kernel has */
        ProbeCgroup cgroup;
        ProbeFeature nftables;  /* detail: nft's version */
        ProbeFeature userns;    /* detail: max_user_namespaces */
        ProbeFeature systemd;   /* detail: the manager's Version */
        ProbeFeature resource_view; /* LXCFS answers (runc jobs' view of their resources) */
        char **capabilities;    /* derived: what this host advertises; NULL-terminated, never NULL */
} HostProbe;

/* Where the probe looks; NULL means the default. Tests point the backends at a binary that fails. */
typedef struct ProbeOptions {
        const char *binary;     /* every backend's binary; default: what its provider's locate() finds */
        const char *cgroup_root;/* default: /sys/fs/cgroup */
        uint64_t timeout_usec;  /* per trivial container; default 30 s */
} ProbeOptions;

int host_probe(const ProbeOptions *o, HostProbe **ret);
/* An empty probe: one unprobed result per provider (exposed for tests). */
int host_probe_new(HostProbe **ret);
HostProbe *host_probe_free(HostProbe *p);
static inline void host_probe_freep(HostProbe **p) {
        host_probe_free(*p);
}

/* The JSON document of `pondctl probe --json`; keys are stable (docs/dispatch.md). */
int host_probe_to_json(const HostProbe *p, json_object **ret);
/* Human-readable, one item per line. */
void host_probe_print(const HostProbe *p, FILE *f);

/* The result of the provider called name, or NULL. */
ProbeBackendResult *host_probe_backend(const HostProbe *p, const char *name);

/* Derives p->capabilities from the results (called by host_probe(); exposed for tests). */
int host_probe_derive_capabilities(HostProbe *p);

/* The pieces, each filling its part of HostProbe (probe-backend.c, probe-kernel.c, probe-cgroup.c). */
void probe_backend(const RuntimeProvider *provider, const ProbeOptions *o, ProbeBackendResult *ret);
void probe_backend_done(ProbeBackendResult *r);
void probe_kvm(ProbeFeature *ret);
void probe_landlock(unsigned *ret_abi, char **ret_reason);
void probe_seccomp(ProbeFeature *ret);
void probe_userns(ProbeFeature *ret);
void probe_nftables(ProbeFeature *ret);
void probe_systemd(ProbeFeature *ret);
void probe_resource_view(ProbeFeature *ret);
void probe_cgroup(const char *root, ProbeCgroup *ret);
