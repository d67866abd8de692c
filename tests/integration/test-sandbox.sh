#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-sandbox.sh: the supervisors' mount sandbox (docs/operations.md, "One namespace, built once"). Every
# pond-run of a pond-job@ unit starts in a private copy of pond-sandbox.service's mount namespace: not the
# host's, not the holder's, read-only where the unit said so, with its own /tmp and its own credentials; what
# it mounts reaches neither the holder nor the host. A job without the sandbox is refused; a cleanup runs
# anyway. A holder whose writable paths no longer match the host's is restarted; a restart of the holder does
# not touch a running job.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

holder() { in_box systemctl show -P MainPID pond-sandbox.service; }

# --- a running job's supervisor, seen from outside
id=$(new_id sandbox)
in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write -- sleep 30 \
        >/dev/null 2>&1 &
runner=$!
if wait_running "$id"; then
        run=$(in_box systemctl show -P MainPID "pond-job@$id.service")
        hold=$(holder)
        ns() { in_box readlink "/proc/$1/ns/mnt"; }
        t_ok "the sandbox's holder runs" test "$hold" -gt 0
        t_ok "the supervisor is not in the host's mount namespace" test "$(ns "$run")" != "$(ns 1)"
        t_ok "... nor in the holder's: a copy of its own" test "$(ns "$run")" != "$(ns "$hold")"
        t_like "/usr is read-only for the supervisor (ProtectSystem=strict)" "Read-only file system" \
                "$(in_box nsenter -t "$run" -m touch /usr/pond-sandbox-probe 2>&1)"
        t_eq "/home is empty for it (ProtectHome=)" "" "$(in_box nsenter -t "$run" -m ls -A /home 2>&1)"
        t_like "/proc/sys is read-only for it (ProtectKernelTunables=)" "Read-only file system" \
                "$(in_box nsenter -t "$run" -m sh -c 'echo 1 > /proc/sys/kernel/ns_last_pid' 2>&1)"
        in_box nsenter -t "$run" -m sh -c "echo x > /tmp/pond-sandbox-$id"
        t_ok "its /tmp is its own: not the holder's" in_box nsenter -t "$hold" -m test ! -e "/tmp/pond-sandbox-$id"
        t_ok "... nor the host's" in_box test ! -e "/tmp/pond-sandbox-$id"
        t_like "it sees its own credentials" "pond-sign.key" \
                "$(in_box nsenter -t "$run" -m ls "/run/credentials/pond-job@$id.service" 2>&1)"
        t_eq "... and no other unit's" "pond-job@$id.service" \
                "$(in_box nsenter -t "$run" -m ls /run/credentials 2>&1)"
        t_like "the job's staging is mounted in its copy" "$POND_RUN/jobs/$id/workspace" \
                "$(in_box grep -F "$POND_RUN/jobs/$id" "/proc/$run/mountinfo")"
        t_eq "... not in the holder's namespace" "" "$(in_box grep -F "$POND_RUN/jobs/$id" "/proc/$hold/mountinfo")"
        t_eq "... not in the host's" "" "$(in_box grep -F "$POND_RUN/jobs/$id" /proc/1/mountinfo)"
        # A restart of the holder while the job runs: the job keeps its copy and ends as it would have.
        t_ok "the sandbox restarts while the job runs" in_box systemctl restart pond-sandbox.service
        t_ok "... a new holder" test "$(holder)" != "$hold"
        t_ok "... the job's supervisor still runs" in_box kill -0 "$run"
        pond cancel "$id" >/dev/null 2>&1
else
        t_ok "the sandbox job started" false
fi
wait "$runner" 2>/dev/null
t_eq "the job ended as cancelled, signed" cancelled "$(result_field "$id" 'r["status"]')"
t_clean "nothing of it left, in any namespace (the holders' included)" "$id"

# --- the holder is started by the first job that needs it (pond-job@ Wants= it)
in_box systemctl stop pond-sandbox.service
id=$(new_id sandbox-wanted)
run_job "$id" --profile untrusted-code-read -- true
t_eq "a job starts the stopped sandbox and runs (rc 0)" 0 "$RC" || diag "$OUT"
t_eq "... the sandbox is active" active "$(in_box systemctl is-active pond-sandbox.service)"

# --- a holder whose namespace no longer matches the host's: its state directory read-only there, as when
# the directory was made after the holder started (ProtectSystem=strict left it read-only)
hold=$(holder)
in_box nsenter -t "$hold" -m mount -o remount,bind,ro "$POND_STATE"
id=$(new_id sandbox-stale)
run_job "$id" --profile untrusted-code-read -- true
t_eq "a job on a sandbox whose state directory is read-only runs (rc 0)" 0 "$RC" || diag "$OUT"
t_ok "... in a sandbox restarted for it" test "$(holder)" != "$hold"
t_like "... which the journal says" "$POND_STATE in the sandbox is not the host's directory, or not writable" \
        "$(in_box journalctl -q -o cat "POND_JOB_ID=$id" 2>&1)"
t_clean "... and nothing of it left" "$id"

# --- no sandbox: the job is refused, with the reason; its cleanup still runs
# (a drop-in whose condition fails: the unit cannot start, as a masked one; the installed file in /etc would
# outrank a runtime mask in the box)
d=/run/systemd/system/pond-sandbox.service.d
in_box systemctl stop pond-sandbox.service
in_box sh -c "mkdir -p $d && printf '[Unit]\nConditionPathExists=/pond-no-such-path\n' >$d/off.conf && systemctl daemon-reload"
id=$(new_id sandbox-off)
run_job "$id" --profile untrusted-code-read -- true
t_eq "without the sandbox the job is refused, signed" refused "$(result_field "$id" 'r["status"]')"
t_like "... saying why" "pond-sandbox.service" "$(result_field "$id" 'r["reason"]')"
t_clean "... and nothing of it left" "$id"
in_box sh -c "rm -rf $d && systemctl daemon-reload"
id=$(new_id sandbox-back)
run_job "$id" --profile untrusted-code-read -- true
t_eq "with the sandbox back, jobs run again (rc 0)" 0 "$RC" || diag "$OUT"

done_testing
