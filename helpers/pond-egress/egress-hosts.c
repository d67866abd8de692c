/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-hosts.c: the hosts-file table of the pond-egress resolver (tests and air-gapped sites). Each
 * address is parsed once with inet_pton, which takes only the canonical dotted quad and RFC 4291 text
 * (not glibc getaddrinfo's "127.1" or "2130706433"), and kept as the sockaddr that will be dialled. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "basic/fileio.h"
#include "egress-hosts.h"
#include "sidecar/egress-allow.h"

#define HOSTS_FILE_MAX (4 * 1024 * 1024)
#define HOSTS_ENTRIES_MAX 65536

void egress_hosts_done(EgressHosts *h) {
        for (size_t i = 0; i < h->n; i++)
                free(h->entries[i].name);
        free(h->entries);
        *h = (EgressHosts) {};
}

static int parse_address(const char *s, EgressSockaddr *ret) {
        *ret = (EgressSockaddr) {};
        struct sockaddr_in *s4 = (struct sockaddr_in *) &ret->sa;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ret->sa;

        if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
                s4->sin_family = AF_INET;
                ret->len = sizeof *s4;
        } else if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
                s6->sin6_family = AF_INET6;
                ret->len = sizeof *s6;
        } else
                return -EINVAL;
        return 0;
}

static int add_entry(EgressHosts *h, const EgressSockaddr *a, const char *name) {
        _cleanup_free_ char *n = NULL;
        EgressHostsEntry *e;

        if (egress_name_normalize(name, strlen(name), &n) < 0)
                return 0;
        if (h->n >= HOSTS_ENTRIES_MAX)
                return -E2BIG;
        e = reallocarray(h->entries, h->n + 1, sizeof *e);
        if (!e)
                return -ENOMEM;
        h->entries = e;
        h->entries[h->n++] = (EgressHostsEntry) { TAKE_PTR(n), *a };
        return 0;
}

int egress_hosts_load(EgressHosts *h, const char *path, char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        char *line, *save = NULL;
        unsigned lineno = 0;
        int r;

        r = read_full_file(path, HOSTS_FILE_MAX, &buf, NULL);
        if (r < 0)
                return r;
        for (char *p = buf; (line = strsep(&p, "\n")); ) {
                EgressSockaddr a;
                char *tok, *hash = strchr(line, '#');

                lineno++;
                if (hash)
                        *hash = 0;
                tok = strtok_r(line, " \t\r", &save);
                if (!tok)
                        continue;
                if (parse_address(tok, &a) < 0) {
                        if (ret_error && asprintf(ret_error, "%s:%u: not an IPv4 or IPv6 address", path,
                                                  lineno) < 0)
                                *ret_error = NULL;
                        return -EINVAL;
                }
                while ((tok = strtok_r(NULL, " \t\r", &save))) {
                        r = add_entry(h, &a, tok);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int egress_hosts_lookup(const EgressHosts *h, const char *name, uint16_t port, EgressSockaddr **ret,
                        size_t *ret_n) {
        _cleanup_free_ EgressSockaddr *l = NULL;
        size_t n = 0;

        for (size_t i = 0; i < h->n; i++) {
                int r;

                if (!streq(h->entries[i].name, name))
                        continue;
                r = egress_sockaddr_append(&l, &n, &h->entries[i].addr, port);
                if (r < 0)
                        return r;
        }
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}
