#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-faults.sh: faults injected at randomised points of real jobs (POND_TEST_BACKEND): kill -9 of the
# supervisor, of the runtime, of the egress proxy and of the credential broker, a stop of the job's unit,
# a SIGKILL of the payload's scope. Every round asserts that nothing is left behind (the job's own
# leftovers, and the host's pond state back to what it was before the first round: mounts, namespaces,
# veths, nft tables, cgroups, runtime state, staging dirs, leases, units) AND that the signed result says
# what happened: failed when pond died, cancelled when stopped, the sidecar's death recorded, no exit code
# made up, oom_killed only when the kernel killed for memory (never here). POND_FAULT_ROUNDS rounds per
# fault (default 5: about a minute per backend), POND_FAULT_SEED picks the points (printed, to replay a failure).
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

ROUNDS=${POND_FAULT_ROUNDS:-5}
SEED=${POND_FAULT_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
diag "backend $BACKEND, $ROUNDS round(s) per fault, seed $SEED (POND_FAULT_SEED=$SEED replays it)"


# A job spec with a sealed credential (the broker starts without its upstream: nothing here calls it).
broker_spec() {
        local f sealed
        sealed=$(in_box sh -c "printf %s sk-fault | $PONDCTL seal --to /etc/pond/keys/seal.pub --job-id $1")
        f=$(in_box mktemp /var/tmp/pond-spec.XXXXXX)
        in_box sh -c "cat > $f" <<JSON
{"job_id":"$1","tenant":"t","command":["true"],"sandbox":{"profile":"untrusted-code-write","backend":"$BACKEND"},
 "limits":{"max_cost_cents":100},
 "credentials":[{"name":"anthropic","upstream":"https://allowed.test:9443",
   "inject":{"header":"x-api-key","format":"{key}"},"allow":["POST /v1/messages"],
   "env":{"key":"ANTHROPIC_API_KEY","base_url":"ANTHROPIC_BASE_URL"},"sealed":"$sealed"}]}
JSON
        echo "$f"
}

# ms MAX: a random pause of 0..MAX milliseconds, as seconds for sleep
ms() { printf '0.%03d' $((RANDOM % ($1 + 1))); }

main_pid() { in_box systemctl show -P MainPID "$1"; }

# The runtime's own processes in the payload's cgroup (runsc: sandbox or gofer; runc: the container's
# init, as no runc process outlives the start): one pid, picked at random.
runtime_pid() {
        local cg pids
        cg=/sys/fs/cgroup/pids/pond.slice/pond-$1.scope/payload
        [ "$(cgroup_layout)" = unified ] && cg=/sys/fs/cgroup/pond.slice/pond-$1.scope/payload
        if [ "$BACKEND" = runsc ]; then
                # shellcheck disable=SC2016 # the inner sh's
                pids=$(in_box sh -c 'for p in $(cat "$1/cgroup.procs"); do
                        case $(tr "\0" " " <"/proc/$p/cmdline") in runsc-gofer*|runsc-sandbox*) echo "$p" ;; esac
                done' sh "$cg")
        else
                pids=$(in_box cat "/run/pond/jobs/$1/init.pid")
        fi
        # shellcheck disable=SC2206 # pids are numbers
        local a=($pids)
        [ ${#a[@]} -gt 0 ] && echo "${a[RANDOM % ${#a[@]}]}"
}

# field ID EXPR: a field of the job's result, or "no result"
field() {
        in_box test -f "$POND_STATE/results/$1/result.json" || { echo "no result"; return; }
        result_field "$1" "$2"
}

# inject FAULT ID: at a random point (setup or run for the supervisor and the stop, run for the rest).
# Sets WHEN (setup/run) and HIT (what was hit, empty if nothing was there to hit).
inject() {
        local pid
        WHEN=run HIT=
        if [ "$1" = supervisor ] || [ "$1" = stop ]; then
                [ $((RANDOM % 2)) = 0 ] && WHEN=setup
        fi
        if [ "$WHEN" = setup ]; then
                # Once the unit is on its way (a stop before its start job would stop nothing).
                for _ in $(seq 100); do
                        case $(in_box systemctl show -P ActiveState "pond-job@$2.service") in
                        activating | active) break ;;
                        esac
                        sleep 0.05
                done
                sleep "$(ms 400)"
        else
                wait_running "$2" || return
                sleep "$(ms 1500)"
        fi
        case $1 in
        supervisor) pid=$(main_pid "pond-job@$2.service") ;;
        runtime) pid=$(runtime_pid "$2") ;;
        proxy) pid=$(main_pid "pond-egress@$2.service") ;;
        broker) pid=$(main_pid "pond-broker@$2.service") ;;
        stop) in_box systemctl stop --no-block "pond-job@$2.service" && HIT=unit; return ;;
        scope) in_box systemctl kill -s KILL "pond-$2.scope" 2>/dev/null && HIT=scope; return ;;
        esac
        [ -n "$pid" ] && [ "$pid" != 0 ] && in_box kill -9 "$pid" 2>/dev/null && HIT=$pid
}

