#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-egress.sh: the network postures through real pond-job@ID jobs (POND_TEST_BACKEND, default runc): a
# test upstream on TEST-NET-2 in its own namespace, reached only through pond-egress; every refusal with
# its reason in the journal; no path around the proxy; nothing left behind, also after kill -9.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

UP=/tmp/pond-egress-upstream
in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" down "$UP" >/dev/null 2>&1
in_box rm -rf "$UP"
in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" up "$UP" >/dev/null 2>&1 || bail_out "cannot set up the upstream"
trap 'in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" down "$UP" >/dev/null 2>&1' EXIT

ALLOW=(--allow-host allowed.test --allow-host '*.wild.test' --allow-host loopback.test --allow-host private.test
       --allow-host metadata.test --allow-host v6loop.test --allow-host mapped.test --allow-host other.test)

# egress_reasons ID: the proxy's refusal reasons for job ID, one per line
egress_reasons() {
        in_box journalctl -q -o cat --output-fields=POND_EGRESS_REASON POND_JOB_ID="$1" POND_EVENT=egress-denied
}

# --- allowed: curl, git, pip-style HTTPS through the proxy, with the job's own CA bundle variables
id=$(new_id allowed)
run_job "$id" --profile untrusted-code-write "${ALLOW[@]}" -- sh -c '
        curl -sS https://allowed.test/index.html
        curl -sS https://a.wild.test/index.html
        git ls-remote https://allowed.test/repo.git | grep -c refs/heads/main
        python3 -c "import urllib.request; print(urllib.request.urlopen(\"https://allowed.test/index.html\").read().decode().strip())"
        env | grep -c -E "^(SSL_CERT_FILE|REQUESTS_CA_BUNDLE|NODE_EXTRA_CA_CERTS|GIT_SSL_CAINFO|CURL_CA_BUNDLE)=/etc/ssl/certs/ca-certificates.crt$"'
t_eq "allowlisted name reachable with curl" "hello from upstream" "$(sed -n 1p <<<"$OUT")"
t_eq "wildcard subdomain reachable" "hello from upstream" "$(sed -n 2p <<<"$OUT")"
t_eq "git ls-remote through the proxy" "1" "$(sed -n 3p <<<"$OUT")"
t_eq "python urllib through the proxy (HTTPS_PROXY, SSL_CERT_FILE)" "hello from upstream" "$(sed -n 4p <<<"$OUT")"
t_eq "the five CA bundle variables name the job's bundle" "5" "$(sed -n 5p <<<"$OUT")"
t_eq "egress bytes recorded in the result" True "$(result_field "$id" 'r["egress"]["bytes_down"] > 0 and r["egress"]["allowed"] >= 4')"
t_like "journal: allowed decisions with the resolved address" "198.51.100.2" \
        "$(in_box journalctl -q -o cat --output-fields=POND_EGRESS_ADDRESS POND_JOB_ID="$id" POND_EVENT=egress-allowed)"
t_clean "nothing left after an egress job" "$id"
t_eq "no egress unit left" "" "$(in_box systemctl list-units --all --plain --no-legend "pond-egress@$id.service")"

