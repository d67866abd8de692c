/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-egress-proxy.c: pond-egress end to end, in-process, in a private network namespace: the proxy on
 * 127.0.0.1, an upstream TLS server (openssl s_server) in a second namespace at 198.51.100.2 over veth
 * (a public-looking TEST-NET-2 address that is not the proxy host's own), a hosts file with good and
 * hostile names. Each test sets all of this up afresh (the fixture) in a network namespace of its own.
 * Needs root (namespaces), ip, openssl and curl; otherwise SKIP with the reason. Before them, unprivileged:
 * the worker's own resolver (no --dns-server nor --hosts-file), taken from a resolv.conf the test writes. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/fileio.h"
#include "config.h"
#include "egress-proxy.h"
#include "egress-resolve.h"
#include "sidecar/socket-util.h"
#include "tests.h"

TEST_MAIN();

#define PROXY "127.0.0.1:18443"
#define UPSTREAM "198.51.100.2"

FIXTURE(proxy) {
        char dir[64];
        pid_t server, proxy, proxy_dns;
};
typedef FIXTURE_DATA(proxy) Proxy;

static const unsigned char hello[] = {
#include "test-egress-hello.inc"
};

static int sh(const char *fmt, ...) _printf_(1, 2);
static int sh(const char *fmt, ...) {
        char cmd[2048];
        va_list ap;
        int r;

        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(cmd, sizeof cmd, fmt, ap);
#pragma GCC diagnostic pop
        va_end(ap);
        r = system(cmd);
        return WIFEXITED(r) ? WEXITSTATUS(r) : 128;
}

static int tcp_connect(const char *ip, int port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct timeval tv = { .tv_sec = 10 };

        inet_pton(AF_INET, ip, &sa.sin_addr);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

static bool wait_listening(const char *ip, int port) {
        for (int i = 0; i < 100; i++) {
                int fd = tcp_connect(ip, port);
                if (fd >= 0) {
                        close(fd);
                        return true;
                }
                usleep(100 * 1000);
        }
        return false;
}

/* The server's own namespace: it waits for its end of the veth, configures it, becomes s_server. */
static pid_t start_server(const char *dir) {
        int go[2];
        pid_t pid;
        char c;

        if (pipe(go) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                close(go[1]);
                if (unshare(CLONE_NEWNET) < 0 || read(go[0], &c, 1) != 1)
                        _exit(1);
                if (sh("ip link set lo up && ip addr add " UPSTREAM "/24 dev vb && ip link set vb up") != 0)
                        _exit(1);
                if (chdir(dir) < 0)
                        _exit(1);
                execlp("openssl", "openssl", "s_server", "-quiet", "-www", "-accept", "4443", "-cert", "cert.pem",
                       "-key", "key.pem", NULL);
                _exit(127);
        }
        close(go[0]);
        usleep(200 * 1000); /* let the child unshare before its namespace is named by pid */
        if (pid < 0 || sh("ip link add va type veth peer name vb && ip link set vb netns %d", (int) pid) != 0 ||
            write(go[1], "x", 1) != 1) {
                close(go[1]);
                return -1;
        }
        close(go[1]);
        return pid;
}

static void write_text(const char *dir, const char *name, const char *text) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = fopen(path, "we");
        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

/* With neither --hosts-file nor --dns-server: the nameservers of /etc/resolv.conf, which the proxy's child
 * sees as DIR/resolv.conf (bound over it in a mount namespace of its own). */
#define RESOLVE_SYSTEM ""

/* The proxy in a child: its resolver is the fixture's hosts file (dns_server NULL), the DNS server
 * dns_server, or (RESOLVE_SYSTEM) the worker's own; a set-up it refuses leaves its reason in DIR/error. */
static pid_t start_proxy(const char *dir, const char *dns_server, const char *listen) {
        pid_t pid = fork();

        if (pid == 0) {
                static char allow[256], hosts[256], stats[256], resolv[256];
                _cleanup_free_ char *error = NULL;
                bool system_resolver = dns_server && !dns_server[0];
                EgressConfig c;
                int r;

                egress_config_init(&c);
                c.job_id = "egress-test";
                snprintf(allow, sizeof allow, "%s/allow.json", dir);
                snprintf(hosts, sizeof hosts, "%s/hosts", dir);
                snprintf(stats, sizeof stats, "%s/stats", dir);
                snprintf(resolv, sizeof resolv, "%s/resolv.conf", dir);
                r = egress_allow_load_file(&c.allow, allow, NULL);
                c.hosts_file = dns_server ? NULL : hosts;
                c.dns_server = system_resolver ? NULL : dns_server;
                c.stats_file = dns_server ? NULL : stats;
                if (system_resolver && (unshare(CLONE_NEWNS) < 0 ||
                                        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                                        mount(resolv, EGRESS_RESOLV_CONF, NULL, MS_BIND, NULL) < 0))
                        _exit(2);
                if (r < 0 || egress_parse_ports("443,4443", &c) < 0 || egress_local_addrs_load(&c.local) < 0 ||
                    socket_listen_tcp(listen, &c.listen_fd) < 0)
                        _exit(2);
                c.idle_timeout_usec = 5 * 1000000ULL;
                r = egress_proxy_run(&c, &error);
                if (error)
                        write_text(dir, "error", error);
                _exit(r < 0 ? 3 : 0);
        }
        return pid;
}

/* The worker's own resolver from a resolv.conf of the test's: in a directory of its own, removed after. */
static int system_resolver(const char *text, char **ret_servers, char **ret_error) {
        _cleanup_(egress_resolver_freep) EgressResolver *r = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        char dir[] = "/tmp/test-egress-resolv.XXXXXX", path[64];
        int k;

        if (!mkdtemp(dir) || sd_event_new(&e) < 0)
                return -EIO;
        snprintf(path, sizeof path, "%s/resolv.conf", dir);
        if (text)
                write_text(dir, "resolv.conf", text);
        k = egress_resolver_new_system(e, path, &r, ret_error);
        if (k >= 0)
                k = egress_resolver_servers(r, ret_servers);
        unlink(path);
        rmdir(dir);
        return k;
}

TEST(system_resolver_takes_the_nameservers_of_resolv_conf) {
        _cleanup_free_ char *servers = NULL, *error = NULL;

        /* Its nameservers and nothing else of it: comments, search domains, options and sortlist aside. */
        ASSERT_OK(system_resolver("# written by hand\nsearch corp.example\n  nameserver 192.0.2.53 ; the first\n"
                                  "options ndots:5 rotate\nnameserver\t2001:db8::53\nsortlist 10.0.0.0/8\n",
                                  &servers, &error));
        ASSERT_STREQ("192.0.2.53:53,[2001:db8::53]:53", servers);
        ASSERT_TRUE(!error);
        free(servers);
        servers = NULL;
        /* A stub resolver on a loopback address (systemd-resolved's): the proxy runs in the host's network
         * namespace, where it answers; loopback is refused as a destination, not as a nameserver. */
        ASSERT_OK(system_resolver("nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n", &servers, &error));
        ASSERT_STREQ("127.0.0.53:53", servers);
        free(servers);
        servers = NULL;
        /* The first three, as glibc's resolver. */
        ASSERT_OK(system_resolver("nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\n"
                                  "nameserver 192.0.2.4\n", &servers, &error));
        ASSERT_STREQ("192.0.2.1:53,192.0.2.2:53,192.0.2.3:53", servers);
}

/* Where c-ares alone would ask 127.0.0.1 and say nothing, the proxy refuses, and says why. */
TEST(system_resolver_without_a_nameserver_is_refused_with_the_reason) {
        _cleanup_free_ char *servers = NULL, *error = NULL;

        ASSERT_ERROR(ENOENT, system_resolver("search corp.example\n# nameserver 192.0.2.53\n", &servers, &error));
        ASSERT_CONTAINS("no resolver configured: /tmp/test-egress-resolv.", error);
        ASSERT_CONTAINS("/resolv.conf names no nameserver", error);
        ASSERT_ERROR(ENOENT, system_resolver("", &servers, &error));
        ASSERT_CONTAINS("names no nameserver", error);
        ASSERT_ERROR(ENOENT, system_resolver(NULL, &servers, &error));
        ASSERT_CONTAINS("/resolv.conf does not exist", error);
        /* c-ares 1.18 skips a nameserver with a port, or one that is not an address. */
        ASSERT_ERROR(ENOENT, system_resolver("nameserver 192.0.2.53:5353\nnameserver dns.example\n", &servers,
                                             &error));
        ASSERT_CONTAINS("names no nameserver c-ares can use", error);
        ASSERT_TRUE(!servers);
}

FIXTURE_SETUP(proxy) {
        self->server = self->proxy = self->proxy_dns = -1;      /* never kill(-1) in the teardown */
        if (geteuid() != 0)
                TEST_SKIP("needs root for network namespaces");
        if (sh("(command -v ip && command -v openssl && command -v curl) >/dev/null") != 0)
                TEST_SKIP("needs ip, openssl and curl");
        /* This test's process only: the next test starts from a fresh namespace. */
        if (unshare(CLONE_NEWNET) < 0)
                TEST_SKIP("cannot unshare a network namespace here");
        snprintf(self->dir, sizeof self->dir, "/tmp/test-egress-proxy.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        ASSERT_EQ(0, sh("ip link set lo up"));
        ASSERT_EQ(0, sh("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                        "-subj /CN=allowed.test -addext subjectAltName=DNS:allowed.test,DNS:other.test,"
                        "DNS:allowed.example -keyout key.pem -out cert.pem 2>/dev/null", self->dir));
        write_text(self->dir, "hosts", "# test names\n"
                   UPSTREAM " allowed.test other.test allowed.example unlisted.test\n"
                   "127.0.0.1 loop.test mixed.test\n" UPSTREAM " mixed.test\n10.1.2.3 private.test\n"
                   "169.254.169.254 meta.test\n::1 loop6.test\n::ffff:127.0.0.1 mapped.test\n");
        write_text(self->dir, "allow.json", "{\"allow_hosts\": [\"allowed.test\", \"other.test\", \"allowed.example\", "
                   "\"loop.test\", \"mixed.test\", \"private.test\", \"meta.test\", \"loop6.test\", "
                   "\"mapped.test\", \"nowhere.test\"]}");
        self->server = start_server(self->dir);
        ASSERT_TRUE(self->server > 0);
        ASSERT_EQ(0, sh("ip addr add 198.51.100.1/24 dev va && ip link set va up"));
        if (!wait_listening(UPSTREAM, 4443))
                TEST_FAIL_("upstream openssl s_server did not come up");
        self->proxy = start_proxy(self->dir, NULL, PROXY);
        ASSERT_TRUE(self->proxy > 0);
        if (!wait_listening("127.0.0.1", 18443))
                TEST_FAIL_("proxy did not come up");
}

static void stop(pid_t *pid) {
        if (*pid > 0) {
                kill(*pid, SIGKILL);
                waitpid(*pid, NULL, 0);
        }
        *pid = -1;
}

FIXTURE_TEARDOWN(proxy) {
        stop(&self->proxy_dns);
        stop(&self->proxy);
        stop(&self->server);
        if (self->dir[0])
                sh("rm -rf %s", self->dir);
}

/* Sends head (and then extra, if any) to the proxy; the reply's first bytes into buf. */
static ssize_t exchange(const char *head, const void *extra, size_t extra_len, char *buf, size_t size) {
        int fd = tcp_connect("127.0.0.1", 18443);
        ssize_t n, total = 0;

        if (fd < 0)
                return -1;
        if (write(fd, head, strlen(head)) < 0)
                return close(fd), -1;
        if (extra) {
                /* The 200 first, then the tunnel's bytes. */
                n = read(fd, buf, size - 1);
                if (n <= 0 || write(fd, extra, extra_len) < 0)
                        return close(fd), -1;
        }
        while ((size_t) total < size - 1 && (n = read(fd, buf + total, size - 1 - (size_t) total)) > 0)
                if (extra || (total += n, false))
                        return close(fd), n; /* tunnel: something came back through it */
        buf[total] = 0;
        close(fd);
        return total;
}

#define REFUSED(status, why, head)                                                              \
        do {                                                                                    \
                char _b[2048];                                                                  \
                ASSERT_TRUE(exchange(head, NULL, 0, _b, sizeof _b) > 0);                        \
                ASSERT_CONTAINS("HTTP/1.1 " status, _b);                                        \
                ASSERT_CONTAINS(why, _b);                                                       \
        } while (0)

TEST_F(proxy, allowed_name_through_curl) {
        ASSERT_EQ(0, sh("curl -sS --max-time 20 -x http://" PROXY " --cacert %s/cert.pem https://allowed.test:4443/ "
                        "| grep -q s_server", self->dir));
}

TEST_F(proxy, refused_addresses) {
        REFUSED("403", "is loopback", "CONNECT loop.test:4443 HTTP/1.1\r\n\r\n");
        REFUSED("403", "is private", "CONNECT private.test:4443 HTTP/1.1\r\n\r\n");
        REFUSED("403", "is metadata", "CONNECT meta.test:443 HTTP/1.1\r\n\r\n");
        REFUSED("403", "is loopback", "CONNECT loop6.test:443 HTTP/1.1\r\n\r\n");
        REFUSED("403", "is loopback", "CONNECT mapped.test:443 HTTP/1.1\r\n\r\n");
        /* One public and one loopback address: refused, not "the good one". */
        REFUSED("403", "is loopback", "CONNECT mixed.test:4443 HTTP/1.1\r\n\r\n");
}

TEST_F(proxy, refused_requests) {
        REFUSED("403", "not on the allowlist", "CONNECT unlisted.test:4443 HTTP/1.1\r\n\r\n");
        REFUSED("403", "IP literals", "CONNECT " UPSTREAM ":4443 HTTP/1.1\r\n\r\n");
        REFUSED("403", "IP literals", "CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n");
        REFUSED("403", "port not allowed", "CONNECT allowed.test:22 HTTP/1.1\r\n\r\n");
        REFUSED("405", "only CONNECT", "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        REFUSED("400", "not an HTTP request", "\x16\x03\x01\x00\x10");
        REFUSED("400", "not a valid host name", "CONNECT 127.1:443 HTTP/1.1\r\n\r\n");
        REFUSED("502", "no address", "CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n");
}

TEST_F(proxy, sni_must_match) {
        char buf[4096];

        /* The captured ClientHello names Allowed.Example.: through a tunnel to allowed.example it passes
         * (the server answers with a handshake record), through a tunnel to allowed.test it is cut. */
        ASSERT_TRUE(exchange("CONNECT allowed.example:4443 HTTP/1.1\r\n\r\n", hello, sizeof hello, buf,
                             sizeof buf) > 0);
        ASSERT_EQ(0x16, (unsigned char) buf[0]);
        ASSERT_EQ(0, exchange("CONNECT allowed.test:4443 HTTP/1.1\r\n\r\n", hello, sizeof hello, buf, sizeof buf));
}

TEST_F(proxy, plain_http_through_tunnel_is_cut) {
        char buf[4096];

        ASSERT_EQ(0, exchange("CONNECT allowed.test:4443 HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", 18, buf,
                              sizeof buf));
        ASSERT_TRUE(sh("curl -sS --max-time 10 -p -x http://" PROXY " http://allowed.test:4443/ >/dev/null 2>&1") != 0);
}

/* One tunnel allowed, one request refused: the stats file written at SIGTERM counts them. */
TEST_F(proxy, stats_at_sigterm) {
        _cleanup_free_ char *text = NULL;
        char path[256];
        int status;

        ASSERT_EQ(0, sh("curl -sS --max-time 20 -x http://" PROXY " --cacert %s/cert.pem https://allowed.test:4443/ "
                        ">/dev/null", self->dir));
        REFUSED("403", "not on the allowlist", "CONNECT unlisted.test:4443 HTTP/1.1\r\n\r\n");
        ASSERT_EQ(0, kill(self->proxy, SIGTERM));
        ASSERT_EQ(self->proxy, waitpid(self->proxy, &status, 0));
        self->proxy = -1;
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        snprintf(path, sizeof path, "%s/stats", self->dir);
        ASSERT_OK(read_full_file(path, 65536, &text, NULL));
        TEST_LOG("%s", text);
        /* The third connection is the set-up's probe, which closed before a CONNECT. */
        ASSERT_CONTAINS("\"connections\":3", text);
        ASSERT_CONTAINS("\"allowed\":1", text);
        ASSERT_CONTAINS("\"denied\":2", text);
        ASSERT_CONTAINS("\"job_id\":\"egress-test\"", text);
}

/* With a DNS server (c-ares): an unlisted name causes no query at all, an allowlisted one exactly the
 * query for its name, sent to the configured server only. */
TEST_F(proxy, dns_server_and_no_lookup_before_allowlist) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(5300) };
        struct timeval tv = { .tv_sec = 5 };
        char buf[512];
        int dns, fd;
        ssize_t n;

        dns = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        ASSERT_EQ(0, bind(dns, (struct sockaddr *) &sa, sizeof sa));
        setsockopt(dns, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        self->proxy_dns = start_proxy(self->dir, "127.0.0.1:5300", "127.0.0.1:18444");
        ASSERT_TRUE(self->proxy_dns > 0 && wait_listening("127.0.0.1", 18444));

        fd = tcp_connect("127.0.0.1", 18444);
        ASSERT_TRUE(write(fd, "CONNECT unlisted.test:443 HTTP/1.1\r\n\r\n", 39) == 39);
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        ASSERT_TRUE(n > 0);
        buf[n] = 0;
        ASSERT_CONTAINS("403", buf);
        ASSERT_EQ(-1, recv(dns, buf, sizeof buf, MSG_DONTWAIT));

        fd = tcp_connect("127.0.0.1", 18444);
        ASSERT_TRUE(write(fd, "CONNECT allowed.test:443 HTTP/1.1\r\n\r\n", 38) == 38);
        n = recv(dns, buf, sizeof buf, 0);
        close(fd);
        ASSERT_TRUE(n > 12 && memmem(buf, (size_t) n, "\x07" "allowed" "\x04" "test", 14));
        close(dns);
}

/* Neither --dns-server nor --hosts-file (an egress.env without POND_EGRESS_RESOLVER): the proxy resolves
 * through the nameserver of /etc/resolv.conf, here a stub on 127.0.0.53 as systemd-resolved's (not c-ares's
 * own fallback, 127.0.0.1), which gets the query for the allowlisted name. */
TEST_F(proxy, system_resolver_asks_the_nameserver_of_resolv_conf) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };
        struct timeval tv = { .tv_sec = 5 };
        char buf[512];
        int dns, fd;
        ssize_t n;

        dns = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        inet_pton(AF_INET, "127.0.0.53", &sa.sin_addr);
        ASSERT_EQ(0, bind(dns, (struct sockaddr *) &sa, sizeof sa));
        setsockopt(dns, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        write_text(self->dir, "resolv.conf", "search corp.example\nnameserver 127.0.0.53\n");
        self->proxy_dns = start_proxy(self->dir, RESOLVE_SYSTEM, "127.0.0.1:18444");
        ASSERT_TRUE(self->proxy_dns > 0 && wait_listening("127.0.0.1", 18444));

        fd = tcp_connect("127.0.0.1", 18444);
        ASSERT_TRUE(write(fd, "CONNECT allowed.test:443 HTTP/1.1\r\n\r\n", 38) == 38);
        n = recv(dns, buf, sizeof buf, 0);
        close(fd);
        /* The name as asked, without the search domain. */
        ASSERT_TRUE(n > 12 && memmem(buf, (size_t) n, "\x07" "allowed" "\x04" "test" "\x00", 15));
        close(dns);
}

/* pid once it has exited (reaped, its status in *status), or 0 if it still runs after 10 s. */
static pid_t wait_exit(pid_t pid, int *status) {
        for (int i = 0; i < 100; i++) {
                pid_t r = waitpid(pid, status, WNOHANG);
                if (r != 0)
                        return r;
                usleep(100 * 1000);
        }
        return 0;
}

/* The control: a resolv.conf without a nameserver. c-ares would ask 127.0.0.1; the proxy does not start,
 * and its reason names the file and the setting that is missing. */
TEST_F(proxy, system_resolver_without_nameserver_does_not_start) {
        _cleanup_free_ char *error = NULL;
        char path[256];
        int status;

        write_text(self->dir, "resolv.conf", "search corp.example\n");
        self->proxy_dns = start_proxy(self->dir, RESOLVE_SYSTEM, "127.0.0.1:18444");
        ASSERT_TRUE(self->proxy_dns > 0);
        /* Within 10 s: a proxy that started runs until the teardown kills it. */
        ASSERT_EQ(self->proxy_dns, wait_exit(self->proxy_dns, &status));
        self->proxy_dns = -1;
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3);
        snprintf(path, sizeof path, "%s/error", self->dir);
        ASSERT_OK(read_full_file(path, 4096, &error, NULL));
        ASSERT_STREQ("no resolver configured: " EGRESS_RESOLV_CONF " names no nameserver, and POND_EGRESS_RESOLVER "
                     "in " POND_CONFDIR "/egress.env sets neither --dns-server nor --hosts-file", error);
}
