/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-resolve.c: the resolver of pond-egress, driven by the proxy's sd-event loop. Three sources:
 * a hosts file (egress-hosts.c), exactly one DNS server, or the worker's own nameservers (those of
 * /etc/resolv.conf), the last two through c-ares, configured so that nothing else of the host's resolver
 * configuration applies: no hosts file, no search domains, no sortlist, no sorting probes. The answer is
 * a list of sockaddrs; the caller classifies each and dials one of them, never a string. */
#include <ares.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "egress-hosts.h"
#include "egress-resolve.h"

#define ARES_FDS_MAX 16
/* As glibc's resolver (MAXNS): the nameservers of resolv.conf past the third are not asked. Three servers,
 * a UDP and a TCP socket each, fit ARES_FDS_MAX. */
#define NAMESERVERS_MAX 3
#define NAMESERVERS_SCAN_MAX 64
#define RESOLV_CONF_MAX (64 * 1024)

struct EgressResolver {
        sd_event *event;
        EgressHosts hosts;
        bool dns;
        ares_channel channel;
        sd_event_source *timer;
        struct {
                int fd;
                sd_event_source *source;
        } fds[ARES_FDS_MAX];
};

struct EgressQuery {
        EgressResolver *resolver;
        EgressResolveCallback cb; /* NULL once cancelled */
        void *userdata;
        sd_event_source *defer;   /* hosts mode */
        uint16_t port;
        char *name;
        bool in_call;             /* inside ares_getaddrinfo(): an answer now is delivered by defer */
        int early_r;
        EgressSockaddr *early;
        size_t n_early;
};

static EgressQuery *query_free(EgressQuery *q) {
        if (!q)
                return NULL;
        sd_event_source_disable_unref(q->defer);
        free(q->early);
        free(q->name);
        free(q);
        return NULL;
}

EgressResolver *egress_resolver_free(EgressResolver *r) {
        if (!r)
                return NULL;
        if (r->dns) {
                /* Calls every pending callback with ARES_EDESTRUCTION: those free their queries. */
                ares_destroy(r->channel);
                for (size_t i = 0; i < ARES_FDS_MAX; i++)
                        sd_event_source_disable_unref(r->fds[i].source);
                sd_event_source_disable_unref(r->timer);
        }
        egress_hosts_done(&r->hosts);
        sd_event_unref(r->event);
        free(r);
        return NULL;
}

