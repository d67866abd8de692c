#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-interactive.sh: interactive jobs (docs/job-spec.md, "Interactive jobs") under POND_TEST_BACKEND.
# pty-driver.py drives `pondctl run -t` of a real bash and python3 through the job's pty from a pty of its
# own: a y/N prompt answered, `tty` naming the job's pty, `stty size` before and after a resize of the
# caller's terminal, a detach (Ctrl-]) and `pondctl attach`, a client killed mid-session and a second
# attach, python3 -i computing 6*7, a Ctrl-C through the tty, the job's exit status from the signed result
# and the tty's output in the signed log. Controls: without -t the payload has no tty ("not a tty"); a job
# without -t or -i cannot be attached to. -i passes stdin through a pipe. `pondctl exec` runs in a running
# job as the job (uid 1000, no_new_privs, seccomp, the job's own cgroup), returns output and rc, is
# audited, is refused to another uid, and is refused once the job has ended.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
val() { sed -n "s/^$1=//p" <<<"$OUT" | head -n 1; }

# --- the tty session, driven from a pty
id=$(new_id tty)
OUT=$(in_box python3 "$here/pty-driver.py" "$PONDCTL" "$id" "$BACKEND" 2>&1)
RC=$?
t_eq "the driver went through the whole session" "0" "$RC"
[ "$RC" = 0 ] || diag "$OUT"
t_eq "a y/N prompt read the answer typed on the caller's terminal" "y" "$(val answer)"
t_eq "the job's stdin is a terminal" "yes" "$(val isatty)"
if [ "$BACKEND" = runc ]; then
        t_like "tty names the job's pseudo-terminal" '^/dev/pts/[0-9]+$' "$(val tty)"
else
        # gVisor imports the runtime's host pty as a terminal of its own, with no name below /dev/pts: every
        # tty ioctl works (sizes, job control, Ctrl-C), ttyname() does not (docs/job-spec.md)
        diag "runsc: tty says '$(val tty)' (a terminal without a /dev/pts name)"
fi
t_eq "stty size sees the caller's window size" "30 100" "$(val size)"
t_eq "after the caller's terminal is resized, stty size sees the new size" "40 120" "$(val size2)"
t_eq "Ctrl-] detaches: pondctl run -t exits 0 and the job runs on" "0" "$(val detach_rc)"
t_eq "... saying how to reattach" "yes" "$(val detach_said)"
t_eq "pondctl attach: the job reads what is typed next" "back" "$(val after)"
t_eq "a client killed mid-session detaches; another attach goes on" "again" "$(val again)"
t_eq "python3 -i through the pty: print(6*7)" "42" "$(val python)"
t_eq "Ctrl-C through the tty interrupts python" "KeyboardInterrupt" "$(val ctrl_c)"
[ "$(val ctrl_c_sent)" = 1 ] || diag "Ctrl-C sent $(val ctrl_c_sent) times: the first echoed by the job's tty, not signalled (gVisor)"
t_eq "pondctl attach exits with the job's rc (exit(3)) from the verified result" "3" "$(val attach_rc)"
pond result "$id" >/dev/null 2>&1
t_eq "the tty job's result verifies" "0" "$?"
LOG=$(pond logs "$id" 2>&1)
t_like "the signed log has the tty's output (the answer)" "answer=y" "$LOG"
t_like "the signed log has python's 42" $'\n42\r' "$LOG"
t_eq "the result records the exit status" "3" "$(result_field "$id" 'r["exit"]["rc"]')"
CONSOLE_LOG=$(in_box journalctl -q -o cat POND_JOB_ID="$id" POND_EVENT=console 2>/dev/null)
t_eq "the journal has each attach (run -t, two attaches)" "3" \
        "$(grep -c '^attached: uid 0 to the job.s tty' <<<"$CONSOLE_LOG")"
t_eq "... the Ctrl-] as a detach" "1" "$(grep -c '^detached: uid 0' <<<"$CONSOLE_LOG")"
t_eq "... and the killed client as a hangup" "1" "$(grep -c '^hung up: uid 0' <<<"$CONSOLE_LOG")"
t_clean "nothing of the tty job is left (console socket included)" "$id"

