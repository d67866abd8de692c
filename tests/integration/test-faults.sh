#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-faults.sh: faults injected at randomised points of real jobs (POND_TEST_BACKEND): kill -9 of the
# supervisor, of the runtime, of the egress proxy and of the credential broker, a stop of the job's unit,
# a SIGKILL of the payload's scope. Every round asserts that nothing is left behind (the job's own
# leftovers, and the host's pond state back to what it was before the first round: mounts, namespaces,
# veths, nft tables, cgroups, runtime state, staging dirs, leases, units) AND that the signed result says
# what happened: failed when pond died, cancelled when stopped, the sidecar's death recorded, failed when
# runsc's sandbox or gofer was killed (the runtime died, not the payload), no exit code made up, oom_killed
# only when the kernel killed for memory (never here). Then the runtime's deaths at a chosen point, a crashed
# sentry, and their controls (the payload's own death stays completed). POND_FAULT_ROUNDS rounds per
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
        local st sc rc sig oom can died reason
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
                reason=$(field "$2" 'r["reason"]')
                if [ "$BACKEND" = runsc ]; then
                        # The sandbox or its gofer killed from outside: the runtime died, not the payload.
                        [ "$st" = failed ] && [ "$rc $sig" = "None None" ] && [[ $reason == "runtime failed (runsc): "* ]] ||
                                echo "$1 killed: $st rc $rc signal $sig ($reason), not failed by the runtime"
                        return
                fi
                case $st in
                # runc: the container's init is the payload's own first process (no runc process outlives the
                # start), so its death is the payload's; before the start it is runc's, and the start fails.
                completed) [ "$sig" = SIGKILL ] || echo "$1 killed: completed with rc $rc signal $sig" ;;
                failed) [[ $reason == "runtime failed (runc): runc could not start"* ]] && [ "$rc $sig" = "None None" ] ||
                                echo "$1 killed: failed ($reason); a runc payload killed is completed" ;;
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

# The runtime dying under a running payload, at a point chosen rather than at random: once the
# payload has printed its marker, the runtime's process (runsc: the sandbox, the gofer) is killed from outside.
# The result must be "failed" naming the runtime, with no exit code, and nothing left behind. The control is
# the payload's own death, which stays "completed" with what it died of.

# started ID: until the job's payload has printed "running" (its log in the spool), at most ~30 s
started() {
        for _ in $(seq 300); do
                in_box grep -qs '^running' "$POND_STATE/jobs/$1/log/stdout" && return 0
                sleep 0.1
        done
        return 1
}

# runtime_proc ID NAME: the pid of the process of the job's payload cgroup whose argv[0] is NAME
runtime_proc() {
        local cg=/sys/fs/cgroup/pids/pond.slice/pond-$1.scope/payload
        [ "$(cgroup_layout)" = unified ] && cg=/sys/fs/cgroup/pond.slice/pond-$1.scope/payload
        # shellcheck disable=SC2016 # the inner sh's
        in_box sh -c 'for p in $(cat "$1/cgroup.procs"); do
                [ "$(cut -d "" -f1 "/proc/$p/cmdline" | tr -d "\0")" = "$2" ] && echo "$p" && break
        done' sh "$cg" "$2"
}

# killed_run ID TARGET [PROFILE] -- CMD...: runs a job, kills TARGET (sandbox, gofer, init: the pid in init.pid,
# none) once the payload runs, waits for its end; sets ST, RC_SIG, REASON, LEFT and KILLED (the pid, or empty)
killed_run() {
        local id=$1 target=$2 profile=${3:-untrusted-code-write} runner pid=
        shift 4
        in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile "$profile" -- "$@" \
                >/dev/null 2>&1 &
        runner=$!
        KILLED=
        if [ "$target" != none ] && started "$id"; then
                case $target in
                sandbox) pid=$(runtime_proc "$id" runsc-sandbox) ;;
                gofer) pid=$(runtime_proc "$id" runsc-gofer) ;;
                # systrap's stubs have no command line. The task-set watch takes its first sample a second
                # after the run loop starts (before the payload's marker): by 2 s after the marker it has one.
                stub) sleep 2; pid=$(runtime_proc "$id" "") ;;
                init) pid=$(in_box cat "$POND_RUN/jobs/$id/init.pid") ;;
                esac
                [ -n "$pid" ] && [ "$pid" -gt 1 ] && in_box kill -9 "$pid" && KILLED=$pid
        fi
        wait "$runner"
        wait_gone "$id"
        ST=$(field "$id" 'r["status"]')
        RC_SIG=$(field "$id" 'str(r["exit"]["rc"]) + " " + str(r["exit"]["signal"])')
        REASON=$(field "$id" 'r["reason"]')
        LEFT=$(leftovers "$id")
}