# --- refused by the proxy, each with its reason
id=$(new_id refused)
# shellcheck disable=SC2016 # the job's shell expands these
run_job "$id" --profile untrusted-code-write "${ALLOW[@]}" -- sh -c '
        for h in unlisted.test loopback.test private.test metadata.test v6loop.test mapped.test 198.51.100.2; do
                code=$(curl -s -o /dev/null -w "%{http_connect}" https://$h/ 2>/dev/null); echo "$h $code"
        done
        echo "port22 $(curl -s -o /dev/null -w "%{http_connect}" https://allowed.test:22/ 2>/dev/null)"
        # SNI other than the CONNECT host: a client that asks for other.test inside a tunnel to allowed.test
        python3 - <<PY
import os, socket, ssl
p = os.environ["HTTPS_PROXY"].split("//")[1].split(":")
s = socket.create_connection((p[0], int(p[1])), 5)
s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
print("sni-connect", s.recv(200).split(b"\r\n")[0].decode())
c = ssl.create_default_context()
try:
    t = c.wrap_socket(s, server_hostname="other.test"); t.sendall(b"GET / HTTP/1.0\r\n\r\n"); print("sni", "open", t.recv(20))
except Exception as e:
    print("sni", "refused", type(e).__name__)
s = socket.create_connection((p[0], int(p[1])), 5)
s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
s.recv(200)
s.sendall(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
try:
    print("plain", "open" if s.recv(100) else "refused")
except Exception as e:
    print("plain", "refused", type(e).__name__)
PY'
for h in unlisted.test loopback.test private.test metadata.test v6loop.test mapped.test 198.51.100.2; do
        t_eq "refused: $h (403)" "$h 403" "$(grep "^$h " <<<"$OUT")"
done
t_eq "refused: port 22 (403)" "port22 403" "$(grep '^port22 ' <<<"$OUT")"
t_like "refused: SNI different from the CONNECT host" "^sni refused" "$(grep '^sni ' <<<"$OUT")"
t_like "refused: plain HTTP through the tunnel" "^plain refused" "$(grep '^plain ' <<<"$OUT")"
reasons=$(egress_reasons "$id")
diag "reasons: $(tr '\n' '|' <<<"$reasons")"
t_like "journal: unlisted name refused before any lookup" "allowlist" "$reasons"
t_like "journal: loopback refused after resolution" "loopback" "$reasons"
t_like "journal: RFC1918 refused" "private|RFC ?1918" "$reasons"
t_like "journal: metadata address refused" "metadata" "$reasons"
t_like "journal: IP literal refused" "literal" "$reasons"
t_like "journal: port refused" "port" "$reasons"
t_like "journal: SNI mismatch refused" "SNI|sni" "$reasons"
t_clean "nothing left after refusals" "$id"

# --- no way around the proxy from inside the job
id=$(new_id around)
in_box sh -c "rm -f $UP/udp.log; touch $UP/udp.log"
run_job "$id" --profile untrusted-code-write "${ALLOW[@]}" -- python3 -c '
import os, socket, subprocess
def attempt(name, f):
    try:
        f(); print(name, "OPEN")
    except Exception as e:
        print(name, "blocked", type(e).__name__)
def tcp(addr, port, fam=socket.AF_INET):
    s = socket.socket(fam); s.settimeout(3); s.connect((addr, port))
attempt("direct-tcp", lambda: tcp("198.51.100.2", 443))
attempt("direct-tcp-22", lambda: tcp("198.51.100.2", 22))
attempt("host-ssh", lambda: tcp(os.environ["NO_PROXY"], 22))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    s.sendto(b"leak", ("198.51.100.2", 53)); s.recvfrom(10)
attempt("udp", udp)
attempt("dns", lambda: socket.getaddrinfo("allowed.test", 443))
attempt("ipv6", lambda: tcp("2001:db8::2", 443, socket.AF_INET6))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
# AF_PACKET: pond-job@.service allows it for the runsc start step (gVisor netstack), never for the payload.
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)))
r = subprocess.run(["curl", "-sS", "--max-time", "5", "--noproxy", "*", "https://allowed.test/"], capture_output=True)
print("noproxy", "OPEN" if r.returncode == 0 else "blocked")
def icmp():
    # An unprivileged ping socket: the one ICMP the kernel would allow uid 1000, if the group range did.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP); s.settimeout(2)
    s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", ("198.51.100.2", 0)); s.recvfrom(64)
attempt("icmp", icmp)'
for what in direct-tcp direct-tcp-22 host-ssh udp dns ipv6 raw packet noproxy icmp; do
        t_like "no path around the proxy: $what" "^$what blocked" "$(grep "^$what " <<<"$OUT")"
done
t_eq "the UDP datagram never reached the upstream" "" "$(in_box cat "$UP/udp.log")"
t_clean "nothing left after the escape attempts" "$id"