# --- the container's init killed while a caller is attached: the caller comes back with the result
id=$(new_id tty-kill)
OUT=$(in_box python3 "$here/pty-driver.py" "$PONDCTL" "$id" "$BACKEND" kill-init "$POND_RUN" 2>&1)
if [ "$BACKEND" = runc ]; then
        t_eq "the tty job's payload killed: pondctl run -t exits 137 (SIGKILL)" "killed_rc=137" "$OUT"
else
        t_eq "the gVisor sandbox killed: pondctl run -t exits 126 (runtime failed)" "killed_rc=126" "$OUT"
        t_like "... the result names the runtime" "runtime failed|gVisor sandbox" "$(result_field "$id" 'r["reason"]')"
fi
t_clean "nothing of the killed tty job is left" "$id"

# --- kill_on_hangup: the caller told to stop without detaching cancels the job (the session above,
# without it, went on after its caller was killed: the control)
id=$(new_id tty-hup)
OUT=$(in_box python3 "$here/pty-driver.py" "$PONDCTL" "$id" "$BACKEND" hangup 2>&1)
t_eq "pondctl run -t puts the caller's terminal in raw mode" "yes" "$(val raw_while_attached)"
t_eq "SIGTERM to pondctl while attached: it exits 0 (a hangup)" "0" "$(val hangup_rc)"
t_eq "... and gives the terminal back (canonical, echo)" "yes" "$(val restored)"
pond wait -q "$id" >/dev/null 2>&1
t_eq "kill_on_hangup: the job is cancelled (130)" "130" "$?"
t_like "... and its result says why" "caller hung up" "$(result_field "$id" 'r["reason"]')"
t_clean "nothing of the hung-up job is left" "$id"

# --- controls: no tty without -t; nothing to attach to without -t or -i
run_job "$(new_id notty)" --profile untrusted-code-write -- tty
t_eq "without -t, tty says: not a tty" "not a tty" "$OUT"
t_eq "... and exits 1" "1" "$RC"

# --- stdin through a pipe (-i)
id=$(new_id stdin)
OUT=$(printf 'hello through a pipe\n' | in_box "$PONDCTL" run -q -i --job-id "$id" --backend "$BACKEND" \
        --profile untrusted-code-write -- sh -c 'tty; cat' 2>&1)
RC=$?
t_eq "-i: the job's cat ends at the caller's EOF (rc 0)" "0" "$RC"
t_like "-i: the caller's stdin reaches the job" "hello through a pipe" "$OUT"
t_like "-i alone gives no tty" "not a tty" "$OUT"
# A job that closes its stdin while the caller still sends: the supervisor's next write is EPIPE (a SIGPIPE
# there would end it and the result would be "failed"; pond-run ignores it, as does systemd's default
# IgnoreSIGPIPE= for its unit), the job goes on.
id=$(new_id stdin-closed)
# shellcheck disable=SC2016 # the job's sh expands $l
OUT=$(yes | head -c 8M | in_box "$PONDCTL" run -q -i --job-id "$id" --backend "$BACKEND" \
        --profile untrusted-code-write -- sh -c 'read -r l; echo "got $l"; exec 0<&-; sleep 1; echo alive' 2>&1)
RC=$?
t_eq "-i: a job that closes its stdin mid-stream completes (rc 0)" "0" "$RC"
t_eq "... with its output" "got y alive" "$(tr '\n' ' ' <<<"$OUT" | sed 's/ $//')"