int egress_resolver_new_hosts(sd_event *e, const char *path, EgressResolver **ret, char **ret_error) {
        _cleanup_(egress_resolver_freep) EgressResolver *r = calloc(1, sizeof *r);
        int k;

        if (!r)
                return -ENOMEM;
        r->event = sd_event_ref(e);
        k = egress_hosts_load(&r->hosts, path, ret_error);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

static void rearm_timer(EgressResolver *r) {
        struct timeval tv, *t = ares_timeout(r->channel, NULL, &tv);
        uint64_t now;

        if (!t) {
                sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
                return;
        }
        sd_event_now(r->event, CLOCK_MONOTONIC, &now);
        sd_event_source_set_time(r->timer, now + (uint64_t) t->tv_sec * 1000000 + (uint64_t) t->tv_usec + 1);
        sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        EgressResolver *r = userdata;

        ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        rearm_timer(r);
        return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        EgressResolver *r = userdata;
        bool rd = revents & (EPOLLIN | EPOLLERR | EPOLLHUP), wr = revents & (EPOLLOUT | EPOLLERR);

        ares_process_fd(r->channel, rd ? fd : ARES_SOCKET_BAD, wr ? fd : ARES_SOCKET_BAD);
        rearm_timer(r);
        return 0;
}

static void sock_state_cb(void *data, ares_socket_t fd, int readable, int writable) {
        EgressResolver *r = data;
        uint32_t events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
        size_t i, free_slot = ARES_FDS_MAX;

        for (i = 0; i < ARES_FDS_MAX; i++) {
                if (r->fds[i].source && r->fds[i].fd == fd)
                        break;
                if (!r->fds[i].source && free_slot == ARES_FDS_MAX)
                        free_slot = i;
        }
        if (i < ARES_FDS_MAX) {
                if (events)
                        sd_event_source_set_io_events(r->fds[i].source, events);
                else
                        r->fds[i].source = sd_event_source_disable_unref(r->fds[i].source);
                return;
        }
        /* With no slot left the query times out: c-ares opens one socket per server and protocol. */
        if (events && free_slot < ARES_FDS_MAX &&
            sd_event_add_io(r->event, &r->fds[free_slot].source, fd, events, on_io, r) >= 0)
                r->fds[free_slot].fd = fd;
}

/* A c-ares channel reading resolv_conf (NULL: c-ares's default, /etc/resolv.conf) for its nameservers and
 * nothing else of it: every option the file could set that matters here is set by pond. */
static int resolver_new_ares(sd_event *e, const char *resolv_conf, EgressResolver **ret) {
        _cleanup_(egress_resolver_freep) EgressResolver *r = NULL;
        struct ares_options o = {
                .flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES,
                .lookups = (char *) "b", /* DNS only: never the host's /etc/hosts */
                .sock_state_cb = sock_state_cb,
                .timeout = 2000,
                .tries = 2,
                .ndomains = 0,
                .nsort = 0,
                .resolvconf_path = (char *) resolv_conf,
        };
        int k;

        k = ares_library_init(ARES_LIB_INIT_ALL);
        if (k != ARES_SUCCESS)
                return -EIO;
        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->event = sd_event_ref(e);
        o.sock_state_cb_data = r;
        k = ares_init_options(&r->channel, &o, ARES_OPT_FLAGS | ARES_OPT_LOOKUPS | ARES_OPT_SOCK_STATE_CB |
                              ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_DOMAINS | ARES_OPT_SORTLIST |
                              (resolv_conf ? ARES_OPT_RESOLVCONF : 0));
        if (k != ARES_SUCCESS)
                return k == ARES_ENOMEM ? -ENOMEM : -EIO;
        r->dns = true;
        k = sd_event_add_time(e, &r->timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_timer, r);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

int egress_resolver_new_dns(sd_event *e, const char *server, EgressResolver **ret, char **ret_error) {
        _cleanup_(egress_resolver_freep) EgressResolver *r = NULL;
        int k;

        k = resolver_new_ares(e, NULL, &r);
        if (k < 0)
                return error_set(ret_error, k, "cannot set up c-ares: %s", strerror(-k));
        /* The one server replaces whatever ares_init_options() found in /etc/resolv.conf. */
        if (ares_set_servers_ports_csv(r->channel, server) != ARES_SUCCESS || strchr(server, ','))
                return error_set(ret_error, -EINVAL, "--dns-server '%s' is not one server (ADDR, ADDR:PORT or "
                                 "[V6]:PORT)", server);
        *ret = TAKE_PTR(r);
        return 0;
}

typedef struct NameServer {
        int family;
        union {
                struct in_addr in;
                struct in6_addr in6;
        } addr;
} NameServer;

/* The addresses on the "nameserver" lines of a resolv.conf(5) text, read as c-ares reads them: the keyword
 * first on its line ('#' and ';' start a comment), then addresses separated by blanks or commas, those that
 * inet_pton() takes. Not to configure c-ares (it reads the file itself), but to tell the servers it found
 * there from its fallback: c-ares that finds no nameserver, or no file, or cannot read it, asks 127.0.0.1
 * instead, and says nothing. */
static size_t scan_nameservers(char *text, NameServer *l, size_t max, size_t *ret_lines) {
        size_t n = 0;
        char *line;

        *ret_lines = 0;
        for (char *p = text; (line = strsep(&p, "\n")); ) {
                char *tok, *save = NULL;

                line[strcspn(line, "#;")] = 0;
                line += strspn(line, " \t\r\f\v");
                if (strncmp(line, "nameserver", 10) != 0 || !strchr(" \t", line[10]) || line[10] == 0)
                        continue;
                (*ret_lines)++;
                for (tok = strtok_r(line + 10, " \t\r\f\v,", &save); tok && n < max;
                     tok = strtok_r(NULL, " \t\r\f\v,", &save)) {
                        NameServer ns = {};

                        if (inet_pton(AF_INET, tok, &ns.addr.in) == 1)
                                ns.family = AF_INET;
                        else if (inet_pton(AF_INET6, tok, &ns.addr.in6) == 1)
                                ns.family = AF_INET6;
                        else
                                continue;
                        l[n++] = ns;
                }
        }
        return n;
}

static bool nameserver_listed(const struct ares_addr_port_node *s, const NameServer *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (l[i].family == s->family &&
                    (s->family == AF_INET ? memcmp(&l[i].addr.in, &s->addr.addr4, sizeof l[i].addr.in) :
                                            memcmp(&l[i].addr.in6, &s->addr.addr6, sizeof l[i].addr.in6)) == 0)
                        return true;
        return false;
}

static int read_resolv_conf(const char *path, NameServer *l, size_t max, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t lines;
        int k;

        /* Following symlinks: /etc/resolv.conf is often one (to systemd-resolved's, or resolvconf's). */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT)
                return error_set(ret_error, -ENOENT, "no resolver configured: %s does not exist", path);
        if (fd < 0)
                return error_set(ret_error, -errno, "cannot read %s: %s", path, strerror(errno));
        k = read_full_fd(fd, RESOLV_CONF_MAX, &text, NULL);
        if (k == -EBADFD)
                return error_set(ret_error, -EINVAL, "cannot read %s: not a regular file", path);
        if (k < 0)
                return error_set(ret_error, k, "cannot read %s: %s", path, strerror(-k));
        *ret_n = scan_nameservers(text, l, max, &lines);
        if (lines == 0)
                return error_set(ret_error, -ENOENT, "no resolver configured: %s names no nameserver", path);
        if (*ret_n == 0)
                return error_set(ret_error, -ENOENT, "no resolver configured: %s names no nameserver c-ares can "
                                 "use (an IPv4 or IPv6 address, no port)", path);
        return 0;
}

int egress_resolver_new_system(sd_event *e, const char *path, EgressResolver **ret, char **ret_error) {
        _cleanup_(egress_resolver_freep) EgressResolver *r = NULL;
        struct ares_addr_port_node *servers = NULL, *last = NULL, *rest = NULL;
        NameServer listed[NAMESERVERS_SCAN_MAX];
        size_t n_listed = 0, n = 0;
        int k;

        path = path ?: EGRESS_RESOLV_CONF;
        k = read_resolv_conf(path, listed, ELEMENTSOF(listed), &n_listed, ret_error);
        if (k < 0)
                return k;
        k = resolver_new_ares(e, path, &r);
        if (k < 0)
                return error_set(ret_error, k, "cannot set up c-ares: %s", strerror(-k));
        if (ares_get_servers_ports(r->channel, &servers) != ARES_SUCCESS)
                return error_set(ret_error, -ENOMEM, "cannot list c-ares's servers");
        for (struct ares_addr_port_node *i = servers; i; last = i, i = i->next, n++) {
                if (n == NAMESERVERS_MAX) {
                        rest = i;
                        last->next = NULL;
                        break;
                }
                /* Each one from the file: never c-ares's silent 127.0.0.1 (nor the file of a moment later). */
                if (!nameserver_listed(i, listed, n_listed)) {
                        k = error_set(ret_error, -EINVAL, "no resolver configured: %s names no nameserver c-ares "
                                      "can use (an IPv4 or IPv6 address, no port)", path);
                        break;
                }
        }
        if (k >= 0 && rest && ares_set_servers_ports(r->channel, servers) != ARES_SUCCESS)
                k = error_set(ret_error, -ENOMEM, "cannot set c-ares's servers");
        if (rest)
                last->next = rest;
        ares_free_data(servers);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

int egress_resolver_servers(EgressResolver *r, char **ret) {
        struct ares_addr_port_node *servers = NULL;
        _cleanup_free_ char *text = NULL;

        if (!r->dns)
                return -EOPNOTSUPP;
        if (ares_get_servers_ports(r->channel, &servers) != ARES_SUCCESS)
                return -ENOMEM;
        for (const struct ares_addr_port_node *i = servers; i; i = i->next) {
                bool v6 = i->family == AF_INET6;
                char addr[INET6_ADDRSTRLEN];
                char *m;

                inet_ntop(i->family, &i->addr, addr, sizeof addr);
                m = strdupf("%s%s%s%s%s:%d", text ?: "", text ? "," : "", v6 ? "[" : "", addr, v6 ? "]" : "",
                            i->udp_port ?: 53);
                if (!m) {
                        ares_free_data(servers);
                        return -ENOMEM;
                }
                free(text);
                text = m;
        }
        ares_free_data(servers);
        if (!text)
                return -ENOENT;
        *ret = TAKE_PTR(text);
        return 0;
}

static int on_hosts_defer(sd_event_source *s, void *userdata) {
        EgressQuery *q = userdata;
        _cleanup_free_ EgressSockaddr *l = NULL;
        size_t n = 0;
        int r;

        r = egress_hosts_lookup(&q->resolver->hosts, q->name, q->port, &l, &n);
        q->cb(r < 0 ? r : 0, l, n, q->userdata);
        query_free(q);
        return 0;
}

static int on_early_defer(sd_event_source *s, void *userdata) {
        EgressQuery *q = userdata;

        if (q->cb)
                q->cb(q->early_r, q->early, q->n_early, q->userdata);
        query_free(q);
        return 0;
}

static int ares_status_to_errno(int status) {
        switch (status) {
        case ARES_ENOTFOUND:
        case ARES_ENODATA:
        case ARES_ENONAME:
                return -ENOENT;
        case ARES_ETIMEOUT:
                return -ETIMEDOUT;
        case ARES_ENOMEM:
                return -ENOMEM;
        case ARES_EDESTRUCTION:
        case ARES_ECANCELLED:
                return -ECANCELED;
        default:
                return -EIO;
        }
}

int egress_sockaddr_append(EgressSockaddr **l, size_t *n, const EgressSockaddr *a, uint16_t port) {
        EgressSockaddr *m;

        if (*n >= EGRESS_RESOLVE_MAX_ADDRS)
                return -E2BIG;
        m = reallocarray(*l, *n + 1, sizeof *m);
        if (!m)
                return -ENOMEM;
        *l = m;
        m[*n] = *a;
        if (a->sa.ss_family == AF_INET)
                ((struct sockaddr_in *) &m[*n].sa)->sin_port = htons(port);
        else
                ((struct sockaddr_in6 *) &m[*n].sa)->sin6_port = htons(port);
        (*n)++;
        return 0;
}

static int copy_nodes(const struct ares_addrinfo *res, uint16_t port, EgressSockaddr **ret, size_t *ret_n) {
        _cleanup_free_ EgressSockaddr *l = NULL;
        size_t n = 0;

        for (const struct ares_addrinfo_node *i = res ? res->nodes : NULL; i; i = i->ai_next) {
                EgressSockaddr a = { .len = (socklen_t) i->ai_addrlen };
                int r;

                if (!((i->ai_family == AF_INET && i->ai_addrlen == sizeof(struct sockaddr_in)) ||
                      (i->ai_family == AF_INET6 && i->ai_addrlen == sizeof(struct sockaddr_in6))))
                        return -EIO;
                memcpy(&a.sa, i->ai_addr, i->ai_addrlen);
                r = egress_sockaddr_append(&l, &n, &a, port);
                if (r < 0)
                        return r;
        }
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}

static void on_ares(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
        EgressQuery *q = arg;
        _cleanup_free_ EgressSockaddr *l = NULL;
        size_t n = 0;
        int r;

        r = status == ARES_SUCCESS ? copy_nodes(res, q->port, &l, &n) : ares_status_to_errno(status);
        if (res)
                ares_freeaddrinfo(res);
        if (q->in_call) {
                q->early_r = r;
                q->early = TAKE_PTR(l);
                q->n_early = n;
                return;
        }
        if (q->cb)
                q->cb(r, l, n, q->userdata);
        query_free(q);
}

int egress_resolver_resolve(EgressResolver *r, const char *name, uint16_t port, EgressResolveCallback cb,
                            void *userdata, EgressQuery **ret_query) {
        EgressQuery *q;
        int k;

        q = calloc(1, sizeof *q);
        if (!q)
                return -ENOMEM;
        *q = (EgressQuery) { .resolver = r, .cb = cb, .userdata = userdata, .port = port,
                             .name = strdup(name) };
        if (!q->name) {
                query_free(q);
                return -ENOMEM;
        }
        if (!r->dns) {
                k = sd_event_add_defer(r->event, &q->defer, on_hosts_defer, q);
                if (k < 0) {
                        query_free(q);
                        return k;
                }
        } else {
                struct ares_addrinfo_hints hints = { .ai_family = AF_UNSPEC, .ai_flags = ARES_AI_NOSORT };
                /* c-ares may answer from inside the call (an error, a numeric name): that answer is
                 * handed over from the loop, as every other, so callers never see a re-entrant call. */
                q->in_call = true;
                q->early_r = 1;
                ares_getaddrinfo(r->channel, name, NULL, &hints, on_ares, q);
                q->in_call = false;
                if (q->early_r <= 0) {
                        k = sd_event_add_defer(r->event, &q->defer, on_early_defer, q);
                        if (k < 0) {
                                query_free(q);
                                return k;
                        }
                }
                rearm_timer(r);
        }
        *ret_query = q;
        return 0;
}

void egress_query_cancel(EgressQuery *q) {
        if (!q)
                return;
        if (q->resolver->dns && !q->defer)
                q->cb = NULL; /* on_ares frees it */
        else
                query_free(q);
}
