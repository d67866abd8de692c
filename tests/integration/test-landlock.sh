#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-landlock.sh: Landlock inside the job (docs/threat-model.md, "Landlock"), under POND_TEST_BACKEND.
# runc: each attempt below is one only Landlock stops (its mount, its mode bits and the job's network allow
# it), shown beside its control, the same profile without its landlock (a site policy in /etc/pond for the
# length of that job). untrusted-code-write (best-effort): /proc/self/comm and /dev/.pond-init (a file of
# the runtime's /dev, an exec mount) refused; TCP is left to nftables (a listener of the job's own on
# loopback connects, as a test suite's server must); /tmp, the home, /workspace, /dev/shm and POSIX message
# queues work, the home executes. An exec'd call (pondctl exec) is in the payload's own domain: each can signal
# the other under the domain's signal scope (ABI >= 6), which a process of another domain cannot (its
# control: a child of the exec in a domain of its own). untrusted-code-locked (required, ABI >= 4, an exec
# allowlist, TCP only to the sidecars): also /dev/mqueue refused, a copy of true in its home refused
# (EACCES) and another port on the proxy's address EACCES, while python3, sh,
# git and a C compiler work. untrusted-code-read (best-effort, TCP left to nftables): loopback connects.
# The result records the ABI. runsc: landlock_create_ruleset is ENOSYS in gVisor (measured here; EPERM
# behind a confined job's filter); best-effort records "not available", required is refused naming gVisor.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

# What the job tries, one key=value a line.
# shellcheck disable=SC2016 # the job's sh expands these
LL_SH='
if touch /dev/mqueue/pond-q 2>/dev/null; then echo mqueue=written; else echo mqueue=denied; fi
if (printf x >/proc/self/comm) 2>/dev/null; then echo proc=written; else echo proc=denied; fi
if (echo x >/dev/shm/f) 2>/dev/null; then echo shm=written; else echo shm=denied; fi
if (echo x >/tmp/f && echo x >"$HOME/f") 2>/dev/null; then echo tmp_home=written; else echo tmp_home=denied; fi
if (echo x >/workspace/.pond-ll) 2>/dev/null; then echo workspace=written; else echo workspace=denied; fi
cp /bin/true "$HOME/t" && chmod 755 "$HOME/t"
"$HOME/t"; echo "exec_home=$?"
python3 -c "
import ctypes, errno, os, socket, subprocess, urllib.parse
def name(e):
    return errno.errorcode.get(e, str(e))