# --- broker-only without a broker (no credentials): nothing to reach, so a namespace with lo alone
id=$(new_id brokeronly)
run_job "$id" --profile untrusted-code-read "${ALLOW[@]}" -- python3 -c '
import os, socket
print("proxy-var", os.environ.get("HTTPS_PROXY", "none"), os.environ.get("NO_PROXY", "none"))
print("ifaces", " ".join(sorted(n for _, n in socket.if_nameindex())))
for name, addr in (("upstream", ("198.51.100.2", 443)), ("pool", ("10.203.0.1", 3128))):
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect(addr); print(name, "OPEN")
    except Exception as e:
        print(name, "blocked", type(e).__name__)
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname(), 3); a, _ = srv.accept(); a.sendall(b"lo")
print("loopback", c.recv(2).decode())'
t_eq "broker-only, no broker: no proxy variables, no host address" "proxy-var none none" \
        "$(grep '^proxy-var' <<<"$OUT")"
t_eq "broker-only, no broker: lo is the namespace's only interface" "ifaces lo" "$(grep '^ifaces' <<<"$OUT")"
t_like "broker-only, no broker: no route to the upstream" "^upstream blocked" "$(grep '^upstream ' <<<"$OUT")"
t_like "broker-only, no broker: no route to a host address" "^pool blocked" "$(grep '^pool ' <<<"$OUT")"
t_eq "broker-only, no broker: loopback works" "loopback lo" "$(grep '^loopback' <<<"$OUT")"
t_eq "broker-only: no egress unit was started" "" "$(in_box journalctl -q -o cat -u "pond-egress@$id.service")"
t_clean "nothing left after a broker-only job" "$id"

# --- only pond's own sidecar sockets: a host service on the wildcard address is never reached, not on the
# broker's port by a job without a broker, not on the proxy's port by a job without a proxy
WILD=pond-test-wildcard-$$
# wild_listen PORT: a host service that answers "HOSTSVC" on 0.0.0.0:PORT, as a transient unit in the box
wild_listen() {
        in_box systemd-run --quiet --unit "$WILD-$1" -- python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept(); c.sendall(b"HOSTSVC\n"); c.close()' "$1"
}
wild_stop() { in_box systemctl stop "$WILD-8080.service" "$WILD-3128.service" >/dev/null 2>&1 || true; }
trap 'wild_stop; in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" down "$UP" >/dev/null 2>&1' EXIT
# PROBE: connect to the job's host-side address on both sidecar ports, and say whether a host service answered
PROBE='
import os, socket
host = os.environ.get("NO_PROXY", "10.203.0.1")  # without a peer the job has no host address: try one in the pool
for port in (8080, 3128):
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, port)); s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        print(port, "OPEN" if s.recv(16).startswith(b"HOSTSVC") else "pond")
    except Exception as e:
        print(port, "blocked", type(e).__name__)'
wild_listen 8080
wild_listen 3128
for _ in $(seq 50); do in_box sh -c "ss -Hltn | grep -q ':3128 '" && break; sleep 0.1; done
# Control: the service answers on the wildcard address from the host, so the probe can see it if let through.
t_eq "control: the wildcard host service answers from the host" "HOSTSVC" \
        "$(in_box python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", 8080), 3); print(s.recv(16).decode().strip())')"
id=$(new_id wildnone)
run_job "$id" --profile untrusted-code-read -- python3 -c "$PROBE"
t_like "no broker: a host service on the broker's port is unreachable" "^8080 blocked" "$(grep '^8080 ' <<<"$OUT")"
t_like "no proxy: a host service on the proxy's port is unreachable" "^3128 blocked" "$(grep '^3128 ' <<<"$OUT")"
t_clean "nothing left after the wildcard probe" "$id"
in_box systemctl stop "$WILD-3128.service" >/dev/null 2>&1
id=$(new_id wildproxy)
run_job "$id" --profile untrusted-code-write "${ALLOW[@]}" -- python3 -c "$PROBE"
t_like "with a proxy, no broker: the host service on the broker's port is unreachable" "^8080 blocked" \
        "$(grep '^8080 ' <<<"$OUT")"
