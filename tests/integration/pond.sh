# shellcheck shell=bash
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

# leftovers ID: prints whatever job ID left behind (empty when clean)
leftovers() {
        local id=$1
        in_box sh -c "
                grep -F '$POND_RUN/jobs/$id' /proc/self/mountinfo | sed 's/^/mount: /'
                [ -e '$POND_RUN/jobs/$id' ] && echo 'staging dir: $POND_RUN/jobs/$id'
                ls '$POND_RUN/runtime' | grep -E '^pond-$id(\$|_sandbox:)' | sed 's/^/runtime state: /'
                systemctl list-units --all --plain --no-legend 'pond-$id.scope' | grep -q . && echo 'scope: pond-$id.scope'
                systemctl is-active -q 'pond-job@$id.service' && echo 'unit active: pond-job@$id.service'
                ls /sys/fs/cgroup/memory/pond.slice/ 2>/dev/null | grep -F 'pond-$id.scope' | sed 's/^/cgroup: /'
                systemctl is-active -q 'pond-egress@$id.service' && echo 'unit active: pond-egress@$id.service'
                [ -e '$POND_RUN/egress/$id' ] && echo 'egress config: $POND_RUN/egress/$id'
                [ -e '$POND_RUN/net/job-$id' ] && echo 'address lease of $id'
                true"
}

t_clean() { # DESC ID: nothing of job ID remains
        local left
        left=$(leftovers "$2")
        t_eq "$1" "" "$left"
}

# wait_active ID: until the job's payload is running (its scope exists), at most ~20 s
wait_running() {
        local i
        for i in $(seq 200); do
                in_box systemctl is-active -q "pond-$1.scope" && return 0
                sleep 0.1
        done
        return 1
}

# wait_gone ID: until the job's unit is inactive or failed (ExecStopPost done), at most ~60 s
wait_gone() {
        local i state
        for i in $(seq 600); do
                state=$(in_box systemctl show -P ActiveState "pond-job@$1.service")
                case $state in inactive|failed|"") return 0 ;; esac
                sleep 0.1
        done
        return 1
}
