#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-tenant.sh: one tenant cannot exhaust what the kernel counts per user for another (issue "Tenant
# isolation", point 1), under the backend POND_TEST_BACKEND. Job A (the hog) takes inotify instances,
# POSIX message queues and kernel keys until the kernel refuses, and starts 300 processes; while it holds
# them, job B (the probe) asks for one of each, and forks once under a soft RLIMIT_NPROC of 250. B must get
# every one. The control runs the same two programs as two plain processes of one host uid in the box:
# there B is refused, which is what jobs sharing host uid 1000 did before each runc job had its own range.
# Under runc the hog's processes must run as a host uid of pond's pool, and the range goes back afterwards.
# And the network: A serves TCP on every address of its namespace, on its proxy's port (the one its Landlock
# lets it connect to: it reaches itself, the control); B cannot reach it.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

# Both programs: python3 (the box's and the job's /usr have it), the kernel interfaces through ctypes.
COMMON_PY='import ctypes, errno, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
try:
    librt = ctypes.CDLL("librt.so.1", use_errno=True)
except OSError:
    librt = libc
librt.mq_open.restype = ctypes.c_int
libc.syscall.restype = ctypes.c_long
TAG = sys.argv[1]
def err():
    e = ctypes.get_errno()
    return errno.errorcode.get(e, str(e))
def inotify():
    return "ok" if libc.inotify_init1(0) >= 0 else err()
def mqueue(n):
    name = ("/pond-%s-%d" % (TAG, n)).encode()
    fd = librt.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)
    return "ok" if fd >= 0 else err()
def key(n):
    # add_key(2) (x86_64: 248) into the process keyring (-2): gone with the process
    r = libc.syscall(ctypes.c_long(248), b"user", ("pond-%s-%d" % (TAG, n)).encode(), b"x" * 64,
                     ctypes.c_size_t(64), ctypes.c_int(-2))
    return "ok" if r >= 0 else err()
def unlink_queues(n):
    for i in range(n):
        librt.mq_unlink(("/pond-%s-%d" % (TAG, i)).encode())
'

# The hog: each resource until refused (at most 1000 tries: far above the host's per-user limits, 128
# inotify instances, about 10 default queues, 200 keys; gVisor has none for inotify, and there the cap
# keeps fds for the rest), 300 sleeping processes, then "hog-ready"; it holds everything until SIGTERM
# (its queues unlinked then: the control shares one IPC namespace).
HOG_PY="$COMMON_PY"'
def exhaust(f):
    for n in range(1000):
        r = f(n)
        if r != "ok":
            return "%d:%s" % (n, r)
    return "1000:none"
res = {"inotify": exhaust(lambda n: inotify()), "mqueue": exhaust(mqueue), "keys": exhaust(key)}
kids = 0
for n in range(300):
    try:
        pid = os.fork()
    except OSError as e:
        res["procs"] = "%d:%s" % (n, errno.errorcode.get(e.errno, e.errno))
        break
    if pid == 0:
        os.execv("/bin/sleep", ["sleep", "600"])
    kids += 1
else:
    res["procs"] = "300:none"
queues = int(res["mqueue"].split(":")[0])
# a TCP service of A, on every address of its namespace, and the address of A: a datagram socket
# connected to the proxy (the host side of the veth of A) has the eth0 address of A as its local end. Its
# port is the proxy port: the Landlock ruleset of a job lets TCP connect to the ports of its sidecars alone,
# so that what stands between B and A on that port is the network, which is what this checks.
import socket, threading, urllib.parse
proxy_url = urllib.parse.urlparse(os.environ.get("HTTPS_PROXY", ""))
proxy, port = proxy_url.hostname, proxy_url.port
if proxy:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(16)
    def serve():
        while True:
            c, _ = srv.accept()
            c.sendall(b"HOG\n")
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.connect((proxy, 9))
    res["addr"] = "%s:%d" % (u.getsockname()[0], port)
    try:
        res["self"] = "ok" if socket.create_connection((u.getsockname()[0], port), 3).recv(4) == b"HOG\n" else "bad"
    except OSError as e:
        res["self"] = errno.errorcode.get(e.errno, "timeout")
def stop(*_):
    unlink_queues(queues)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print("hog " + " ".join("%s=%s" % kv for kv in sorted(res.items())))
print("hog-ready", flush=True)
while True:
    time.sleep(1)
'

# The probe: one of each, and one fork with RLIMIT_NPROC lowered to 250 (the hog holds 300 processes).
PROBE_PY="$COMMON_PY"'
import resource, socket
res = {"inotify": inotify(), "mqueue": mqueue(0), "keys": key(0)}
unlink_queues(1)
hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
resource.setrlimit(resource.RLIMIT_NPROC, (250, hard))
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    res["procs"] = "ok"
except OSError as e:
    res["procs"] = errno.errorcode.get(e.errno, str(e.errno))
# the service of A, from the namespace of B
if len(sys.argv) > 2:
    try:
        host, port = sys.argv[2].rsplit(":", 1)
        c = socket.create_connection((host, int(port)), 3)
        res["neighbour"] = "ok" if c.recv(4) == b"HOG\n" else "connected"
    except OSError as e:
        res["neighbour"] = errno.errorcode.get(e.errno, "timeout") if e.errno else "timeout"