t_eq "with a proxy: its port reaches pond's proxy, not a host service" "3128 pond" "$(grep '^3128 ' <<<"$OUT")"
t_clean "nothing left after the wildcard probe with a proxy" "$id"
wild_stop

# --- the worker's own resolver: no POND_EGRESS_RESOLVER (a fresh install has no egress.env), so the proxy asks
# the nameservers of the box's /etc/resolv.conf; laid out as systemd-resolved's (a symlink to a file below
# /run, which the proxy's sandbox must follow), naming a stub on a loopback address, as resolved's 127.0.0.53
# (the proxy's unit runs in the host's network namespace), that knows allowed.test alone. Then the control: a
# resolv.conf without a nameserver, and the job's result says why its proxy did not start.
DNS=pond-test-dns-$$
resolver_restore() {
        in_box systemctl stop "$DNS.service" >/dev/null 2>&1 || true
        in_box sh -c "rm -f /etc/resolv.conf; rm -rf /run/pond-test-resolve
                [ -e $UP/resolv.conf.saved ] || [ -L $UP/resolv.conf.saved ] && mv $UP/resolv.conf.saved /etc/resolv.conf
                [ -e $UP/egress.env.aside ] && mv $UP/egress.env.aside /etc/pond/egress.env; true"
}
trap 'resolver_restore; in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" down "$UP" >/dev/null 2>&1' EXIT
in_box sh -c "{ [ -e /etc/resolv.conf ] || [ -L /etc/resolv.conf ]; } && cp -a /etc/resolv.conf $UP/resolv.conf.saved
        mv /etc/pond/egress.env $UP/egress.env.aside; rm -f /etc/resolv.conf; mkdir -p /run/pond-test-resolve
        printf 'search corp.example\nnameserver 127.0.0.153\noptions edns0\n' > /run/pond-test-resolve/stub-resolv.conf
        ln -s /run/pond-test-resolve/stub-resolv.conf /etc/resolv.conf"
in_box systemd-run --quiet --collect --unit "$DNS" -- python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.153", 53))
while True:
    q, peer = s.recvfrom(512)
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode().lower()); i += 1 + q[i]
    name, qtype, end = ".".join(labels), struct.unpack(">H", q[i + 1:i + 3])[0], i + 5
    open(sys.argv[1], "a").write("%s %d\n" % (name, qtype))
    ans = b""
    if name == "allowed.test" and qtype == 1:
        ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("198.51.100.2")
    flags = 0x8180 if name == "allowed.test" else 0x8183  # NOERROR (no AAAA: no data), else NXDOMAIN
    s.sendto(q[:2] + struct.pack(">HHHHH", flags, 1, 1 if ans else 0, 0, 0) + q[12:end] + ans, peer)' \
        "$UP/dns.log"
for _ in $(seq 50); do in_box sh -c "ss -Hlun | grep -q '127.0.0.153:53 '" && break; sleep 0.1; done
id=$(new_id ownresolver)
run_job "$id" --profile untrusted-code-write "${ALLOW[@]}" -- curl -sS https://allowed.test/index.html
t_eq "no resolver in egress.env: allowlist job reaches its host through the box's resolv.conf" \
        "hello from upstream" "$OUT"
t_like "... the proxy says which nameservers it asks" \
        "Resolving through the nameservers of /etc/resolv.conf: 127.0.0.153:53" \
        "$(in_box journalctl -q -o cat -u "pond-egress@$id.service")"
t_eq "... and the stub was asked for the name as the job gave it, without the search domain" "allowed.test" \
        "$(in_box sh -c "cut -d' ' -f1 $UP/dns.log | sort -u")"
t_clean "nothing left after a job on the worker's resolver" "$id"
in_box sh -c "printf 'search corp.example\n' > /etc/resolv.conf"
id=$(new_id noresolver)
run_job "$id" --profile untrusted-code-write "${ALLOW[@]}" -- curl -sS https://allowed.test/index.html
t_eq "control: no nameserver anywhere, the job fails with its proxy's reason" "failed the egress proxy did not \
start: no resolver configured: /etc/resolv.conf names no nameserver, and POND_EGRESS_RESOLVER in \
/etc/pond/egress.env sets neither --dns-server nor --hosts-file (see the journal of pond-egress@$id.service)" \
        "$(result_field "$id" 'r["status"] + " " + (r["reason"] or "")')"