# /dev/.pond-init: a file on the /dev of the runtime (mounted without noexec), mode 755, outside the exec list
try:
    subprocess.run([\"/dev/.pond-init\"], capture_output=True); print(\"exec_dev=ran\")
except OSError as e:
    print(\"exec_dev=%s\" % name(e.errno))
rt = ctypes.CDLL(\"librt.so.1\", use_errno=True)
fd = rt.mq_open(b\"/pond-ll\", os.O_CREAT | os.O_RDWR, 0o600, None)
print(\"mq_open=%s\" % (\"ok\" if fd >= 0 else name(ctypes.get_errno())))
rt.mq_unlink(b\"/pond-ll\")
proxy = os.environ.get(\"HTTPS_PROXY\")
host = urllib.parse.urlparse(proxy).hostname if proxy else \"127.0.0.1\"
s = socket.socket(); s.settimeout(5)
try:
    s.connect((host, 9)); print(\"connect_other=connected\")
except OSError as e:
    print(\"connect_other=%s\" % (name(e.errno) if e.errno else \"timeout\"))
s = socket.socket(); s.settimeout(5)
try:
    s.connect((host, 3128)); print(\"connect_proxy=connected\")
except OSError as e:
    print(\"connect_proxy=%s\" % name(e.errno))
# a listener of the job itself on loopback: its network allows it, a TCP rule of Landlock does not
srv = socket.socket(); srv.bind((\"127.0.0.1\", 0)); srv.listen(1)
s = socket.socket(); s.settimeout(5)
try:
    s.connect(srv.getsockname()); print(\"connect_lo=connected\")
except OSError as e:
    print(\"connect_lo=%s\" % (name(e.errno) if e.errno else \"timeout\"))
print(\"python=ok\")"
sh -c "echo sh=ok"
if command -v git >/dev/null; then
        (cd /tmp && git init -q g && cd g && git -c user.name=p -c user.email=p@x commit -q --allow-empty -m x &&
                echo git=ok) 2>&1 | tail -n 1
else
        echo git=absent
fi
if command -v cc >/dev/null; then
        printf "int main(void) { return 0; }\n" >/tmp/m.c && cc -o /tmp/m /tmp/m.c && /tmp/m && echo cc=ok
else
        echo cc=absent
fi'

# The kernel's answer to landlock_create_ruleset(NULL, 0, VERSION) as the payload sees it.
# shellcheck disable=SC2016
PROBE_PY='import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(444, None, 0, 1)
print("abi=%d" % r if r > 0 else "abi=%s" % os.strerror(ctypes.get_errno()))'

field() { sed -n "s/^$1=//p" <<<"$OUT" | head -n 1; }
ids=()

job() { # ID PROFILE ARGS...
        local id=$1 prof=$2; shift 2
        ids+=("$id")
        run_job "$id" --profile "$prof" "$@"
}

# A checkout of the job user's, so that /workspace is there (read-write under the write profiles).
if ! co=$(in_box mktemp -d /var/tmp/pond-landlock.XXXXXX) || ! in_box chown 1000:1000 "$co"; then
        bail_out "could not make a checkout"
fi

# The control: the same profile without its landlock object, from a site policy (/etc/pond/profiles.json
# replaces the shipped one by name), removed again as soon as the control job has run.
SITE=/etc/pond/profiles.json
in_box test ! -e "$SITE" || bail_out "$SITE exists: this test replaces it for its control"
trap 'rc=$?; in_box rm -rf "$SITE" "$co"; (exit "$rc"); _t_atexit' EXIT
without_landlock() { # PROFILE: the site policy
        in_box python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
del p["profiles"][sys.argv[2]]["landlock"]
json.dump(p, open(sys.argv[3], "w"), indent=1)' "$POND_SRCDIR/policy/profiles.json" "$1" "$SITE"
}

# The payload and an exec in the same Landlock domain. The payload says its pid, then waits for the exec's
# and signals it (kill -0 passes Landlock's signal scope only within the sender's domain or one nested in
# it); the exec signals the payload, and, as the control, a child of the exec in a domain of its own
# (landlock_restrict_self with the signal scope) signals the payload too, which that scope must refuse.
# shellcheck disable=SC2016 # the job's sh expands these
DOMAIN_PAYLOAD='echo $$ >/tmp/payload.pid; echo ready
for _ in $(seq 600); do [ -s /tmp/exec.pid ] && break; sleep 0.1; done
if kill -0 "$(cat /tmp/exec.pid)" 2>/dev/null; then echo ok >/tmp/checked; else echo EPERM >/tmp/checked; fi
exec sleep 300'
# shellcheck disable=SC2016 # python's
DOMAIN_EXEC='import ctypes, errno, os, time
libc = ctypes.CDLL(None, use_errno=True)
payload = int(open("/tmp/payload.pid").read())
def signal(pid):
    try:
        os.kill(pid, 0); return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
open("/tmp/exec.pid.new", "w").write("%d\n" % os.getpid()); os.rename("/tmp/exec.pid.new", "/tmp/exec.pid")
for _ in range(600):
    if os.path.exists("/tmp/checked") and open("/tmp/checked").read().strip():
        break
    time.sleep(0.1)
print("payload_signals_exec=" + open("/tmp/checked").read().strip())
print("exec_signals_payload=" + signal(payload))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    attr = (ctypes.c_uint64 * 3)(0, 0, 2)  # handled_access_fs, handled_access_net, scoped: SIGNAL
    fd = libc.syscall(444, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    ok = fd >= 0 and libc.syscall(446, fd, 0) == 0
    os.write(w, (signal(payload) if ok else "no-domain:" + os.strerror(ctypes.get_errno())).encode())
    os._exit(0)
os.close(w); os.waitpid(pid, 0)
print("other_domain_signals_payload=" + os.read(r, 100).decode())
try:
    open("/proc/self/comm", "w").write("x"); print("exec_proc=written")
except OSError as e:
    print("exec_proc=" + errno.errorcode.get(e.errno, str(e.errno)))'

if [ "$BACKEND" = runc ]; then
        id=$(new_id ll-probe)
        job "$id" untrusted-code-write -- python3 -c "$PROBE_PY"
        t_like "the kernel's Landlock ABI inside a runc job" '^[1-9]' "$(field abi)" || diag "$OUT"
        host_abi=$(in_box "$PONDCTL" probe --json |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["landlock"]["abi"])')
        t_like "pondctl probe advertises the ABI" '^[1-9]' "$host_abi"

        # the control: untrusted-code-write without Landlock
        without_landlock untrusted-code-write
        id=$(new_id ll-off)
        job "$id" untrusted-code-write --checkout "$co" -- sh -c "$LL_SH"
        in_box rm -f "$SITE"
        t_eq "off: job ran" 0 "$RC" || diag "$OUT"
        t_eq "off: /dev/mqueue is writable by its mount" written "$(field mqueue)"
        t_eq "off: /proc/self/comm is writable by its mount" written "$(field proc)"
        t_eq "off: /dev/.pond-init executes (its mount and mode allow it)" ran "$(field exec_dev)"
        t_eq "off: a copy of true runs from the home" 0 "$(field exec_home)"
        t_like "off: another port on the proxy's address is not EACCES" \
                '^(ECONNREFUSED|EHOSTUNREACH|timeout|connected)$' \
                "$(field connect_other)"
        t_eq "off: a listener of its own on loopback connects (its network allows it)" connected \
                "$(field connect_lo)"
        t_eq "off: no landlock in the result" None "$(result_field "$id" 'r.get("landlock")')"

        id=$(new_id ll-write)
        job "$id" untrusted-code-write --checkout "$co" -- sh -c "$LL_SH"
        t_eq "write: job ran" 0 "$RC" || diag "$OUT"
        t_eq "write: /proc/self/comm refused although its mount allows it" denied "$(field proc)"
        t_eq "write: /dev/.pond-init (not on the exec list) refused: EACCES" EACCES "$(field exec_dev)"
        t_eq "write: a listener of its own on loopback connects (TCP left to nftables: a test suite's own server)" \
                connected "$(field connect_lo)"
        t_like "write: another port on the proxy's address is not EACCES (nftables' to refuse)" \
                '^(ECONNREFUSED|EHOSTUNREACH|timeout|connected)$' "$(field connect_other)"
        t_eq "write: the proxy's port connects" connected "$(field connect_proxy)"
        t_eq "write: /tmp and the home are writable" written "$(field tmp_home)"
        t_eq "write: /workspace is writable" written "$(field workspace)"
        t_eq "write: /dev/shm is writable (POSIX shared memory)" written "$(field shm)"
        t_eq "write: /dev/mqueue is writable (mqueue: true)" written "$(field mqueue)"
        t_eq "write: mq_open works" ok "$(field mq_open)"
        t_eq "write: a copy of true runs from the home (on the exec list)" 0 "$(field exec_home)"
        t_eq "write: python3 works" ok "$(field python)"
        t_eq "write: sh works" ok "$(field sh)"
        t_like "write: git works (where present)" '^(ok|absent)$' "$(field git)"
        t_like "write: cc builds and runs in /tmp (where present)" '^(ok|absent)$' "$(field cc)"
        t_eq "write: result mode" best-effort "$(result_field "$id" 'r["landlock"]["mode"]')"
        t_eq "write: result ABI is the kernel's" "$host_abi" "$(result_field "$id" 'r["landlock"]["abi"]')"
        t_eq "write: result applied" True "$(result_field "$id" 'r["landlock"]["applied"]')"
        t_eq "write: result tcp_connect" any "$(result_field "$id" 'r["landlock"]["tcp_connect"]')"
        t_eq "write: result exec_allow (the defaults)" None "$(result_field "$id" 'r["landlock"]["exec_allow"]')"

        # an exec'd call: the payload's own domain
        id=$(new_id ll-exec)
        ids+=("$id")
        cmd=$(python3 -c 'import json,sys; print(json.dumps(["sh", "-c", sys.argv[1]]))' "$DOMAIN_PAYLOAD")
        printf '{"job_id":"%s","tenant":"t","command":%s,"sandbox":{"profile":"untrusted-code-write","backend":"%s"}}\n' \
                "$id" "$cmd" "$BACKEND" | in_box "$PONDCTL" submit - >/dev/null
        for _ in $(seq 600); do
                pond logs "$id" 2>/dev/null | grep -q '^ready' && break
                sleep 0.1
        done
        OUT=$(pond exec "$id" -- python3 -c "$DOMAIN_EXEC" 2>&1)
        diag "exec: $(tr '\n' ' ' <<<"$OUT")"
        t_eq "exec: the payload can signal it (the same domain, or one nested in the payload's)" ok \
                "$(field payload_signals_exec)"
        t_eq "exec: it can signal the payload (the same domain, or none)" ok "$(field exec_signals_payload)"
        if [ "$host_abi" -ge 6 ]; then
                t_eq "exec, the control: a process of a domain of its own cannot signal the payload" EPERM \
                        "$(field other_domain_signals_payload)"
        else
                t_skip "the kernel's ABI $host_abi has no signal scope (6)"
        fi
        t_eq "exec: /proc/self/comm refused, as in the payload" EACCES "$(field exec_proc)"
        pond exec "$id" -- /dev/.pond-init >/dev/null 2>&1
        t_eq "exec: executing /dev/.pond-init (not on the exec list) refused, as in the payload (126)" 126 "$?"
        pond cancel "$id" >/dev/null 2>&1
        pond wait -q "$id" >/dev/null 2>&1

        id=$(new_id ll-locked)
        job "$id" untrusted-code-locked --checkout "$co" -- sh -c "$LL_SH"
        t_eq "locked: job ran" 0 "$RC" || diag "$OUT"
        t_eq "locked: /dev/mqueue refused although its mount allows it" denied "$(field mqueue)"
        t_eq "locked: mq_open refused" EACCES "$(field mq_open)"
        t_eq "locked: /proc/self/comm refused although its mount allows it" denied "$(field proc)"
        t_eq "locked: /dev/shm is writable (POSIX shared memory)" written "$(field shm)"
        t_eq "locked: /tmp and the home are writable" written "$(field tmp_home)"
        t_eq "locked: a copy of true in the home is not on the allowlist: EACCES (126)" 126 "$(field exec_home)"
        t_like "locked: EACCES is what sh saw" 'Permission denied' "$OUT"
        t_eq "locked: another port on the proxy's address: EACCES" EACCES "$(field connect_other)"
        t_eq "locked: the proxy's port connects" connected "$(field connect_proxy)"
        t_eq "locked: python3 works" ok "$(field python)"
        t_eq "locked: sh works" ok "$(field sh)"
        t_like "locked: git works (where present)" '^(ok|absent)$' "$(field git)"
        t_like "locked: cc builds and runs in /tmp (where present)" '^(ok|absent)$' "$(field cc)"
        t_eq "locked: result mode" required "$(result_field "$id" 'r["landlock"]["mode"]')"
        t_eq "locked: result ABI is the kernel's" "$host_abi" "$(result_field "$id" 'r["landlock"]["abi"]')"
        t_eq "locked: result applied" True "$(result_field "$id" 'r["landlock"]["applied"]')"
        t_like "locked: result exec_allow" '/usr' "$(result_field "$id" 'r["landlock"]["exec_allow"]')"

        id=$(new_id ll-read)
        job "$id" untrusted-code-read --checkout "$co" -- sh -c "$LL_SH"
        t_eq "read: job ran" 0 "$RC" || diag "$OUT"
        t_eq "read: /proc/self/comm refused" denied "$(field proc)"
        t_eq "read: mq_open works (mqueue: true)" ok "$(field mq_open)"
        t_eq "read: /workspace is read-only" denied "$(field workspace)"
        t_eq "read: the home is executable by default" 0 "$(field exec_home)"
        t_like "read, tcp_connect any: TCP is nftables' (not EACCES)" \
                '^(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|timeout)$' "$(field connect_other)"
        t_eq "read, tcp_connect any: a listener of its own on loopback connects" connected "$(field connect_lo)"
        t_eq "read: result ABI" "$host_abi" "$(result_field "$id" 'r["landlock"]["abi"]')"
        t_eq "read: python3 works" ok "$(field python)"

        id=$(new_id ll-fds)
        job "$id" untrusted-code-locked -- sh -c 'ls /proc/self/fd | wc -l'
        t_eq "locked: the payload starts with stdio only (ls's own directory fd the fourth)" 4 "$OUT"
else
        # the Sentry's own answer (profile none: no seccomp filter in front of it), then a confined job's,
        # where runsc's copy of the job's filter leaves out the names gVisor does not implement: its
        # default action (EPERM) answers first
        id=$(new_id ll-probe)
        job "$id" none -- python3 -c "$PROBE_PY"
        t_eq "gVisor: landlock_create_ruleset is ENOSYS" "abi=Function not implemented" "abi=$(field abi)" ||
                diag "$OUT"
        id=$(new_id ll-probe)
        job "$id" untrusted-code-write -- python3 -c "$PROBE_PY"
        t_like "gVisor, confined: refused (EPERM by the filter, or ENOSYS)" \
                "^abi=(Operation not permitted|Function not implemented)$" "abi=$(field abi)" || diag "$OUT"

        for prof in untrusted-code-read untrusted-code-write; do
                id=$(new_id ll-best-effort)
                job "$id" "$prof" --checkout "$co" -- sh -c "$LL_SH"
                t_eq "$prof: job ran" 0 "$RC" || diag "$OUT"
                t_eq "$prof: result applied" False "$(result_field "$id" 'r["landlock"]["applied"]')"
                t_eq "$prof: result ABI" 0 "$(result_field "$id" 'r["landlock"]["abi"]')"
                t_like "$prof: result says why" 'gVisor' "$(result_field "$id" 'r["landlock"]["reason"]')"
                t_eq "$prof: a listener of its own on loopback connects (no Landlock)" connected \
                        "$(field connect_lo)"
                t_eq "$prof: python3 works" ok "$(field python)"
        done

        id=$(new_id ll-locked)
        job "$id" untrusted-code-locked -- true
        t_eq "required: refused (exit 125)" 125 "$RC" || diag "$OUT"
        t_eq "required: result status" refused "$(result_field "$id" 'r["status"]')"
        t_like "required: the reason names the ABI and gVisor" 'requires Landlock ABI >= 4.*gVisor' \
                "$(result_field "$id" 'r["reason"]')"
fi

left=
for id in "${ids[@]}"; do
        left+=$(leftovers "$id")
done
t_eq "nothing left by any job" "" "$left"
done_testing
