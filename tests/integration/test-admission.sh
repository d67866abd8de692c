#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-admission.sh: the worker's admission ceiling (policy/worker.json, docs/operations.md "Admission"),
# through real pond-job@ID units under POND_TEST_BACKEND: a burst of 12 jobs at once under max_jobs 4 never
# has more than 4 payloads running (each payload's interval from its started and exited records) and all
# complete, the queued ones after waiting; the same burst without the ceiling has more than 4 at once (the
# control: the measurement can see an overcommit); when_full refuse, a job too big for the ceiling and
# max_wait_s each refused with its reason; a queued job cancelled; a supervisor killed with SIGKILL has its
# lease released by `pond-run --cleanup`. The setup gate: 12 jobs at once under max_setups 2 never have more
# than 2 supervisors in setup (their units' status, sampled: "setting up", "staging" or "launching", from the
# slot's take to READY=1) and all complete; the control (max_setups 64) has more than 2 in setup at once.
# The policy is restored at the end.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

POLICY=/opt/pond/share/pond/policy/worker.json
ADMISSION=$POND_RUN/admission
SAVED=/var/tmp/pond-test-worker.json
# shellcheck disable=SC2016 # the box's sh expands these
in_box sh -c '[ -e "$2" ] || cp "$1" "$2"' sh "$POLICY" "$SAVED"
# shellcheck disable=SC2016
restore() { in_box sh -c 'cp "$2" "$1" && rm -f "$2"' sh "$POLICY" "$SAVED"; }
# the policy back, then lib.sh's own exit handler, with the script's status
trap 'rc=$?; restore; rm -f "${SETUP_MAX:-}" "${SETUP_MAX:-}.stop"; (exit "$rc"); _t_atexit' EXIT

# shellcheck disable=SC2016
policy() { in_box sh -c 'printf "%s\n" "$2" >"$1"' sh "$POLICY" "$1"; }

# burst PREFIX N SECONDS: N jobs at once, each sleeping SECONDS; waits for all of them to be gone
burst() {
        # shellcheck disable=SC2016 # the box's sh expands these
        in_box sh -c 'seq "$1" | xargs -P "$1" -I{} "$2" run --quiet --job-id "$3-{}" --backend "$4" \
                --profile untrusted-code-write --memory 256M --cpus 0.5 -- sleep "$5" >/dev/null 2>&1; exit 0' \
                sh "$2" "$PONDCTL" "$1" "$BACKEND" "$3"
        for i in $(seq "$2"); do wait_gone "$1-$i"; done
}

# overlap PREFIX N: "MAX COMPLETED REFUSED": the most payloads running at once (from each job's started and
# exited journal records), and how many results completed with rc 0 or were refused
overlap() {
        # shellcheck disable=SC2016 # the box's python
        in_box python3 -c '
import json, subprocess, sys
prefix, n = sys.argv[1], int(sys.argv[2])
ev = []
completed = refused = 0
for i in range(1, n + 1):
    jid = "%s-%d" % (prefix, i)
    out = subprocess.run(["journalctl", "-q", "-o", "json", "POND_JOB_ID=" + jid], capture_output=True,
                         text=True).stdout
    t = {}
    for line in out.splitlines():
        r = json.loads(line)
        e = r.get("POND_EVENT")
        if e in ("started", "exited") and e not in t:
            t[e] = int(r["__REALTIME_TIMESTAMP"])
    if "started" in t and "exited" in t:
        ev += [(t["started"], 1), (t["exited"], -1)]
    try:
        res = json.load(open("/var/lib/pond/results/%s/result.json" % jid))
    except OSError:
        continue
    completed += res["status"] == "completed" and res["exit"]["rc"] == 0
    refused += res["status"] == "refused"
cur = most = 0
for _, d in sorted(ev, key=lambda x: (x[0], x[1])):
    cur += d
    most = max(most, cur)
print(most, completed, refused)' "$1" "$2"
}

# in_setup_start PREFIX N: samples, until in_setup_max, how many of the jobs' units say they are in setup (their
# STATUS between the setup slot's take and READY=1); in_setup_max prints the most at once
in_setup_start() {
        local units=() i
        for i in $(seq "$2"); do units+=("pond-job@$1-$i.service"); done
        echo 0 >"$SETUP_MAX"
        rm -f "$SETUP_STOP"
        (
                most=0
                while [ ! -e "$SETUP_STOP" ]; do
                        now=$(in_box systemctl show -P StatusText "${units[@]}" |
                                grep -c -E '^(setting up|staging|launching)' || true)
                        [ "$now" -gt "$most" ] && most=$now && echo "$most" >"$SETUP_MAX"
                        sleep 0.05
                done
        ) &
        sampler=$!
}
in_setup_max() {
        touch "$SETUP_STOP"
        wait "$sampler"
        cat "$SETUP_MAX"
}
SETUP_MAX=$(mktemp)
SETUP_STOP=$SETUP_MAX.stop

queued_count() { # PREFIX N: how many of the jobs' supervisors logged that they were queued
        local n=0 i
        for i in $(seq "$2"); do
                in_box journalctl -q -o cat -u "pond-job@$1-$i.service" | grep -q "^pond-run: Queued " && n=$((n + 1))
        done
        echo "$n"
}

