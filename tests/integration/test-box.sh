#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The box (or the host's systemd) is a real systemd whose resource limits
# work: everything the pond job units rely on.
#   POND_BOX=NAME bash tests/integration/test-box.sh   # a box from tools/pond-box start
#   POND_BOX=auto bash tests/integration/test-box.sh   # boots and stops its own box

# shellcheck disable=SC2016 # '$...' in single quotes is for the shell in the box

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_box
plan 13

state=$(in_box systemctl is-system-running)
t_like "systemd is running (or degraded)" '^(running|degraded)$' "$state"
[ "$state" = degraded ] && diag "failed units: $(in_box systemctl --failed --plain --no-legend | awk '{print $1}' | tr '\n' ' ')"

t_eq "PID 1 in the box is systemd" systemd "$(in_box cat /proc/1/comm)"
t_ok "the system bus answers" in_box busctl --system status --no-pager

# MemoryMax: a memory hog is OOM-killed.  Under cgroup v1 systemd 252 cannot
# tell an OOM kill (Result=oom-kill needs memory.events of cgroup v2): it
# reports Result=signal, status KILL.  Accept either, and prove below that
# it was the kernel's memcg OOM killer.
hog='b = bytearray(200 << 20)'
t_fail "MemoryMax=32M: a 200 MB allocation fails" \
        in_box systemd-run --quiet --wait -p MemoryMax=32M --unit=pond-test-oom python3 -c "$hog"
result=$(in_box systemctl show -P Result pond-test-oom.service)
status=$(in_box systemctl show -P ExecMainStatus pond-test-oom.service)
t_like "MemoryMax=32M: killed (Result=$result, status $status)" '^(oom-kill:.*|signal:9)$' "$result:$status"
in_box systemctl reset-failed pond-test-oom.service >/dev/null 2>&1
out=$(in_box systemd-run --quiet --wait --pipe -p MemoryMax=32M sh -c '
        python3 -c "'"$hog"'"; echo "status=$?"
        cg=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)
        if [ -f /sys/fs/cgroup/memory.events ]; then grep "^oom_kill " /sys/fs/cgroup$cg/memory.events
        else grep "^oom_kill " /sys/fs/cgroup/memory$cg/memory.oom_control; fi' 2>&1)
t_like "MemoryMax=32M: the kernel OOM killer did it (SIGKILL, oom_kill 1 in the unit's memcg)" \
        'status=137.*oom_kill [1-9]' "${out//$'\n'/ }"
t_ok "MemoryMax=512M: the same allocation succeeds" \
        in_box systemd-run --quiet --wait -p MemoryMax=512M python3 -c "$hog"

# TasksMax: a fork loop is contained.
forker='
import os, time
ok = failed = 0
for i in range(50):
    try:
        pid = os.fork()
    except OSError:
        failed += 1
        continue
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    ok += 1
print("forked=%d failed=%d" % (ok, failed))'
out=$(in_box systemd-run --quiet --wait --pipe -p TasksMax=10 python3 -c "$forker")
t_like "TasksMax=10: at most 9 of 50 forks succeed ($out)" '^forked=[0-9] failed=(4[1-9]|50)$' "$out"
t_fail "TasksMax=10: a shell fork loop fails" \
        in_box systemd-run --quiet --wait -p TasksMax=10 sh -c 'for i in $(seq 50); do sleep 5 & done; wait'
t_ok "TasksMax=100: the same loop succeeds" \
        in_box systemd-run --quiet --wait -p TasksMax=100 sh -c 'for i in $(seq 50); do sleep 0.2 & done; wait'

# Delegated scope in pond.slice, as pond runs runc.
t_ok "runc in a delegated scope in pond.slice" \
        in_box systemd-run --quiet --scope -p Delegate=yes -p Slice=pond.slice runc --version
cg=$(in_box systemd-run --quiet --scope -p Delegate=yes -p Slice=pond.slice cat /proc/self/cgroup)
t_like "the scope's cgroup is in pond.slice" '(^|[[:space:]])[0-9]+:pids:/pond\.slice/run-[^ ]+\.scope' "${cg//$'\n'/ }"

# The journal is queryable.
marker="pond-test-box-$$-$RANDOM"
in_box sh -c "echo $marker | systemd-cat -t pond-test-box"
found=
for _ in $(seq 50); do
        if in_box journalctl -t pond-test-box -o cat --no-pager | grep -qx "$marker"; then
                found=$marker; break
        fi
        sleep 0.1
done
t_eq "journalctl shows a message logged with systemd-cat" "$marker" "$found"