marker=(sh -c 'echo running; sleep 30; echo done')
if [ "$BACKEND" = runsc ]; then
        # A systrap stub killed does not end the sandbox: it wedges, and the task-set watch ends it (a stub killed
        # before the watch's first sample goes unnoticed: the sandbox then ran its payload to its end, measured).
        for c in "sandbox the gVisor sandbox process \(pid [0-9]+\) was killed by SIGKILL" \
                 "gofer the runtime's process runsc-gofer \(pid [0-9]+\) was killed by SIGKILL" \
                 "stub the gVisor sandbox lost one of its processes \(pid [0-9]+\)"; do
                read -r target what <<<"$c"
                id=$(new_id "dying-$target")
                killed_run "$id" "$target" "" -- "${marker[@]}"
                t_like "runsc: the $target was there to kill while the payload ran" '^[0-9]+$' "$KILLED"
                t_eq "runsc: its $target killed from outside, the job failed, with no exit code" "failed None None" \
                        "$ST $RC_SIG"
                t_like "runsc: the reason names the $target's death and the journal" \
                        "^runtime failed \(runsc\): $what.*journal of pond-job@$id" "$REASON"
                t_eq "runsc: nothing of the job whose $target was killed is left" "" "$LEFT"
        done
        # Control: the payload killing itself is the payload's end (the job's init reports the signal).
        id=$(new_id dying-payload)
        killed_run "$id" none "" -- sh -c 'echo running; kill -9 $$'
        t_eq "runsc control: a payload killed by SIGKILL is completed, by SIGKILL" "completed None SIGKILL" "$ST $RC_SIG"
        t_eq "runsc control: nothing of it is left" "" "$LEFT"

        # A crashed sentry exits 2, as a payload's `exit 2` does: its crash report (--panic-log) tells them
        # apart. The crash is gVisor's own test switch (a payload's afs_syscall panics the sentry), given to runsc
        # by a wrapper bound over /usr/bin/runsc for that one job, in the supervisors' sandbox (pond-sandbox.service,
        # restarted around the job: its namespace is the one the supervisor copies); profile none, whose payload
        # has no seccomp filter to refuse the syscall. Both files in /var/lib: the supervisor's /tmp is its own.
        in_box sh -c 'mkdir -p /var/lib/pond-test-runsc && cp /usr/bin/runsc /var/lib/pond-test-runsc/real &&
                printf "#!/bin/sh\nexec /var/lib/pond-test-runsc/real --TESTONLY-afs-syscall-panic \"\$@\"\n" \
                        >/var/lib/pond-test-runsc/panic && chmod 755 /var/lib/pond-test-runsc/panic'
        for kind in crash exit2; do
                cmd=(sh -c 'echo running; exit 2')
                [ "$kind" = exit2 ] ||
                        cmd=(python3 -c 'import ctypes; print("running", flush=True); ctypes.CDLL(None).syscall(183)')
                id=$(new_id "dying-$kind")
                d=/run/systemd/system/pond-sandbox.service.d
                in_box sh -c "mkdir -p $d && printf '[Service]\nBindReadOnlyPaths=/var/lib/pond-test-runsc/panic:/usr/bin/runsc\n' \
                        >$d/panic.conf && systemctl daemon-reload && systemctl restart pond-sandbox.service"
                killed_run "$id" none none -- "${cmd[@]}"
                in_box sh -c "rm -rf $d && systemctl daemon-reload && systemctl restart pond-sandbox.service"
                if [ "$kind" = crash ]; then
                        t_eq "runsc: a sentry that crashed fails the job, with no exit code" "failed None None" \
                                "$ST $RC_SIG"
                        t_like "runsc: the reason quotes the sentry's crash report" \
                                "^runtime failed \(runsc\): the gVisor sandbox crashed \(it exited 2 and reported: panic: " \
                                "$REASON"
                else
                        t_eq "runsc control: under the same runsc, a payload's exit 2 is completed rc 2" "completed 2 None" \
                                "$ST $RC_SIG"
                fi
                t_eq "runsc: nothing of the $kind job is left" "" "$LEFT"
        done
        in_box rm -rf /var/lib/pond-test-runsc
else
        # runc: no runc process outlives the start, so nothing of the runtime runs beside the payload to die.
        id=$(new_id dying-runc)
        in_box "$PONDCTL" run --quiet --job-id "$id" --backend runc --profile untrusted-code-write -- "${marker[@]}" \
                >/dev/null 2>&1 &
        runner=$!
        if started "$id"; then
                # shellcheck disable=SC2016 # the inner sh's
                runcs=$(in_box sh -c 'for p in /proc/[0-9]*; do
                        a=$(tr "\0" " " <"$p/cmdline" 2>/dev/null); case $a in runc\ *|*/runc\ *) echo "$a" ;; esac
                done')
                t_eq "runc: no runc process runs while the payload does" "" "$runcs"
        else
                t_not_ok "runc: the payload started"
        fi
        in_box systemctl stop "pond-job@$id.service"
        wait "$runner"
        wait_gone "$id"
        # Control: the container's init killed from outside is the payload's death, not the runtime's.
        id=$(new_id dying-init)
        killed_run "$id" init "" -- "${marker[@]}"
        t_like "runc control: the container's init was there to kill" '^[0-9]+$' "$KILLED"
        t_eq "runc control: the payload's init killed is completed, signal SIGKILL" "completed None SIGKILL" "$ST $RC_SIG"
        t_eq "runc control: nothing of it is left" "" "$LEFT"
