#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-crash.sh: a worker that dies mid-job (docs/operations.md, "What a crash can lose"). A box of its own,
# whose disk is what it binds in from the host (pond's state, /etc/pond, the units, the install), takes three
# jobs under POND_TEST_BACKEND to three points of their lives: accepted and never started (the spool entry and
# owner record written, the unit not started: a crash between pondctl's write and its start), queued for
# admission (max_jobs 1), and its payload running. Then every process of the box is killed at once
# (`pond-box crash`: SIGKILL to its PID 1, no stop, no ExecStopPost=) and it boots again. At that boot
# pond-reconcile.service ends each job: exactly one signed "failed" result naming the restart and how far the
# job got, which `pondctl verify` accepts; `pondctl wait` returns; nothing of the job is left; a second start
# of the id is refused ("has ended") and leaves the result as it was; a new job runs (the control: the worker
# works after the crash).
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"

[ "$(id -u)" = 0 ] || t_skip_all "needs root (a box of its own)"
command -v systemd-nspawn >/dev/null || t_skip_all "systemd-nspawn is not installed"
build=${POND_BUILD_ROOT:-$PWD}
[ -x "$build/helpers/pondctl/pondctl" ] || t_skip_all "no pondctl in $build (set POND_BUILD_ROOT)"

BOX=crash-$$
disk=$(mktemp -d /var/tmp/pond-crash-XXXXXX)
cleanup() {
        POND_BOX_QUIET=1 POND_BOX_STOP_TIMEOUT=0 "$POND_BOX_TOOL" stop "$BOX" >/dev/null 2>&1
        rm -rf "$disk"
}
trap 'rc=$?; cleanup; (exit $rc); _t_atexit' EXIT

# What survives the crash: the box binds these in (its own root is a tmpfs, gone with it).
binds=(--bind "$POND_SRCDIR" --bind "$build")
for d in var/lib/pond etc/pond etc/systemd/system opt/pond etc/tmpfiles.d etc/sysusers.d; do
        mkdir -p "$disk/$d"
        binds+=(--bind "$disk/$d:/$d")
done
if ! "$POND_BOX_TOOL" start "$BOX" "${binds[@]}" >"$disk/box.log" 2>&1; then
        diag "$(cat "$disk/box.log")"
        bail_out "could not start the box $BOX"
fi
export POND_BOX=$BOX
# install: pond into the box; its tmpfiles and sysusers snippets where the box's boot reads them
install() {
        in_box "$POND_SRCDIR/tools/box-install" "$build" >/dev/null &&
                in_box cp /opt/pond/lib/tmpfiles.d/pond.conf /etc/tmpfiles.d/pond.conf &&
                in_box cp /opt/pond/lib/sysusers.d/pond.conf /etc/sysusers.d/pond.conf
}
install || bail_out "box-install failed"
# One payload at a time: the second job waits in the admission queue.
in_box sh -c 'printf "%s\n" "{ \"max_jobs\": 1, \"when_full\": \"wait\", \"max_wait_s\": 600 }" >/etc/pond/worker.json'

# spec ID COMMAND-JSON: a job spec on stdout
spec() {
        printf '{"job_id":"%s","tenant":"t","command":%s,"sandbox":{"profile":"untrusted-code-write","backend":"%s"}}\n' \
                "$1" "$2" "$BACKEND"
}
# phase ID: what the job's spool says its supervisor got to
phase() { in_box cat "$POND_STATE/jobs/$1/phase" 2>/dev/null; }

run_id=$(new_id crash-running) queued_id=$(new_id crash-queued) accepted_id=$(new_id crash-accepted)
spec "$run_id" '["sleep","300"]' | pond submit - >/dev/null
wait_running "$run_id" || t_not_ok "the first job's payload runs" "it did not start within ~20 s"
spec "$queued_id" '["true"]' | pond submit - >/dev/null
for _ in $(seq 200); do [ "$(phase "$queued_id")" = admission ] && break; sleep 0.1; done
t_eq "the second job waits for admission" admission "$(phase "$queued_id")"
t_eq "the first job's payload runs" running "$(phase "$run_id")"
# The third: accepted as pondctl accepts it (owner record, then spool entry), its unit not yet started.
# shellcheck disable=SC2016 # expanded by the box's sh
spec "$accepted_id" '["true"]' | in_box sh -c 'umask 077; echo root >"$1/owners/$2" && chmod 0644 "$1/owners/$2" &&
        mkdir "$1/jobs/$2" && cat >"$1/jobs/$2/job.json"' sh "$POND_STATE" "$accepted_id"
in_box sync

# --- the crash: every process of the box at once, then a boot with only its disk kept
if ! "$POND_BOX_TOOL" crash "$BOX" >"$disk/box.log" 2>&1; then
        diag "$(cat "$disk/box.log")"
        bail_out "the box did not boot again after the crash"
fi
t_eq "pond-reconcile ran at boot, before any job" active "$(in_box systemctl show -P ActiveState pond-reconcile.service)"

declare -A expect=([$run_id]="while the job was running" [$queued_id]="while the job was waiting for admission"
                   [$accepted_id]="while the job was waiting for its supervisor")
results=
for id in "$accepted_id" "$queued_id" "$run_id"; do
        t_like "$id: one signed end, failed, naming the restart and how far it got" \
                "^failed: the worker restarted \(boot [0-9a-f]+\) ${expect[$id]}" \
                "$(result_field "$id" 'r["status"] + ": " + r["reason"]')"
        t_ok "$id: the result verifies" pond verify --pubkey /etc/pond/keys/sign.pub "$POND_STATE/results/$id"
        in_box timeout -s KILL 30 "$PONDCTL" wait "$id" >/dev/null 2>&1
        t_eq "$id: pondctl wait returns (126: pond failed)" 126 "$?"
        results+="$id $(result_field "$id" 'r["reason"]')"$'\n'
done
diag "$results"
t_eq "no half-written result and no admission lease is left" "" \
        "$(in_box sh -c 'ls -A /var/lib/pond/results | grep "^\."; ls /run/pond/admission 2>/dev/null')"

# --- after the crash: the box's own parts again (LXCFS, the group), then the ids stay ended and a new job runs
install || bail_out "box-install after the crash failed"
# LXCFS failed at the boot (the box's /var and /dev/fuse were not there yet): once more, now that they are
in_box systemctl reset-failed lxcfs.service >/dev/null 2>&1
in_box systemctl restart lxcfs.service >/dev/null 2>&1
for _ in $(seq 100); do in_box test -s /var/lib/lxcfs/proc/meminfo && break; sleep 0.1; done
for id in "$accepted_id" "$queued_id" "$run_id"; do
        before=$(in_box sha256sum "$POND_STATE/results/$id/result.json")
        in_box systemctl start "pond-job@$id.service" >/dev/null 2>&1
        t_eq "$id: a second start is refused, the result left as it was" "$before" \
                "$(in_box sha256sum "$POND_STATE/results/$id/result.json")"
        t_like "$id: the journal says it has ended" "has ended" \
                "$(in_box journalctl -q -b -u "pond-job@$id.service" -o cat)"
        t_clean "$id: nothing is left" "$id"
done
in_box rm -f /etc/pond/worker.json
ok_id=$(new_id crash-after)
run_job "$ok_id" --profile untrusted-code-write -- true
t_eq "control: a new job runs to its end after the crash" "0 completed" \
        "$RC $(result_field "$ok_id" 'r["status"] + ("" if r["status"] == "completed" else ": " + r["reason"])')"
t_clean "nothing of the new job is left" "$ok_id"
done_testing
