#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-landlock.sh: Landlock inside the job (docs/threat-model.md, "Landlock"), under POND_TEST_BACKEND.
# runc: a job of untrusted-code-locked (required, ABI >= 4, an exec allowlist) cannot create a file where
# its mounts would let it (/dev/mqueue), cannot execute a copy of true from its home (EACCES, outside the
# allowlist), cannot connect to a TCP port other than its sidecars' (EACCES), while python3, sh, git and a C
# compiler still work; the same payload in untrusted-code-write (no Landlock) does all of it (the control).
# untrusted-code-read (best-effort, TCP left to nftables) runs with the kernel's ABI, its home executable.
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
cp /bin/true "$HOME/t" && chmod 755 "$HOME/t"
"$HOME/t"; echo "exec_home=$?"
python3 -c "
import errno, os, socket, urllib.parse
proxy = os.environ.get(\"HTTPS_PROXY\")
host = urllib.parse.urlparse(proxy).hostname if proxy else \"127.0.0.1\"
s = socket.socket(); s.settimeout(5)
try:
    s.connect((host, 9)); print(\"connect_other=connected\")
except OSError as e:
    print(\"connect_other=%s\" % (errno.errorcode.get(e.errno, e.errno) if e.errno else \"timeout\"))
s = socket.socket(); s.settimeout(5)
try:
    s.connect((host, 3128)); print(\"connect_proxy=connected\")
except OSError as e:
    print(\"connect_proxy=%s\" % errno.errorcode.get(e.errno, e.errno))
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

if [ "$BACKEND" = runc ]; then
        id=$(new_id ll-probe)
        job "$id" untrusted-code-write -- python3 -c "$PROBE_PY"
        t_like "the kernel's Landlock ABI inside a runc job" '^[1-9]' "$(field abi)" || diag "$OUT"
        host_abi=$(in_box "$PONDCTL" probe --json |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["landlock"]["abi"])')
        t_like "pondctl probe advertises the ABI" '^[1-9]' "$host_abi"

        # the control: no Landlock
        id=$(new_id ll-off)
        job "$id" untrusted-code-write -- sh -c "$LL_SH"
        t_eq "off: job ran" 0 "$RC" || diag "$OUT"
        t_eq "off: /dev/mqueue is writable by its mount" written "$(field mqueue)"
        t_eq "off: /proc/self/comm is writable by its mount" written "$(field proc)"
        t_eq "off: a copy of true runs from the home" 0 "$(field exec_home)"
        t_like "off: another port on the proxy's address is not EACCES" \
                '^(ECONNREFUSED|EHOSTUNREACH|timeout|connected)$' \
                "$(field connect_other)"
        t_eq "off: no landlock in the result" None "$(result_field "$id" 'r.get("landlock")')"

        id=$(new_id ll-locked)
        job "$id" untrusted-code-locked -- sh -c "$LL_SH"
        t_eq "locked: job ran" 0 "$RC" || diag "$OUT"
        t_eq "locked: /dev/mqueue refused although its mount allows it" denied "$(field mqueue)"
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
        job "$id" untrusted-code-read -- sh -c "$LL_SH"
        t_eq "best-effort: job ran" 0 "$RC" || diag "$OUT"
        t_eq "best-effort: /dev/mqueue refused" denied "$(field mqueue)"
        t_eq "best-effort: the home is executable by default" 0 "$(field exec_home)"
        t_like "best-effort, tcp_connect any: TCP is nftables' (not EACCES)" \
                '^(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|timeout)$' "$(field connect_other)"
        t_eq "best-effort: result ABI" "$host_abi" "$(result_field "$id" 'r["landlock"]["abi"]')"
        t_eq "best-effort: python3 works" ok "$(field python)"

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

        id=$(new_id ll-read)
        job "$id" untrusted-code-read -- sh -c "$LL_SH"
        t_eq "best-effort: job ran" 0 "$RC" || diag "$OUT"
        t_eq "best-effort: result applied" False "$(result_field "$id" 'r["landlock"]["applied"]')"
        t_eq "best-effort: result ABI" 0 "$(result_field "$id" 'r["landlock"]["abi"]')"
        t_like "best-effort: result says why" 'gVisor' "$(result_field "$id" 'r["landlock"]["reason"]')"

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