fi
t_eq "after the runtime's deaths, the host's pond state is back to what it was" "$base" "$(host_state)"

# The job's network fails to come up (its host-side interface name taken beforehand): the set-up runs beside
# the staging (job_network_begin()), and the container is never let go without it. The job fails with the
# reason, the payload never ran, and nothing of it is left (the taken name included: the teardown removes by
# name, as it would a veth of the job's; the box has no dummy links, so the name is taken by a veth pair).
id=$(new_id netfail)
ifname=pv$(python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest()[:12])' "$id")
in_box ip link add "$ifname" type veth peer name "x$ifname"
run_job "$id" --profile untrusted-code-write -- sh -c 'echo ran'
t_eq "a network that cannot be set up fails the job, with the reason" "failed cannot set up the job's network" \
        "$(result_field "$id" 'r["status"] + " " + (r["reason"] or "")')"
t_like "... the journal says what failed" "Cannot set up the job's network: cannot create the veth pair" \
        "$(in_box journalctl -q -o cat "POND_JOB_ID=$id" 2>&1)"
t_eq "... and its payload never ran" "" "$(pond logs "$id" 2>/dev/null)"
t_clean "... and nothing of it is left" "$id"
in_box ip link del "$ifname" 2>/dev/null || true

# The egress proxy does not come up (a drop-in makes its unit fail): its socket (pond-egress@ID.socket, made
# by systemd) is there before the payload runs, the proxy's start is not waited for, and its failure fails the
# job, with the reason and the sidecar named, and kills the payload if it runs already; nothing is left.
in_box sh -c 'mkdir -p /run/systemd/system/pond-egress@.service.d &&
        printf "[Service]\nExecStartPre=/bin/false\n" > /run/systemd/system/pond-egress@.service.d/fail.conf &&
        systemctl daemon-reload'
id=$(new_id egressfail)
run_job "$id" --profile untrusted-code-write -- sh -c 'sleep 30'
in_box sh -c 'rm -r /run/systemd/system/pond-egress@.service.d && systemctl daemon-reload'
t_eq "a proxy that does not start fails the job, with the reason" \
        "failed the egress proxy did not start (see the journal of pond-egress@$id.service)" \
        "$(result_field "$id" 'r["status"] + " " + (r["reason"] or "")')"
t_eq "... names the sidecar" "egress" "$(result_field "$id" '(r.get("sidecar_died") or {}).get("sidecar")')"
t_like "... and its payload was killed or never ran" '^(SIGKILL None|None None)$' \
        "$(result_field "$id" 'str(r["exit"]["signal"]) + " " + str(r["exit"]["rc"])')"
t_clean "... and nothing of it is left (its socket unit included)" "$id"

# Once the proxy is up its socket unit is stopped (the proxy keeps the socket): nothing can start a second
# proxy for the job, so one that dies leaves the job's network denied, whatever on_sidecar_death says.
id=$(new_id egressup)
pond run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write -- sleep 30 >/dev/null 2>&1 &
bg=$!
wait_running "$id" || true
units=
for _ in $(seq 100); do
        units=$(in_box systemctl is-active "pond-egress@$id.service" "pond-egress@$id.socket" | tr '\n' ' ')
        [ "$units" = "active inactive " ] && break
        sleep 0.05
done
t_eq "once the proxy is up it runs and its socket unit is gone" "active inactive " "$units"
in_box systemctl stop "pond-job@$id.service"
wait "$bg"
t_clean "... and nothing of that job is left" "$id"

# A stop that kills the supervisor before it has blocked its signals (too narrow a window to hit at random):
# the cleanup signs what systemd's environment says, a stop is "cancelled", a SIGKILL "failed".
for c in "TERM success cancelled" "KILL signal failed"; do
        read -r sig res want <<<"$c"
        id=$(new_id "cleanup-$sig")
        in_box sh -c "mkdir -p $POND_STATE/jobs/$id && printf '{\"job_id\":\"%s\",\"command\":[\"true\"]}' $id \
                > $POND_STATE/jobs/$id/job.json"
        in_box env EXIT_CODE=killed EXIT_STATUS="$sig" SERVICE_RESULT="$res" /opt/pond/libexec/pond/pond-run --cleanup "$id" \
                >/dev/null 2>&1
        t_eq "a supervisor killed by SIG$sig before it blocked signals: $want, no rc" "$want None" \
                "$(result_field "$id" 'r["status"] + " " + str(r["exit"]["rc"])')"
done
done_testing