# truth FAULT ID: empty if the signed result states what happened, else what it got wrong
truth() {
        local st sc rc sig oom can died
        st=$(field "$2" 'r["status"]')
        [ "$st" = "no result" ] && { echo "no result"; return; }
        rc=$(field "$2" 'r["exit"]["rc"]') sig=$(field "$2" 'r["exit"]["signal"]')
        oom=$(field "$2" 'r["exit"]["oom_killed"]') can=$(field "$2" 'r["exit"]["cancelled"]')
        died=$(field "$2" '(r.get("sidecar_died") or {}).get("sidecar")')
        [ "$oom" = False ] || echo "oom_killed $oom without an OOM"
        [ -n "$HIT" ] || { [ "$st" = completed ] && [ "$rc" = 0 ] || echo "nothing hit, yet $st rc $rc"; return; }
        case $1 in
        supervisor) [ "$st" = failed ] && [ "$rc" = None ] || echo "supervisor killed: $st rc $rc, not failed rc null" ;;
        stop) [ "$st" = cancelled ] && [ "$can" = True ] || echo "unit stopped: $st, not cancelled" ;;
        proxy | broker)
                sc=egress; [ "$1" = broker ] && sc=broker
                [ "$st" = failed ] && [ "$died" = "$sc" ] || echo "$1 killed: $st, sidecar_died $died" ;;
        runtime | scope)
                [ "$can" = False ] || echo "$1 killed: cancelled"
                case $st in
                # runsc's sandbox (the init pond waits for) reports a killed app as exit 128+N.
                completed) [ "$sig" = SIGKILL ] || { [ "$BACKEND" = runsc ] && [ "$rc" = 137 ]; } ||
                                echo "$1 killed: completed with rc $rc signal $sig" ;;
                failed) [ "$BACKEND" = runsc ] || echo "$1 killed: failed (a runc payload killed is completed)" ;;
                *) echo "$1 killed: $st" ;;
                esac ;;
        esac
}

base=$(host_state)
t_like "the host's pond state can be read" "checked" "$base"
rounds=0 clean=0 truthful=0
for round in $(seq "$ROUNDS"); do
        for fault in supervisor runtime proxy broker stop scope; do
                id=$(new_id "f$round-$fault")
                spec=()
                [ "$fault" = broker ] && spec=(--spec "$(broker_spec "$id")")
                in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write \
                        "${spec[@]}" -- sh -c 'sleep 3; echo done' >/dev/null 2>&1 &
                runner=$!
                inject "$fault" "$id"
                wait "$runner"
                wait_gone "$id"
                rounds=$((rounds + 1))
                left=$(leftovers "$id")
                now=$(host_state)
                [ -z "$left" ] && [ "$now" = "$base" ] && clean=$((clean + 1))
                t_eq "$fault ($WHEN, hit ${HIT:-nothing}): nothing of $id left" "" "$left"
                t_eq "$fault: the host's pond state is back to what it was" "$base" "$now"
                lie=$(truth "$fault" "$id")
                [ -z "$lie" ] && truthful=$((truthful + 1))
                t_eq "$fault: the signed result says what happened" "" "$lie"
        done
done
diag "fault rounds: $rounds run, $clean clean, $truthful truthful"

# A stop that kills the supervisor before it has blocked its signals (too narrow a window to hit at random):
# the cleanup signs what systemd's environment says, a stop is "cancelled", a SIGKILL "failed".
for c in "TERM success cancelled" "KILL signal failed"; do
        read -r sig res want <<<"$c"
        id=$(new_id "cleanup-$sig")
        in_box sh -c "mkdir -p $POND_STATE/jobs/$id && printf '{\"job_id\":\"%s\",\"command\":[\"true\"]}' $id \
                > $POND_STATE/jobs/$id/job.json"
        in_box env EXIT_CODE=killed EXIT_STATUS="$sig" SERVICE_RESULT="$res" /opt/pond/libexec/pond-run --cleanup "$id" \
                >/dev/null 2>&1
        t_eq "a supervisor killed by SIG$sig before it blocked signals: $want, no rc" "$want None" \
                "$(result_field "$id" 'r["status"] + " " + str(r["exit"]["rc"])')"
done
done_testing
