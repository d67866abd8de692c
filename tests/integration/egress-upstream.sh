#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# egress-upstream.sh up|down DIR: (inside the box) a test "internet": a network namespace pond-up with
# 198.51.100.2/24 (TEST-NET-2) joined to the box by a veth, an HTTPS server on :443 (and :8443) with a
# certificate from a CA made for the test, a plain TCP and a UDP listener, and the proxy's hosts file and
# resolver setting. The CA is added to the bundle that pond's "host" image copies into every job.
set -euo pipefail
cmd=$1 dir=$2
case $cmd in
up)
        mkdir -p "$dir"
        ip netns add pond-up
        ip link add pond-up0 type veth peer name eth0 netns pond-up
        ip addr add 198.51.100.1/24 dev pond-up0
        ip link set pond-up0 up
        ip -n pond-up addr add 198.51.100.2/24 dev eth0
        ip -n pond-up link set eth0 up
        ip -n pond-up link set lo up
        cd "$dir"
        # The box's /etc is a fresh tmpfs: openssl gets a minimal configuration of its own.
        printf '[req]\ndistinguished_name=dn\n[dn]\n' > openssl.cnf
        export OPENSSL_CONF=$dir/openssl.cnf
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pond-test-ca -keyout ca.key -out ca.crt \
                -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj /CN=allowed.test -keyout srv.key -out srv.csr 2>/dev/null
        printf 'subjectAltName=DNS:allowed.test,DNS:other.test,DNS:*.wild.test\n' > ext
        openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext \
                -out srv.crt 2>/dev/null
        mkdir -p www && echo "hello from upstream" > www/index.html
        git init -q --bare www/repo.git
        git clone -q www/repo.git work 2>/dev/null
        (cd work && echo hi > f && git add f && git -c user.name=t -c user.email=t@t.invalid commit -qm one &&
         git push -q origin HEAD:main 2>/dev/null)
        git -C www/repo.git symbolic-ref HEAD refs/heads/main
        git -C www/repo.git update-server-info
        cat > serve.py <<'PY'
import functools, http.server, ssl, sys, threading
d, port = sys.argv[1], int(sys.argv[2])
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=d)
s = http.server.ThreadingHTTPServer(("198.51.100.2", port), h)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain("srv.crt", "srv.key")
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
        for port in 443 22 8443; do
                ip netns exec pond-up python3 serve.py www $port </dev/null >/dev/null 2>&1 &
                echo $! >> pids
        done
        ip netns exec pond-up python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("198.51.100.2", 53))
open("udp.log", "a").close()
while True:
    data, peer = s.recvfrom(2048); open("udp.log", "a").write("%s %r\n" % (peer, data))' </dev/null >/dev/null 2>&1 &
        echo $! >> pids
        mkdir -p /etc/ssl/certs
        cat >> /etc/ssl/certs/ca-certificates.crt < ca.crt
        mkdir -p /etc/pond
        [ -e /etc/pond/egress.hosts ] && [ ! -e "$dir/egress.hosts.saved" ] && cp -a /etc/pond/egress.hosts "$dir/egress.hosts.saved"
        cat > /etc/pond/egress.hosts <<'H'
198.51.100.2 allowed.test other.test unlisted.test a.wild.test
127.0.0.1 loopback.test
10.1.2.3 private.test
169.254.169.254 metadata.test
::1 v6loop.test
::ffff:127.0.0.1 mapped.test
H
        # The worker's own resolver setting is kept aside and restored by "down".
        [ -e /etc/pond/egress.env ] && [ ! -e "$dir/egress.env.saved" ] && cp -a /etc/pond/egress.env "$dir/egress.env.saved"
        [ -e /etc/pond/egress.hosts ] && [ ! -e "$dir/egress.hosts.saved" ] && cp -a /etc/pond/egress.hosts "$dir/egress.hosts.saved"
        echo 'POND_EGRESS_RESOLVER=--hosts-file /etc/pond/egress.hosts' > /etc/pond/egress.env
        touch "$dir/installed-resolver"
        for _ in $(seq 50); do
                ip netns exec pond-up python3 -c 'import socket; socket.create_connection(("198.51.100.2", 443), 1)' \
                        2>/dev/null && break
                sleep 0.1
        done
        ;;
down)
        if [ -f "$dir/pids" ]; then
                mapfile -t pids <"$dir/pids"
                kill "${pids[@]}" 2>/dev/null || true # some may have exited already
        fi
        ip link del pond-up0 2>/dev/null || true
        ip netns del pond-up 2>/dev/null || true
        # Only what "up" installed is taken back; the worker's own setting is put back as it was.
        if [ -e "$dir/installed-resolver" ]; then
                rm -f /etc/pond/egress.env /etc/pond/egress.hosts "$dir/installed-resolver"
                [ -e "$dir/egress.env.saved" ] && mv "$dir/egress.env.saved" /etc/pond/egress.env
                [ -e "$dir/egress.hosts.saved" ] && mv "$dir/egress.hosts.saved" /etc/pond/egress.hosts
        fi
        true
        ;;
esac