# --- the control: no ceiling, 12 jobs at once overlap more than 4, and more than 2 are in setup at once
policy '{ "when_full": "wait", "max_setups": 64 }'
prefix=ctl-$$-$RANDOM
in_setup_start "$prefix" 12
burst "$prefix" 12 6
setups=$(in_setup_max)
read -r most completed refused <<<"$(overlap "$prefix" 12)"
diag "no ceiling: 12 submitted, at most $most payloads at once, $completed completed, $refused refused; at most $setups in setup at once (max_setups 64)"
t_eq "control: without a ceiling, more than 4 payloads ran at once" True "$([ "$most" -gt 4 ] && echo True)"
t_eq "control: with 64 setup slots, more than 2 jobs were in setup at once" True "$([ "$setups" -gt 2 ] && echo True)"

# --- the setup gate: max_setups 2
policy '{ "max_setups": 2 }'
prefix=gate-$$-$RANDOM
start=$(date +%s)
in_setup_start "$prefix" 12
burst "$prefix" 12 2
setups=$(in_setup_max)
read -r most completed refused <<<"$(overlap "$prefix" 12)"
diag "max_setups 2: 12 submitted, $completed completed, $refused refused, at most $setups in setup at once, $most payloads at once; $(($(date +%s) - start)) s"
t_eq "max_setups 2: never more than 2 jobs in setup at once" True "$([ "$setups" -le 2 ] && [ "$setups" -ge 1 ] && echo True)"
t_eq "max_setups 2: all 12 completed" 12 "$completed"
# shellcheck disable=SC2016 # the box's sh expands these
t_eq "max_setups 2: no slot held, no waiter left" "" "$(in_box sh -c 'ls -A "$1" | grep -v "^slot-"
        for f in "$1"/slot-*; do flock -n "$f" true || echo "$f held"; done' sh "$POND_RUN/setup")"

# --- the ceiling: max_jobs 4
policy '{ "max_jobs": 4, "when_full": "wait", "max_wait_s": 600 }'
prefix=burst-$$-$RANDOM
burst "$prefix" 12 6
read -r most completed refused <<<"$(overlap "$prefix" 12)"
queued=$(queued_count "$prefix" 12)
diag "max_jobs 4: 12 submitted, $((12 - queued)) admitted at once, $queued queued, $refused refused, $completed completed; at most $most payloads at once"
t_eq "max_jobs 4: never more than 4 payloads at once" True "$([ "$most" -le 4 ] && [ "$most" -ge 1 ] && echo True)"
t_eq "max_jobs 4: all 12 completed" 12 "$completed"
t_eq "max_jobs 4: at least 8 were queued" True "$([ "$queued" -ge 8 ] && echo True)"
t_eq "max_jobs 4: no lease or queue file left" "" "$(in_box ls -A "$ADMISSION")"

# --- when_full refuse, too big, max_wait_s: one long job holds the only place
long=$(new_id long)
in_box "$PONDCTL" run --quiet --job-id "$long" --backend "$BACKEND" --profile untrusted-code-write --memory 256M \
        -- sleep 300 >/dev/null 2>&1 &
runner=$!
policy '{ "max_jobs": 1, "when_full": "refuse" }'
wait_running "$long"
id=$(new_id full)
run_job "$id" --profile untrusted-code-write --memory 256M -- true
t_eq "when_full refuse: refused (125)" 125 "$RC"
t_like "when_full refuse: the reason says the worker is full" "^admission: the worker is full \(it holds 1 job\(s\) of 1\)" \
        "$(result_field "$id" 'r["reason"]')"
policy '{ "max_memory": "1G" }'
id=$(new_id big)
run_job "$id" --profile untrusted-code-write --memory 2G -- true
t_eq "too big: refused (125)" 125 "$RC"
t_like "too big: the reason says so" "^admission: the job alone claims more than this worker's ceiling" \
        "$(result_field "$id" 'r["reason"]')"
policy '{ "max_jobs": 1, "max_wait_s": 1 }'
id=$(new_id waited)
run_job "$id" --profile untrusted-code-write --memory 256M -- true
t_eq "max_wait_s: refused after waiting (125)" 125 "$RC"
t_like "max_wait_s: the reason says how long it waited" "^admission: waited 1 s \(max_wait_s\)" \
        "$(result_field "$id" 'r["reason"]')"
t_clean "max_wait_s: nothing left of the refused job" "$id"

# --- a queued job cancelled: its queue file goes with it
policy '{ "max_jobs": 1, "max_wait_s": 600 }'
id=$(new_id queued)
in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write --memory 256M \
        -- true >/dev/null 2>&1 &
qrunner=$!
for _ in $(seq 300); do
        # shellcheck disable=SC2016
        in_box sh -c 'ls "$1" 2>/dev/null' sh "$ADMISSION" | grep -q -- "-$id\$" && break
        sleep 0.1
done
t_like "queued: the status says so" "^status: queued: the worker holds 1 job" "$(pond status "$id" | grep '^status:')"
pond cancel "$id" >/dev/null 2>&1
wait "$qrunner"
wait_gone "$id"
t_eq "queued, cancelled: the result says cancelled" cancelled "$(result_field "$id" 'r["status"]')"
t_eq "queued, cancelled: its queue file is gone" "" "$(in_box ls -A "$ADMISSION" | grep -v "^lease-$long\$")"

# --- a supervisor killed with SIGKILL: --cleanup gives its lease back
pid=$(in_box systemctl show -P MainPID "pond-job@$long.service")
t_eq "the long job holds its lease" "lease-$long" "$(in_box ls -A "$ADMISSION")"
[ "${pid:-0}" -gt 0 ] && in_box kill -KILL "$pid"
wait "$runner"
wait_gone "$long"
t_eq "SIGKILL: the result says failed" failed "$(result_field "$long" 'r["status"]')"
t_eq "SIGKILL: the lease was released by --cleanup" "" "$(in_box ls -A "$ADMISSION")"
t_clean "SIGKILL: nothing left" "$long"
done_testing