# --- exec into a running job
# sleeper ID PROFILE: a running job that printed its cgroup and "ready"; its cgroup lines in $job_cgroup
sleeper() {
        local cmd='["sh","-c","cat /proc/self/cgroup; echo ready; exec sleep 300"]'
        printf '{"job_id":"%s","tenant":"t","command":%s,"sandbox":{"profile":"%s","backend":"%s"}}\n' \
                "$1" "$cmd" "$2" "$BACKEND" | in_box "$PONDCTL" submit - >/dev/null
        for _ in $(seq 600); do
                pond logs "$1" 2>/dev/null | grep -q '^ready' && break
                sleep 0.1
        done
        job_cgroup=$(pond logs "$1" 2>/dev/null | sed '/^ready/,$d')
}
profile=untrusted-code-write
if [ "$BACKEND" = runsc ]; then
        # runsc passes the container's init its stdio and nothing else, so the init's channel is its stdin: a
        # job whose payload has stdin (or a terminal) has no channel, and runsc's own exec would run without
        # the job's seccomp filter (gVisor installs it on the container's first process only): refused
        id=$(new_id exec-stdin)
        printf '{"job_id":"%s","tenant":"t","command":["sleep","300"],"stdin":true,"sandbox":{"profile":"%s",%s}}\n' \
                "$id" "$profile" "\"backend\":\"$BACKEND\"" | in_box "$PONDCTL" submit - >/dev/null
        for _ in $(seq 600); do
                [ "$(pond status "$id" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' \
                        2>/dev/null)" = running ] && break
                sleep 0.1
        done
        for _ in $(seq 100); do # its console socket comes once the payload runs
                OUT=$(pond exec "$id" -- id -u 2>&1)
                RC=$?
                grep -q "is not running" <<<"$OUT" || break
                sleep 0.1
        done
        t_eq "runsc: exec into a confined stdin job is refused (125)" "125" "$RC"
        t_like "... naming the seccomp filter gVisor would not apply" "would not apply the job's seccomp filter" "$OUT"
        pond cancel "$id" >/dev/null 2>&1
        pond wait -q "$id" >/dev/null 2>&1
        t_clean "nothing of the refused exec's job is left" "$id"
fi
id=$(new_id exec)
sleeper "$id" "$profile"
pond attach "$id" >"$here/.attach.$$" 2>&1 </dev/null
t_eq "attach to a job without -t or -i is refused" "1" "$?"
t_like "... saying why" "no terminal and no stdin" "$(cat "$here/.attach.$$")"
rm -f "$here/.attach.$$"
OUT=$(pond exec "$id" -- id -u 2>&1)
t_eq "exec: id -u in the running job is the job's user" "1000" "$OUT"
OUT=$(pond exec "$id" -- sh -c 'grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/self/status' 2>&1)
diag "exec's posture: $(tr '\n\t' '  ' <<<"$OUT")"
if [ "$BACKEND" = runc ]; then
        # gVisor's /proc/self/status has no NoNewPrivs line and says Seccomp 0 for every task
        t_like "exec: no_new_privs" 'NoNewPrivs:[[:space:]]+1' "$OUT"
        t_like "exec: the job's seccomp filter" 'Seccomp:[[:space:]]+2' "$OUT"
fi
# The filter by what it does, on both backends (under runsc the exec is the init's child, so it has the
# filter gVisor installed on the init; runsc's own exec would not): unshare(2) is not in the profile.
# Control: outside pond an unprivileged user may create a user namespace.
in_box setpriv --reuid=1000 --regid=1000 --clear-groups unshare -U true
t_eq "control: outside pond, uid 1000 may unshare a user namespace" "0" "$?"
t_eq "exec: unshare(2) is refused by the job's seccomp filter" "1" \
        "$(pond exec "$id" -- sh -c 'unshare -U true 2>/dev/null; echo $?' 2>&1)"
t_like "exec: no capabilities" 'CapEff:[[:space:]]+0+' "$OUT"
t_eq "exec: in the job's own cgroup" "$job_cgroup" "$(pond exec "$id" -- cat /proc/self/cgroup 2>&1)"
OUT=$(pond exec "$id" -- sh -c 'echo to-out; echo to-err >&2; exit 7' 2>"$here/.err.$$")
RC=$?
t_eq "exec: its rc is pondctl's" "7" "$RC"
t_eq "exec: its stdout" "to-out" "$OUT"
t_eq "exec: its stderr" "to-err" "$(cat "$here/.err.$$")"
rm -f "$here/.err.$$"
OUT=$(in_box setpriv --reuid=65534 --regid=65534 --clear-groups "$PONDCTL" exec "$id" -- id -u 2>&1)
RC=$?
t_fail "exec: another uid's pondctl cannot use the job ($OUT)" test "$RC" = 0
t_eq "... and gets nothing out of it" "" "$(grep 1000 <<<"$OUT")"
# The console socket itself, asked for an exec directly: its mode keeps another uid out, and SO_PEERCRED
# does where the mode would not (a uid with CAP_DAC_OVERRIDE). Control: root is answered.
# shellcheck disable=SC2016 # python's, not ours
ASK='import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect: %s" % e.strerror); sys.exit(0)
s.send(b"X" + b"id\0-u\0")
d = s.recv(70000)
print("answer: %s %s" % (d[:1].decode(), d[1:].decode(errors="replace").strip()))'
sock=$POND_RUN/console/$id.sock
execs=6
t_like "control: root asking the console socket gets the exec's output" "^answer: O 1000" \
        "$(in_box python3 -c "$ASK" "$sock" 2>&1 | head -n 1)"