print("probe " + " ".join("%s=%s" % kv for kv in sorted(res.items())))
'

# word LINE KEY: KEY's value in "hog a=1 b=2"
word() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# wait_for_line FILE: until FILE in the box has "hog-ready", at most ~120 s
wait_for_line() {
        for _ in $(seq 600); do
                in_box grep -q '^hog-ready' "$1" 2>/dev/null && return 0
                sleep 0.2
        done
        return 1
}

RESOURCES="inotify mqueue keys procs"

# --- the control: two plain processes of one host uid in the box
ctl_uid=4242
ctl_out=/var/tmp/pond-tenant-hog.$$
in_box sh -c "setpriv --reuid=$ctl_uid --regid=$ctl_uid --clear-groups python3 -c \"\$1\" ctl-hog >$ctl_out 2>&1" \
        sh "$HOG_PY" &
ctl_pid=$!
if wait_for_line "$ctl_out"; then
        ctl_hog=$(in_box grep '^hog ' "$ctl_out")
        ctl_probe=$(in_box setpriv --reuid=$ctl_uid --regid=$ctl_uid --clear-groups python3 -c "$PROBE_PY" ctl-probe)
        diag "control: $ctl_hog"
        diag "control: $ctl_probe"
        for r in $RESOURCES; do
                v=$(word "$ctl_probe" "$r")
                t_ok "control: one uid, the second process is refused $r ($v)" test -n "$v" -a "$v" != ok
        done
else
        t_not_ok "control: the hog did not get ready" || diag "$(in_box cat "$ctl_out")"
fi
in_box pkill -TERM -u "$ctl_uid" python3 || true
in_box pkill -KILL -u "$ctl_uid" || true
wait "$ctl_pid" 2>/dev/null
in_box rm -f "$ctl_out"

# --- two jobs: A holds everything, B asks
a=$(new_id hog) b=$(new_id probe)
pond run --quiet --job-id "$a" --backend "$BACKEND" --profile untrusted-code-write -- python3 -c "$HOG_PY" job-hog \
        >/dev/null 2>&1 &
a_pid=$!
if wait_for_line "$POND_STATE/jobs/$a/log/stdout"; then
        hog=$(in_box grep '^hog ' "$POND_STATE/jobs/$a/log/stdout")
        diag "job A: $hog"
        # what A met must be a refusal for the resources a job can use at all
        for r in inotify mqueue procs; do
                v=$(word "$hog" "$r")
                t_ok "job A: took $r until refused or capped ($v)" test -n "$v" -a "${v%%:*}" -gt 0
        done
        if [ "$BACKEND" = runc ]; then
                # A's processes on the host: a uid of pond's pool (0x70000000 on), not 1000 (root's: pond's
                # own helper in the scope, the OOM counter's pin)
                # shellcheck disable=SC2016 # the box's sh expands them
                uids=$(in_box sh -c 'for p in $(find /sys/fs/cgroup -path "*pond-$1.scope*" -name cgroup.procs \
                        -exec cat {} + | sort -u); do stat -c %u "/proc/$p"; done | sort -u | grep -vx 0' sh "$a")
                first=${uids%%$'\n'*}
                t_ok "job A runs as a host uid of the pool ($first)" test -n "$first" -a "${first:-0}" -ge 1879048192
                t_eq "job A's processes: one host uid (the job user of its range)" 1 "$(wc -l <<<"$uids")"
                lease=$(in_box cat "$POND_RUN/uids/$a" 2>/dev/null)
                t_like "job A holds a uid range lease" '^[0-9]+$' "$lease"
        fi
        a_addr=$(word "$hog" addr)
        t_like "job A: its own TCP service answers A ($a_addr)" '^ok$' "$(word "$hog" self)"
        run_job "$b" --profile untrusted-code-write -- python3 -c "$PROBE_PY" job-probe "$a_addr"
        t_eq "job B ran" 0 "$RC" || diag "$OUT"
        probe=$(grep '^probe ' <<<"$OUT")
        diag "job B: $probe"
        v=$(word "$probe" neighbour)
        t_ok "job B cannot reach job A's TCP service at $a_addr ($v)" test -n "$v" -a "$v" != ok -a "$v" != connected
        for r in $RESOURCES; do
                v=$(word "$probe" "$r")
                hv=$(word "$hog" "$r")
                if [ "$r" = keys ] && [ "${hv%%:*}" = 0 ] && [ "$v" = "${hv#*:}" ]; then
                        # no job can use it at all (the job's seccomp filter, or gVisor): nothing to exhaust
                        t_ok "job B: $r unreachable from any job (A and B: $v)" true
                        continue
                fi
                t_eq "job B gets $r while job A holds its neighbours' share" ok "$v"
        done
else
        t_not_ok "job A did not get ready" || diag "$(in_box cat "$POND_STATE/jobs/$a/log/stdout" 2>&1)"
fi
pond cancel "$a" >/dev/null 2>&1
wait "$a_pid" 2>/dev/null
wait_gone "$a" || diag "job A still running"
t_clean "nothing of job A is left" "$a"
t_clean "nothing of job B is left" "$b"
t_eq "no uid range lease is left of A or B" "" "$(in_box ls "$POND_RUN/uids" 2>/dev/null | grep -E "^($a|$b)\$")"

done_testing
