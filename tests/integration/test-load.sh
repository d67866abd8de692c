#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-load.sh: POND_LOAD_JOBS jobs (default 200), POND_LOAD_PARALLEL at once (default 16), each `true`
# under the confined profile (proxy, netns, nftables, overlay) and POND_TEST_BACKEND: every one completed
# with rc 0 and a verifying result, none OOM-killed (a removed memory cgroup is not an OOM), and the host's
# pond state back to what it was before the first job. CI runs a reduced count (tests/meson.build).
# Then a burst (POND_BURST_JOBS, default 40, all at once) right after pond-sandbox.service was stopped, with
# the system bus's connections for root made scarce: every job waits for the sandbox and for a connection,
# and completes (before, those that found neither were refused "the supervisors' sandbox ... is not
# available").
# Then long jobs waited on (POND_WAIT_JOBS, default 40, `sleep 5`, each with its `pondctl run`) while root may
# hold fewer bus connections than there are callers: a waiting pondctl holds none, so the supervisors get
# them and every job completes (before, the callers held every connection while they waited, no supervisor
# could connect, and each was refused after waiting 120 s for one).
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

N=${POND_LOAD_JOBS:-200}
P=${POND_LOAD_PARALLEL:-16}
prefix="load-$$-$RANDOM"

base=$(host_state)
t_like "the host's pond state can be read" "checked" "$base"
start=$(date +%s)
# shellcheck disable=SC2016 # the box's sh expands these
in_box sh -c 'seq "$1" | xargs -P "$2" -I{} "$3" run --quiet --job-id "$4-{}" --backend "$5" \
        --profile untrusted-code-write -- true >/dev/null 2>&1; exit 0' sh "$N" "$P" "$PONDCTL" "$prefix" "$BACKEND"
diag "$N jobs, $P at once, $BACKEND: $(($(date +%s) - start)) s"
for i in $(seq "$N"); do wait_gone "$prefix-$i" || break; done

# One pass over the results: how many there are, completed with rc 0, OOM-killed, verifying.
# shellcheck disable=SC2016 # the box's python and sh
counts=$(in_box python3 -c '
import json, os, subprocess, sys
prefix, n, pondctl = sys.argv[1], int(sys.argv[2]), sys.argv[3]
have = ok = oom = verified = 0
for i in range(1, n + 1):
    d = "/var/lib/pond/results/%s-%d" % (prefix, i)
    try:
        r = json.load(open(d + "/result.json"))
    except OSError:
        continue
    have += 1
    ok += r["status"] == "completed" and r["exit"]["rc"] == 0
    oom += bool(r["exit"]["oom_killed"])
    verified += subprocess.run([pondctl, "verify", "--pubkey", "/etc/pond/keys/sign.pub", "--job-id",
                                "%s-%d" % (prefix, i), d], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL).returncode == 0
print(have, ok, oom, verified)' "$prefix" "$N" "$PONDCTL")
read -r have ok oom verified <<<"$counts"
diag "results $have, completed rc 0 $ok, OOM-killed $oom, verified $verified (of $N)"
t_eq "every job has a result" "$N" "$have"
t_eq "every job completed with rc 0" "$N" "$ok"
t_eq "no false OOM under load" 0 "$oom"
t_eq "every result verifies" "$N" "$verified"
t_eq "the host's pond state is back to what it was" "$base" "$(host_state)"

# --- the burst. dbus-daemon allows 256 connections per uid (max_connections_per_user); every job held two of
# root's while it ran (its supervisor's, its caller's), so 200 jobs at once used them up. Lowered to 60 here,
# a burst of 40 does the same in seconds: 40 supervisors and 40 callers' starts and questions at once.
B=${POND_BURST_JOBS:-40}
bprefix="burst-$$-$RANDOM"
limits=/etc/dbus-1/system-local.conf
bus_limit() { # N: root's (every uid's) connections to the system bus, until bus_limit_reset
        in_box sh -c "mkdir -p /etc/dbus-1 && printf '%s\n' '<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN\" \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">' '<busconfig><limit name=\"max_connections_per_user\">$1</limit></busconfig>' >$limits && systemctl reload dbus.service"
}
bus_limit_reset() { in_box sh -c "rm -f $limits && systemctl reload dbus.service"; }
bus_limit 60
in_box systemctl stop pond-sandbox.service
start=$(date +%s)
# shellcheck disable=SC2016 # the box's sh expands these
in_box sh -c 'seq "$1" | xargs -P "$1" -I{} "$2" run --quiet --job-id "$3-{}" --backend "$4" \
        --profile untrusted-code-read -- true >/dev/null 2>&1; exit 0' sh "$B" "$PONDCTL" "$bprefix" "$BACKEND"
diag "burst: $B jobs at once after the sandbox was stopped, 60 bus connections for root: $(($(date +%s) - start)) s"
bus_limit_reset
for i in $(seq "$B"); do wait_gone "$bprefix-$i" || break; done
# shellcheck disable=SC2016 # the box's python
ends=$(in_box python3 -c '
import collections, json, sys
prefix, n = sys.argv[1], int(sys.argv[2])
c = collections.Counter()
for i in range(1, n + 1):
    try:
        r = json.load(open("/var/lib/pond/results/%s-%d/result.json" % (prefix, i)))
    except OSError:
        c["none"] += 1
        continue
    c["completed" if r["status"] == "completed" and r["exit"]["rc"] == 0 else r["status"]] += 1
print(" ".join("%s %d" % kv for kv in sorted(c.items())))' "$bprefix" "$B")
diag "burst results: $ends"
t_eq "every job of the burst completed with rc 0" "completed $B" "$ends"
t_eq "the host's pond state is back to what it was after the burst" "$base" "$(host_state)"

# --- long jobs, each waited on by its caller, with fewer connections for root than callers: every running
# job held two of root's (supervisor and caller) while its caller waited, so with the callers alone at the
# limit no supervisor could connect until one timed out (120 s) and its job was refused. A waiting pondctl
# now holds none (it follows the result's file and asks the unit over a connection of a moment): the
# supervisors take them, and the jobs beyond the limit start as the first end.
W=${POND_WAIT_JOBS:-40}
WL=$((W * 3 / 4))
wprefix="wait-$$-$RANDOM"
bus_limit "$WL"
start=$(date +%s)
# shellcheck disable=SC2016 # the box's sh expands these
rcs=$(in_box sh -c 'd=$(mktemp -d); i=0
        while [ "$i" -lt "$1" ]; do
                i=$((i + 1))
                ("$2" run --quiet --job-id "$3-$i" --backend "$4" --profile untrusted-code-read -- sleep 5 \
                        >/dev/null 2>&1; echo $? >"$d/$i") &
        done
        wait; cat "$d"/* | sort -n | uniq -c | while read -r n rc; do printf "rc %s x%s " "$rc" "$n"; done
        rm -rf "$d"' sh "$W" "$PONDCTL" "$wprefix" "$BACKEND")
diag "$W \`sleep 5\` jobs waited on at once, $WL bus connections for root: $(($(date +%s) - start)) s; callers: $rcs"
bus_limit_reset
for i in $(seq "$W"); do wait_gone "$wprefix-$i" || break; done
t_eq "every caller of a long job returned 0 with fewer bus connections than callers" "rc 0 x$W" "${rcs% }"
t_eq "the host's pond state is back to what it was after the waited jobs" "$base" "$(host_state)"
done_testing
