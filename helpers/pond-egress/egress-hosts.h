/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-hosts.h: the hosts-file table behind the pond-egress resolver. */
#pragma once

#include "egress-resolve.h"

typedef struct EgressHostsEntry {
        char *name; /* normalized */
        EgressSockaddr addr;
} EgressHostsEntry;

typedef struct EgressHosts {
        EgressHostsEntry *entries;
        size_t n;
} EgressHosts;

int egress_hosts_load(EgressHosts *h, const char *path, char **ret_error);
/* Every address of name, in file order, with port set; -ENOENT if none. */
int egress_hosts_lookup(const EgressHosts *h, const char *name, uint16_t port, EgressSockaddr **ret,
                        size_t *ret_n);
void egress_hosts_done(EgressHosts *h);
