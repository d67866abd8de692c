#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-resource-view.sh: a job sees the CPUs and memory it was given, through the interfaces runtimes read
# (nproc, python3's os.cpu_count and os.sched_getaffinity, /sys/devices/system/cpu/online, /proc/cpuinfo,
# /proc/stat, /proc/meminfo, free -b, node's os.availableParallelism and os.totalmem), under the backend
# POND_TEST_BACKEND, at (--cpus 1 --memory 512M), (--cpus 1.5 --memory 1G) and the profile's defaults; the
# result says what it was given and saw. Then LXCFS stopped before a job (required: refused naming LXCFS;
# best-effort: runs, the result says host; runsc: unaffected) and LXCFS killed during a job (runc).
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

# What the job reads, one key=value a line. python3 for the files (the box has no awk).
# shellcheck disable=SC2016 # the job's sh expands these
VIEW_PY='import os
def count(s):
    n = 0
    for part in s.strip().split(","):
        a, _, b = part.partition("-")
        n += int(b or a) - int(a) + 1
    return n
print("cpu_count=%d" % os.cpu_count())
print("affinity=%d" % len(os.sched_getaffinity(0)))
print("online=%d" % count(open("/sys/devices/system/cpu/online").read()))
print("cpuinfo=%d" % sum(1 for l in open("/proc/cpuinfo") if l.startswith("processor")))
print("stat=%d" % sum(1 for l in open("/proc/stat") if l.startswith("cpu") and l[3:4].isdigit()))
print("memtotal=%d" % (1024 * int([l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal:")][0])))
print("uptime=%d" % float(open("/proc/uptime").read().split()[0]))
print("loadavg=%s" % " ".join(open("/proc/loadavg").read().split()[:3]))'
# shellcheck disable=SC2016
VIEW_SH='echo "nproc=$(nproc)"; python3 -c "$1"; free -b | sed -n "s/^Mem: *\([0-9]*\).*/free=\1/p"
if command -v node >/dev/null; then
        node -e "const os = require(\"os\"); console.log(\"node_cpus=\" + os.availableParallelism()); console.log(\"node_mem=\" + os.totalmem())" 2>/dev/null
fi'

field() { sed -n "s/^$1=//p" <<<"$OUT" | head -n 1; }

host_cpus=$(in_box nproc)
have_node=$(in_box sh -c 'command -v node >/dev/null && echo yes || echo no')

# check_view LABEL CPUS_CEIL MEMORY_BYTES ARGS...: a job with ARGS sees min(CPUS_CEIL, host) CPUs and
# MEMORY_BYTES everywhere, and its result says so
check_view() {
        local label=$1 ceil=$2 mem=$3 want_cpus id k; shift 3
        want_cpus=$((ceil < host_cpus ? ceil : host_cpus))
        id=$(new_id view)
        run_job "$id" "$@" -- sh -c "$VIEW_SH" sh "$VIEW_PY"
        t_eq "$label: job ran" 0 "$RC" || diag "$OUT"
        for k in nproc cpu_count affinity online cpuinfo stat; do
                t_eq "$label: $k" "$want_cpus" "$(field "$k")"
        done
        for k in memtotal free; do
                t_eq "$label: $k" "$mem" "$(field "$k")"
        done
        t_like "$label: /proc/uptime is the job's" "^[0-9]$" "$(field uptime)"
        t_eq "$label: /proc/loadavg is the job's" "0.00 0.00 0.00" "$(field loadavg)"
        if [ "$have_node" = yes ]; then
                t_eq "$label: node os.availableParallelism()" "$want_cpus" "$(field node_cpus)"
                t_eq "$label: node os.totalmem()" "$mem" "$(field node_mem)"
        fi
        t_eq "$label: result given" "$ceil $mem" \
                "$(result_field "$id" '"%d %d" % (r["resources"]["given"]["cpus_ceil"], r["resources"]["given"]["memory_bytes"])')"
        t_eq "$label: result seen" "$want_cpus $want_cpus $mem None" \
                "$(result_field "$id" '" ".join(str(r["resources"]["seen"][k]) for k in ("cpus_affinity", "cpus_proc", "memory_bytes")) + " " + str(r["resources"]["degraded"])')"
        want_src=lxcfs
        [ "$BACKEND" = runsc ] && want_src=gvisor
        t_eq "$label: result source" "$want_src $want_src" \
                "$(result_field "$id" 'r["resources"]["seen"]["cpus_source"] + " " + r["resources"]["seen"]["memory_source"]')"
        t_like "$label: started record says what the job sees" "sees cpus $want_cpus .*memory $mem" \
                "$(in_box journalctl -q -o cat POND_JOB_ID="$id" POND_EVENT=started)"
        t_clean "$label: nothing left, CPU lease included" "$id"
        t_eq "$label: lease released" absent "$(path_state "$POND_RUN/cpus/$id")"
}

in_box systemctl start lxcfs.service >/dev/null 2>&1
t_ok "lxcfs.service runs in the box" in_box systemctl is-active lxcfs.service
t_like "pondctl probe: the view is available" "^view +yes" "$(pond probe 2>&1)"

check_view "1 cpu 512M" 1 $((512 * 1024 * 1024)) --profile untrusted-code-write --cpus 1 --memory 512M
check_view "1.5 cpus 1G" 2 $((1024 * 1024 * 1024)) --profile untrusted-code-write --cpus 1.5 --memory 1G
check_view "profile defaults" 2 $((4 * 1024 * 1024 * 1024)) --profile untrusted-code-write

# --- two jobs at once get different CPUs on a host with two (spread, not stacked)
if [ "$host_cpus" -ge 2 ]; then
        a=$(new_id spreadA) b=$(new_id spreadB)
        in_box "$PONDCTL" run --quiet --job-id "$a" --backend "$BACKEND" --profile untrusted-code-write --cpus 1 \
                -- sleep 3 >/dev/null 2>&1 &
        pa=$!
        sleep 1
        run_job "$b" --profile untrusted-code-write --cpus 1 -- true
        wait "$pa"
        t_eq "concurrent one-CPU jobs get different cpusets" yes \
                "$(in_box python3 -c 'import json, sys
a, b = (json.load(open("/var/lib/pond/results/%s/result.json" % i))["resources"]["given"]["cpuset"] for i in sys.argv[1:])
print("yes" if a != b else "no: %s %s" % (a, b))' "$a" "$b")"
fi

# --- LXCFS stopped before a job (masked, or the jobs' Wants= would start it again)
in_box sh -c 'systemctl mask --runtime lxcfs.service && systemctl stop lxcfs.service' >/dev/null 2>&1
t_like "pondctl probe: the view is unavailable, naming LXCFS" "^view +no: LXCFS is not running" "$(pond probe 2>&1)"
id=$(new_id nolxcfs)
run_job "$id" --profile untrusted-code-write --cpus 1 --memory 512M -- sh -c 'grep MemTotal /proc/meminfo'
if [ "$BACKEND" = runsc ]; then
        t_eq "runsc without LXCFS: runs (gVisor renders its own view)" 0 "$RC"
        t_eq "runsc without LXCFS: MemTotal is the limit" "MemTotal: 524288 kB" "$(tr -s ' ' <<<"$OUT")"
else
        t_eq "required without LXCFS: refused" refused "$(result_field "$id" 'r["status"]')"
        t_like "required without LXCFS: the reason names LXCFS" "resource_view is required.*LXCFS is not running" \
                "$(result_field "$id" 'r["reason"]')"
        id=$(new_id besteffort)
        run_job "$id" --profile none --cpus 1 --memory 512M -- sh -c "$VIEW_SH" sh "$VIEW_PY"
        t_eq "best-effort without LXCFS: runs" 0 "$RC"
        t_eq "best-effort without LXCFS: affinity is still the cpuset" 1 "$(field affinity)"
        t_like "best-effort without LXCFS: MemTotal is the host's" "^[0-9]{10,}$" "$(field memtotal)"
        t_eq "best-effort without LXCFS: result says host" "cgroup host" \
                "$(result_field "$id" 'r["resources"]["seen"]["cpus_source"] + " " + r["resources"]["seen"]["memory_source"]')"
        t_like "best-effort without LXCFS: result says why" "LXCFS is not running" \
                "$(result_field "$id" 'r["resources"]["degraded"]')"
        t_like "best-effort without LXCFS: a degraded audit record" "LXCFS is not running" \
                "$(in_box journalctl -q -o cat POND_JOB_ID="$id" POND_EVENT=degraded)"
        t_clean "best-effort without LXCFS: nothing left" "$id"
fi
in_box sh -c 'systemctl unmask --runtime lxcfs.service && systemctl start lxcfs.service' >/dev/null 2>&1
t_ok "lxcfs.service back" in_box systemctl is-active lxcfs.service

# --- LXCFS killed during a job (systemd restarts it; the job's binds stay on the dead connection): runc only,
# gVisor never reads LXCFS
if [ "$BACKEND" = runc ]; then
        # shellcheck disable=SC2016 # the job's sh expands these
        LOOP='i=0; while [ $i -lt 16 ]; do grep MemTotal /proc/meminfo 2>&1 | tr -s " "; i=$((i + 1)); sleep 0.25; done'
        for prof in none untrusted-code-write; do
                id=$(new_id killed)
                in_box "$PONDCTL" run --quiet --job-id "$id" --backend runc --profile "$prof" --cpus 1 --memory 512M \
                        -- sh -c "$LOOP" >/tmp/test-resource-view.$$ 2>&1 &
                pj=$!
                sleep 2
                # shellcheck disable=SC2016 # the box's sh expands it
                in_box sh -c 'kill -9 "$(systemctl show -P MainPID lxcfs.service)"'
                wait "$pj"
                OUT=$(cat /tmp/test-resource-view.$$)
                rm -f /tmp/test-resource-view.$$
                diag "$prof, LXCFS killed during the job: $(sort <<<"$OUT" | uniq -c | tr '\n' ';')"
                if [ "$prof" = none ]; then
                        t_eq "best-effort, LXCFS killed: completed" completed "$(result_field "$id" 'r["status"]')"
                        t_like "best-effort, LXCFS killed: the last reads are the kernel's, not an error" \
                                "^MemTotal: [0-9]{8,} kB$" "$(tail -n 1 <<<"$OUT")"
                        t_like "best-effort, LXCFS killed: result says so" "LXCFS went away during the job" \
                                "$(result_field "$id" 'r["resources"]["degraded"]')"
                else
                        t_eq "required, LXCFS killed: failed" failed "$(result_field "$id" 'r["status"]')"
                        t_like "required, LXCFS killed: the reason names LXCFS" "LXCFS went away during the job" \
                                "$(result_field "$id" 'r["reason"]')"
                fi
                t_clean "LXCFS killed ($prof): nothing left" "$id"
                for _ in 1 2 3 4 5 6 7 8 9 10; do
                        in_box systemctl is-active lxcfs.service >/dev/null 2>&1 && break
                        sleep 0.5
                done
        done
        t_ok "lxcfs.service restarted by systemd" in_box systemctl is-active lxcfs.service
        t_ok "LXCFS answers again" in_box head -n 1 /var/lib/lxcfs/proc/meminfo
fi
t_eq "no CPU lease left" none "$(dir_entries "$POND_RUN/cpus")"

done_testing
