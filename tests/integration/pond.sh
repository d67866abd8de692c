# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pond.sh: helpers shared by pond's integration tests, on top of lib.sh. Commands run inside the box.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PONDCTL=${PONDCTL:-/opt/pond/bin/pondctl}
POND_STATE=/var/lib/pond
POND_RUN=/run/pond

# The backend every job of this script runs under (one test body, one variant per backend).
BACKEND=${POND_TEST_BACKEND:-runc}

pond() { in_box "$PONDCTL" "$@"; }

# new_id PREFIX: a fresh job id
new_id() { echo "$1-$$-$RANDOM$RANDOM"; }

# run_job ID ARGS...: `pondctl run --job-id ID --backend $BACKEND ARGS...`, output in $OUT, status in $RC
# shellcheck disable=SC2034 # OUT and RC are for the scripts that source this file
run_job() {
        local id=$1; shift
        OUT=$(pond run --quiet --job-id "$id" --backend "$BACKEND" "$@" 2>&1)
        RC=$?
}

# result_field ID EXPR: a field of the job's result.json (python expression over r)
result_field() {
        in_box python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
                "$POND_STATE/results/$1/result.json" "$2"
}

# The leftover check, run inside the box as `sh -c "$_leftovers_sh" sh ID POND_RUN`, with only what the box's
# /usr has (no awk: /etc/alternatives is not there). Each finding is a line; so is each check that could
# not be made (a failing systemctl, an unknown cgroup layout) and anything on stderr, so that t_clean
# fails rather than passes by accident. The last line, "checked", says the script ran to its end.
# shellcheck disable=SC2016 # expanded by the box's sh, not here
_leftovers_sh='
id=$1 run=$2
# Every mount namespace, not only ours: pond-job@ has one of its own (PrivateMounts= and friends), where the
# staging lives; a process left in it would keep it, invisible from here. A process that exits meanwhile
# takes its namespace view with it (no file to read: skipped).
for f in /proc/[0-9]*/mountinfo; do
        m=$(cat "$f" 2>/dev/null) || continue
        printf "%s\n" "$m" | while read -r _ _ _ _ mp _; do
                case $mp in "$run/jobs/$id" | "$run/jobs/$id"/*) echo "mount: $mp" ;; esac
        done
done | sort -u
for d in "$run/jobs/$id" "$run/egress/$id" "$run/broker/$id" "/run/pond-egress/$id" "/run/pond-broker/$id"; do
        [ ! -e "$d" ] || echo "directory: $d"
done
[ ! -e "$run/console/$id.sock" ] || echo "console socket: $run/console/$id.sock"
[ ! -e "$run/net/job-$id" ] || echo "address lease of $id"
if [ -d "$run/runtime" ]; then
        entries=$(ls -A "$run/runtime") || echo "cannot list $run/runtime"
        printf "%s\n" "$entries" | grep -E "pond-$id\+?(\$|_sandbox:|\.sock)" | sed "s/^/runtime state: /"
fi
for u in "pond-job@$id.service" "pond-egress@$id.service" "pond-broker@$id.service"; do
        state=$(systemctl show -P ActiveState "$u") || { echo "systemctl failed for $u"; continue; }
        case $state in inactive|failed) ;; *) echo "unit $state: $u" ;; esac
done
for u in "pond-$id.scope" "pond-egress@$id.socket"; do
        state=$(systemctl show -P LoadState "$u") || { echo "systemctl failed for $u"; continue; }
        [ "$state" != loaded ] || echo "transient unit: $u"
done
# cgroup v2 (unified): one tree. v1 (legacy or hybrid, tmpfs at the top): every hierarchy, the unified
# one of a hybrid layout included.
fs=$(stat -f -c %T /sys/fs/cgroup) || fs="(statfs failed)"
case $fs in
cgroup2fs) roots=/sys/fs/cgroup ;;
tmpfs) roots=$(find /sys/fs/cgroup -mindepth 1 -maxdepth 1 -type d) ;;
*) echo "cgroup: unknown layout, /sys/fs/cgroup is $fs"; roots= ;;
esac
for r in $roots; do
        [ ! -e "$r/pond.slice/pond-$id.scope" ] || echo "cgroup: $r/pond.slice/pond-$id.scope"
done
echo checked'

# leftovers ID: prints whatever job ID left behind (empty when clean): mounts (in any mount namespace),
# directories of the job and its sidecars, its console socket, the address lease, runtime state, units,
# the scope and its cgroups
leftovers() {
        local out rc
        out=$(in_box sh -c "$_leftovers_sh" sh "$1" "$POND_RUN" 2>&1)
        rc=$?
        if [ "$rc" != 0 ] || [ "${out##*$'\n'}" != checked ]; then
                printf '%s\n' "${out:+$out
}the leftover check did not run to its end (status $rc)"
                return
        fi
        out=${out%checked}
        printf '%s' "${out%$'\n'}"
}

# cgroup_layout: "unified" (cgroup v2 only) or "v1" (legacy or hybrid: the controllers are on v1
# hierarchies), as the box sees it; fails on anything else
cgroup_layout() {
        local fs
        fs=$(in_box stat -f -c %T /sys/fs/cgroup) || return 1
        case $fs in
        cgroup2fs) echo unified ;;
        tmpfs) echo v1 ;;
        *) echo "unknown cgroup layout: /sys/fs/cgroup is $fs" >&2; return 1 ;;
        esac
}

# memory_cgroup LAYOUT PATH: the directory of cgroup PATH (e.g. pond.slice/...) where the memory
# controller's files are
memory_cgroup() {
        if [ "$1" = unified ]; then echo "/sys/fs/cgroup/$2"; else echo "/sys/fs/cgroup/memory/$2"; fi
}

# memory_limit_file LAYOUT: the name of the memory limit's file in a cgroup
memory_limit_file() {
        if [ "$1" = unified ]; then echo memory.max; else echo memory.limit_in_bytes; fi
}

# proc_cgroup LAYOUT PID: the cgroup of PID in the box, in the memory controller's hierarchy
proc_cgroup() {
        local field='^0::'
        [ "$1" = unified ] || field='^[0-9]+:memory:'
        in_box cat "/proc/$2/cgroup" | grep -E "$field" | cut -d: -f3-
}

# dir_entries DIR: the names in DIR in the box, or "none" (also when DIR does not exist); nothing if the box
# could not say
dir_entries() {
        # shellcheck disable=SC2016 # $1 is the inner sh's
        in_box sh -c 'l=; if [ -d "$1" ]; then l=$(ls -A "$1") || exit 1; fi; echo "${l:-none}"' sh "$1"
}

# path_state PATH: "present" or "absent", from inside the box (nothing if the box could not say)
path_state() {
        # shellcheck disable=SC2016 # $1 is the inner sh's
        in_box sh -c 'if [ -e "$1" ]; then echo present; else echo absent; fi' sh "$1"
}

# host_state: the host's pond state, one finding per line (the job directories, leases, runtime state, staging
# dirs, probe dirs, mounts, namespaces, veths, nft tables, cgroups and units of every job), sorted, ending in
# "checked": a test compares it with what it was before its first job.
# shellcheck disable=SC2016 # expanded by the box's sh
_state_sh='
for d in /run/pond/jobs /run/pond/net /run/pond/egress /run/pond/broker /run/pond-egress /run/pond-broker; do
        [ -d "$d" ] && ls -A "$d" | sed "s|^|$d/|"
done
ls -A /run/pond/runtime 2>/dev/null | sed "s|^|runtime: |"
ls -A /var/lib/pond/results | grep "^\." | sed "s|^|staging: |"
ls -d /tmp/pond-runsc-probe.* 2>/dev/null
for f in /proc/[0-9]*/mountinfo; do
        m=$(cat "$f" 2>/dev/null) || continue
        printf "%s\n" "$m" | while read -r _ _ _ _ mp _; do
                case $mp in /run/pond/*|/var/lib/pond/*|/run/netns/pond-*) echo "mount: $mp" ;; esac
        done
done | sort -u
ls /run/netns 2>/dev/null | grep "^pond-" | sed "s|^|netns: |"
ip -br link | grep "^pv" | cut -d" " -f1 | sed "s|^|veth: |"
nft list tables | grep pond_ | sed "s|^|nft: |"
for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
        [ -d "$h/pond.slice" ] && ls "$h/pond.slice" | grep "^pond-" | sed "s|^|cgroup: $h/pond.slice/|"
done
# pond-sandbox.service and pond-reconcile.service are the worker'"'"'s, not a job'"'"'s: the first job of a boot
# starts them (a box installs pond after its boot)
systemctl list-units --plain --no-legend "pond-*" | cut -d" " -f1 |
        grep -vx -e pond-sandbox.service -e pond-reconcile.service | sed "s|^|unit: |"
echo checked'
host_state() { in_box sh -c "$_state_sh" 2>&1 | sort; }

t_clean() { # DESC ID: nothing of job ID remains once its unit has stopped (pondctl returns at the signed
        # result, while the teardown goes on)
        local left
        wait_gone "$2" || true  # a unit still active after the bound is a finding of the check below
        left=$(leftovers "$2")
        t_eq "$1" "" "$left"
}

# wait_running ID: until the job's payload is running, at most ~20 s: its scope is active and its service
# too (READY=1 comes once the runtime's start let the payload go; the scope is active from the create on,
# while the sidecars may still be coming up)
wait_running() {
        for _ in $(seq 200); do
                # one unit per call: is-active with several succeeds if any one is active
                in_box systemctl is-active -q "pond-$1.scope" && in_box systemctl is-active -q "pond-job@$1.service" &&
                        return 0
                sleep 0.1
        done
        return 1
}

# wait_gone ID: until the job's unit is inactive or failed (ExecStopPost done), at most ~60 s
wait_gone() {
        local state
        for _ in $(seq 600); do
                state=$(in_box systemctl show -P ActiveState "pond-job@$1.service")
                case $state in inactive|failed|"") return 0 ;; esac
                sleep 0.1
        done
        return 1
}