t_eq "... names the sidecar" "egress" "$(result_field "$id" '(r.get("sidecar_died") or {}).get("sidecar")')"
t_clean "nothing left after a job whose proxy had no resolver" "$id"
resolver_restore
trap 'in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" down "$UP" >/dev/null 2>&1' EXIT

# --- profile none: the host's network
id=$(new_id open)
run_job "$id" --profile none -- python3 -c '
import socket
s = socket.create_connection(("198.51.100.2", 443), 3); print("direct OPEN")'
t_eq "profile none: the host network, direct" "direct OPEN" "$OUT"

# --- the proxy unit runs with nothing
id=$(new_id unit)
in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write -- sleep 30 \
        >/dev/null 2>&1 &
runner=$!
for _ in $(seq 100); do in_box systemctl is-active -q "pond-egress@$id.service" && break; sleep 0.1; done
pid=$(in_box systemctl show -P MainPID "pond-egress@$id.service")
t_like "proxy has a main process" "^[1-9][0-9]*$" "$pid"
t_like "proxy runs with no capabilities" "^CapEff:[[:space:]]+0000000000000000$" "$(in_box grep CapEff "/proc/$pid/status")"
t_like "proxy runs with an empty bounding set" "^CapBnd:[[:space:]]+0000000000000000$" "$(in_box grep CapBnd "/proc/$pid/status")"
t_like "proxy runs as a dynamic user" "^[1-9][0-9]{4,}$" "$(in_box stat -c %u "/proc/$pid")"
t_like "proxy is under a syscall filter" "^Seccomp:[[:space:]]+2$" "$(in_box grep '^Seccomp:' "/proc/$pid/status")"
# kill -9 of the proxy: the job loses its way out, and still nothing is left at the end
in_box kill -9 "$pid"
pond cancel "$id" >/dev/null 2>&1
wait "$runner"
wait_gone "$id"
t_clean "nothing left after kill -9 of the proxy" "$id"

# --- kill -9 of the supervisor: namespace, veth, nft table and proxy unit all go
id=$(new_id kill9)
in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write -- sleep 60 \
        >/dev/null 2>&1 &
runner=$!
if wait_running "$id"; then
        # Who holds the job's address: under runsc gVisor's netstack took it off the namespace's eth0 (the
        # sandbox talks to the veth through an AF_PACKET socket); under runc the host kernel's stack has it.
        ns=pond-$(printf %s "$id" | sha256sum | cut -c1-12)
        addrs=$(in_box sh -c "nsenter -t \$(systemctl show -P MainPID pond-job@$id.service) -m \
                ip -n $ns -4 -o addr show dev eth0" 2>&1)
        if [ "$BACKEND" = runsc ]; then
                t_eq "runsc: gVisor's netstack holds the job's address, the namespace's kernel stack none" "" "$addrs"
        else
                t_like "runc: the job's address is on its namespace's eth0" "inet 10\." "$addrs"
        fi
        in_box sh -c "kill -9 \$(systemctl show -P MainPID pond-job@$id.service)"
        wait_gone "$id"
        t_clean "nothing left after kill -9 of pond-run" "$id"
        t_eq "no egress unit after kill -9 of pond-run" "" \
                "$(in_box systemctl list-units --all --plain --no-legend "pond-egress@$id.service")"
else
        t_not_ok "job $id started (its scope and service became active within 20 s)"
fi
wait "$runner"
t_eq "no job namespaces left" "" "$(in_box ls /run/netns | grep -E '^pond-[0-9a-f]{12}$')"
t_eq "no job veths left" "" "$(in_box sh -c "ip -br link | grep '^pv'")"
t_eq "no job nft tables left" "" "$(in_box sh -c "nft list tables | grep pond_")"
t_eq "no address leases left" none "$(dir_entries "$POND_RUN/net")"
done_testing