t_eq "another uid cannot connect to the console socket" "connect: Permission denied" \
        "$(in_box setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c "$ASK" "$sock" 2>&1)"
t_like "another uid past the file mode (CAP_DAC_OVERRIDE) is refused by SO_PEERCRED" "^answer: N not yours" \
        "$(in_box setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+dac_override,+dac_read_search \
                --ambient-caps=+dac_override,+dac_read_search python3 -c "$ASK" "$sock" 2>&1)"
n=$(in_box journalctl -q -o cat POND_JOB_ID="$id" POND_EVENT=exec 2>/dev/null | grep -c '^exec [0-9]* by uid 0')
t_eq "exec: each exec is audited in the journal ($execs started)" "$execs" "$n"
# Output faster than a pipe holds: the exec waits for its caller, nothing is lost.
t_eq "exec: 16 MiB of output reach the caller whole" "16777216" \
        "$(pond exec "$id" -- head -c 16M /dev/zero 2>/dev/null | wc -c | tr -d ' ')"
# The caller killed mid-stream: the exec runs on to its end (its output goes nowhere), the job too.
# shellcheck disable=SC2016 # python's
VANISH='import subprocess, sys
p = subprocess.Popen([sys.argv[1], "exec", sys.argv[2], "--", "sh", "-c",
                      "head -c 32M /dev/zero; touch /tmp/exec-finished"], stdout=subprocess.PIPE)
p.stdout.read(1)
p.kill()
p.wait()
print("killed")'
t_eq "exec: its caller killed mid-stream" "killed" "$(in_box python3 -c "$VANISH" "$PONDCTL" "$id" 2>&1)"
for _ in $(seq 300); do
        pond exec "$id" -- test -e /tmp/exec-finished >/dev/null 2>&1 && break
        sleep 0.2
done
t_ok "... the exec ran on to its end" pond exec "$id" -- test -e /tmp/exec-finished
t_eq "... and the job still runs" "running" \
        "$(pond status "$id" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')"
# shellcheck disable=SC2016 # the job's sh expands $HOME
HOME_EXEC='cp /bin/true "$HOME/t" && chmod 755 "$HOME/t" && "$HOME/t" 2>/dev/null; echo $?'
if [ "$BACKEND" = runc ]; then
        # a copy of true in the home runs in this job (its Landlock, best-effort, lets the home execute): the
        # control for the locked job below
        t_eq "exec: a binary copied into the home runs (the home is on the exec list)" "0" \
                "$(pond exec "$id" -- sh -c "$HOME_EXEC" 2>&1)"
fi
pond cancel "$id" >/dev/null 2>&1
pond wait -q "$id" >/dev/null 2>&1
if [ "$BACKEND" = runc ]; then
        # untrusted-code-locked: the exec goes through pond-init as the payload does, so the exec allowlist
        # (which leaves out the home) holds for it too
        lid=$(new_id exec-locked)
        sleeper "$lid" untrusted-code-locked
        t_eq "exec into a Landlock job: the copy in the home is refused (126)" "126" \
                "$(pond exec "$lid" -- sh -c "$HOME_EXEC" 2>&1)"
        pond cancel "$lid" >/dev/null 2>&1
        pond wait -q "$lid" >/dev/null 2>&1
        t_clean "nothing of the Landlock exec job is left" "$lid"
fi
OUT=$(pond exec "$id" -- id -u 2>&1)
RC=$?
t_eq "exec into a job that has ended is refused (125)" "125" "$RC"
t_like "... clearly" "Exec refused: job .* is not running \\(cancelled\\)" "$OUT"
t_clean "nothing of the exec job is left" "$id"

done_testing
