#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-exec.sh: `pondctl exec` through the job's init (docs/job-spec.md, "Interactive jobs"; docs/threat-model.md,
# "The job's init") under POND_TEST_BACKEND: an exec'd process has the payload's posture (uid, capabilities,
# seccomp, no_new_privs, cgroup, namespaces) and is the init's child (control: runc's or runsc's own exec
# starts it from outside, parent 0); the payload cannot read the init's fds, nor kill it, and a job whose
# payload tried still ends with its own status; a payload killed by a signal is reported as that signal;
# the per-call timeout kills the command's process group (control: a longer one lets it finish); the output
# cap holds (control: without it, all of it); stdin, cwd and env reach the command; more execs at once than
# the job's exec_concurrency are refused, clearly; every exec is in the job's signed transcript, each
# stream's sha256 that of what its caller received (control: an edited copy of the result does not verify),
# profile none's (the runtime's exec) too; a harness-shaped run of 200 tool calls.
# Usage: run by meson (suite integration) as root on a systemd host, or with POND_BOX=NAME.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

state() { pond status "$1" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }

# posture: what a process says of itself, one line each (the same script for the payload and the exec)
# shellcheck disable=SC2016 # the job's sh expands it
POSTURE='id -u; id -g; grep -E "^(Seccomp|NoNewPrivs|CapEff|CapPrm|CapBnd):" /proc/self/status | tr -d "\t ";
cat /proc/self/cgroup; for n in cgroup ipc mnt net pid user uts; do echo "$n $(readlink /proc/self/ns/$n)"; done;
cat /proc/self/limits | grep -E "^Max (open files|processes|core)"'

id=$(new_id exec-posture)
# shellcheck disable=SC2016 # python's and the job's sh's
cmd=$(python3 -c 'import json,sys; print(json.dumps(["sh", "-c", sys.argv[1] + "; echo ready; exec sleep 300"]))' \
        "$POSTURE")
printf '{"job_id":"%s","tenant":"t","command":%s,"sandbox":{"profile":"untrusted-code-write","backend":"%s"}}\n' \
        "$id" "$cmd" "$BACKEND" | in_box "$PONDCTL" submit - >/dev/null
for _ in $(seq 600); do
        pond logs "$id" 2>/dev/null | grep -q '^ready' && break
        sleep 0.1
done
payload=$(pond logs "$id" 2>/dev/null | sed '/^ready/,$d')
exec_posture=$(pond exec "$id" -- sh -c "$POSTURE" 2>&1)
if [ "$BACKEND" = runsc ]; then
        # gVisor gives /proc/self/ns/user a new inode number at every readlink, in one process too (measured:
        # user:[125], then user:[176]): not comparable; the other namespaces' are stable
        payload=$(grep -v '^user user:' <<<"$payload")
        exec_posture=$(grep -v '^user user:' <<<"$exec_posture")
fi
diag "payload: $(tr '\n' '|' <<<"$payload")"
t_like "the payload said its posture" "^1000" "$payload"
t_eq "exec: the payload's uid, gid, seccomp, no_new_privs, capabilities, cgroup, namespaces and rlimits" \
        "$payload" "$exec_posture"
t_like "... its capabilities are none" "CapEff:0+" "$exec_posture"
# shellcheck disable=SC2016 # the job's sh expands it
t_eq "exec: a child of the job's init (parent pid 1; the runtime's exec would be 0)" "1" \
        "$(pond exec "$id" -- sh -c 'echo "$PPID"' 2>&1)"
if [ "$BACKEND" = runc ]; then
        # the kernel drops signals to a pid namespace's init from inside unless it handles them (gVisor does
        # not: below)
        t_eq "exec: kill -9 1 from an exec does nothing" "0" "$(pond exec "$id" -- sh -c 'kill -9 1; echo $?' 2>&1)"
        t_eq "... and the init serves the next exec" "1000" "$(pond exec "$id" -- id -u 2>&1)"
fi
# the init's fds (its channel among them) are not the payload's to read: the init is not dumpable.
# Control: the exec's own are.
t_ok "control: an exec reads its own /proc/self/fd" pond exec "$id" -- ls /proc/self/fd
if [ "$BACKEND" = runc ]; then
        t_fail "exec: /proc/1/fd (the init's channel) cannot be listed" pond exec "$id" -- ls /proc/1/fd
        t_fail "exec: /proc/1/environ cannot be read" pond exec "$id" -- cat /proc/1/environ
        t_fail "exec: /proc/1/fd/0 cannot be opened" pond exec "$id" -- sh -c 'exec 9</proc/1/fd/0'
else
        # gVisor does not hide a non-dumpable task's /proc from its uid (measured): a gap, not a way in (the
        # channel is a socket, which no open of /proc/1/fd/N gives; ptrace, pidfd_getfd and process_vm_* are
        # not in the job's filter)
        diag "runsc: /proc/1/fd lists as $(pond exec "$id" -- ls /proc/1/fd 2>&1 | tr '\n' ' ')"
fi
t_fail "exec: the init's channel (/proc/1/fd/3) cannot be opened" pond exec "$id" -- sh -c 'exec 9</proc/1/fd/3'
t_fail "exec: ... nor taken with pidfd_getfd (not in the filter)" pond exec "$id" -- python3 -c \
        'import ctypes, os, sys; p = os.pidfd_open(1); sys.exit(0 if ctypes.CDLL(None).syscall(438, p, 3, 0) >= 0 else 1)'

# the per-call options
# shellcheck disable=SC2016 # the job's sh expands them
OUT=$(echo hello | pond exec -i --cwd /tmp --env FOO=bar --env BAZ=qux "$id" -- sh -c 'cat; pwd; echo "$FOO $BAZ"' \
        2>&1)
t_eq "exec: stdin, cwd and env reach the command" "hello /tmp bar qux" "$(tr '\n' ' ' <<<"$OUT" | sed 's/ $//')"
pond exec --cwd /nonexistent "$id" -- true >/dev/null 2>&1
t_eq "exec: a cwd that does not exist is 126" "126" "$?"
pond exec "$id" -- no-such-command >/dev/null 2>&1
t_eq "exec: a command not found is 127" "127" "$?"
pond exec "$id" -- sh -c 'kill -9 $$' >/dev/null 2>&1
t_eq "exec: a command killed by signal 9 is 137" "137" "$?"
start=$(date +%s)
OUT=$(pond exec --timeout 1 "$id" -- sh -c '(sleep 3; touch /tmp/late) & sleep 60' 2>&1)
RC=$? end=$(date +%s)
t_eq "exec --timeout 1: killed (137)" "137" "$RC"
t_like "... saying so" "timed out" "$OUT"
t_ok "... within seconds ($((end - start)) s)" test $((end - start)) -lt 10
sleep 3
t_fail "... its whole process group: the background child did not finish" pond exec "$id" -- test -e /tmp/late
pond exec --timeout 10 "$id" -- sh -c '(sleep 1; touch /tmp/late2) & sleep 2' >/dev/null 2>&1
t_ok "control: with a longer timeout the background child finishes" pond exec "$id" -- test -e /tmp/late2
t_eq "exec --max-output 1000: 1000 bytes come back" "1000" \
        "$(pond exec --max-output 1000 "$id" -- head -c 100000 /dev/zero 2>/dev/null | wc -c | tr -d ' ')"
t_like "... saying the rest was dropped" "beyond its cap" \
        "$(pond exec --max-output 1000 "$id" -- head -c 100000 /dev/zero 2>&1 >/dev/null)"
t_eq "control: without a cap all of it" "100000" \
        "$(pond exec "$id" -- head -c 100000 /dev/zero 2>/dev/null | wc -c | tr -d ' ')"

# --json: one object, the streams apart, the status in it and as pondctl's; bytes that are not UTF-8 in
# base64; a refusal is an object too
# shellcheck disable=SC2016 # the job's sh expands it
OUT=$(pond exec --json "$id" -- sh -c 'echo out; echo err >&2; exit 3' 2>/dev/null)
t_eq "exec --json: pondctl's status is the command's (3)" "3" "$?"
t_eq "... one object: argv, rc, the streams apart, not timed out nor truncated" \
        "['sh', '-c', 'echo out; echo err >&2; exit 3'] 3 'out\n' 'err\n' False False True" \
        "$(python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["argv"], o["exit_status"], repr(o["stdout"]),
                repr(o["stderr"]), o["timed_out"], o["truncated"], o["duration_ms"] >= 0)' <<<"$OUT" 2>&1)"
OUT=$(pond exec --json "$id" -- printf '\377\000a' 2>/dev/null)
t_eq "... output that is not UTF-8 comes as stdout_base64" "/wBh" \
        "$(python3 -c 'import json,sys; o=json.load(sys.stdin); print(o.get("stdout_base64"), o.get("stdout", ""))' \
                <<<"$OUT" 2>&1 | tr -d ' ')"
OUT=$(pond exec --json --timeout 1 "$id" -- sleep 30 2>/dev/null)
t_eq "... a timeout: 137, timed_out" "137 True" \
        "$(python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["exit_status"], o["timed_out"])' <<<"$OUT" 2>&1)"
OUT=$(pond exec --json --cwd /nonexistent "$id" -- true 2>/dev/null)
t_like "... a command that could not start: 126, its reason in stderr" "^126 .*cannot change to /nonexistent" \
        "$(python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["exit_status"], o["stderr"])' <<<"$OUT" 2>&1)"

# at most exec_concurrency (8 by default) at once: the 9th is refused with the reason, and once they end
# there is room again
# shellcheck disable=SC2016 # python's
MANY='import subprocess, sys, time
ps = [subprocess.Popen([sys.argv[1], "exec", sys.argv[2], "--", "sleep", "4"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) for _ in range(8)]
time.sleep(2)
r = subprocess.run([sys.argv[1], "exec", sys.argv[2], "--", "true"], capture_output=True, text=True)
print(r.returncode, r.stderr.strip())
print(" ".join(str(p.wait()) for p in ps))'
OUT=$(in_box python3 -c "$MANY" "$PONDCTL" "$id" 2>&1)
t_like "exec: a 9th exec at once is refused (125), clearly" "^125 .*8 execs running already, its exec_concurrency" \
        "$OUT"
t_eq "... while the 8 ran to their end" "0 0 0 0 0 0 0 0" "$(tail -n 1 <<<"$OUT")"
t_eq "... and then there is room again" "1000" "$(pond exec "$id" -- id -u 2>&1)"
t_eq "the job still runs" "running" "$(state "$id")"
pond cancel "$id" >/dev/null 2>&1
pond wait -q "$id" >/dev/null 2>&1
t_eq "the job ends cancelled" "cancelled" "$(result_field "$id" 'r["status"]')"
OUT=$(pond exec --json "$id" -- true 2>/dev/null)
t_like "exec --json into an ended job: refused, its reason, no status" "^True None job .* is not running" \
        "$(python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["refused"], o["exit_status"], o["reason"])' \
                <<<"$OUT" 2>&1)"
t_ok "its result verifies, every exec in its transcript" \
        pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$POND_STATE/results/$id"
t_like "... all $(result_field "$id" 'r["execs"]["count"]') of them" "^[3-9][0-9]$" \
        "$(result_field "$id" 'r["execs"]["count"]')"
t_clean "nothing of the exec job is left" "$id"

# A harness-shaped run: the payload waits while a driver outside makes 200 tool calls through
# `pondctl exec --json` (write a note, run the project's test, read the note back; halfway, fix the bug), and
# the last call ends the payload. The test fails before the fix and passes after it (control: the same
# test on the source checkout still fails: it was never touched), every note reads back as written, and the
# signed result holds the fix and every note.
src=$(in_box mktemp -d /var/tmp/pond-harness.XXXXXX)
in_box sh -c "printf 'def add(a, b):\n    return a - b\n' > $src/calc.py &&
              printf 'import calc\nassert calc.add(2, 3) == 5, calc.add(2, 3)\nprint(\"ok\")\n' > $src/test_calc.py &&
              chown -R 4242:4242 $src"
id=$(new_id exec-harness)
pond run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write --checkout "$src" -- \
        sh -c 'while [ ! -e /workspace/.done ]; do sleep 0.1; done' >/dev/null 2>&1 &
runner=$!
# shellcheck disable=SC2016 # python's
DRIVER='import json, subprocess, sys, time
pondctl, jid = sys.argv[1], sys.argv[2]
def call(argv, stdin=None):
    p = subprocess.run([pondctl, "exec", "--json"] + (["-i"] if stdin is not None else []) + [jid, "--"] + argv,
                       input=(stdin or "").encode(), capture_output=True)
    o = json.loads(p.stdout)
    assert o["exit_status"] == p.returncode, (o, p.returncode)
    return o
for _ in range(600):
    if subprocess.run([pondctl, "exec", jid, "--", "true"], capture_output=True).returncode == 0:
        break
    time.sleep(0.1)
calls, fails_before, passes_after, reads = 0, 0, 0, 0
for i in range(66):
    if i == 33:
        call(["sh", "-c", "cat > /workspace/calc.py"], "def add(a, b):\n    return a + b\n"); calls += 1
    call(["sh", "-c", "mkdir -p /workspace/notes && cat > /workspace/notes/n%d" % i], "note %d\n" % i); calls += 1
    o = call(["python3", "/workspace/test_calc.py"]); calls += 1
    if i < 33 and o["exit_status"] == 1 and "AssertionError: -1" in o["stderr"]: fails_before += 1
    if i >= 33 and o["exit_status"] == 0 and o["stdout"] == "ok\n": passes_after += 1
    o = call(["cat", "/workspace/notes/n%d" % i]); calls += 1
    if o["stdout"] == "note %d\n" % i and o["exit_status"] == 0: reads += 1
call(["touch", "/workspace/.done"]); calls += 1
print(calls, fails_before, passes_after, reads)'
OUT=$(in_box python3 -c "$DRIVER" "$PONDCTL" "$id" 2>&1)
t_eq "harness: 200 tool calls; the test failed 33 times before the fix, passed 33 after; 66 notes read back" \
        "200 33 33 66" "$OUT"
wait "$runner"
t_eq "... the payload ended on the last call: completed 0" "completed 0" \
        "$(result_field "$id" 'r["status"] + " " + str(r["exit"]["rc"])')"
t_eq "... the signed result holds the fix and the 66 notes" "calc.py:modified 66" \
        "$(result_field "$id" '(" ".join(a["path"]+":"+a["change"] for a in r["artifacts"] if a["path"]=="calc.py") +
                " " + str(sum(1 for a in r["artifacts"] if a["path"].startswith("notes/"))))')"
t_eq "... the fix's bytes are in it" "$(printf 'def add(a, b):\n    return a + b')" \
        "$(in_box cat "$POND_STATE/results/$id/artifacts/calc.py")"
t_ok "... and it verifies" pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$POND_STATE/results/$id"
t_eq "... its transcript holds the 200 calls (and the driver's waits for the job's start)" True \
        "$(result_field "$id" 'r["execs"]["count"] >= 200')"
t_fail "control: the source checkout's test still fails (it was never touched)" in_box sh -c "cd $src && python3 test_calc.py"
in_box rm -rf "$src"
t_clean "nothing of it is left" "$id"

# The exec transcript: a job that sleeps, four execs (one with stdin, one failing with rc 3, one timed out),
# the job ended: its signed result holds exactly those calls, each stream's sha256 that of what the caller
# received. Control: a copy of the result with one kept byte changed, an index line removed or a file added
# does not verify.
id=$(new_id exec-transcript)
printf '{"job_id":"%s","tenant":"t","command":["sh","-c","echo ready; exec sleep 300"],"sandbox":{"profile":"untrusted-code-write","backend":"%s"}}\n' \
        "$id" "$BACKEND" | in_box "$PONDCTL" submit - >/dev/null
for _ in $(seq 600); do
        pond logs "$id" 2>/dev/null | grep -q '^ready' && break
        sleep 0.1
done
tmp=/tmp/pond-test-transcript-$id
# shellcheck disable=SC2016 # the box's sh expands them
CALLS='set -u; p=$1 id=$2 d=$3; mkdir -p "$d"
"$p" exec "$id" -- sh -c "echo out; echo err >&2" >"$d/1.out" 2>"$d/1.err"; echo $?
printf "line one\nline two\n" >"$d/2.in"; "$p" exec -i "$id" -- sh -c "cat; echo more" <"$d/2.in" >"$d/2.out" 2>&1; echo $?
"$p" exec "$id" -- sh -c "echo failing; echo why >&2; exit 3" >"$d/3.out" 2>"$d/3.err"; echo $?
"$p" exec --timeout 1 "$id" -- sh -c "echo start; sleep 60" >"$d/4.out" 2>/dev/null; echo $?'
t_eq "four execs: rc 0, 0 (with stdin), 3, 137 (timed out)" "0 0 3 137" \
        "$(in_box sh -c "$CALLS" sh "$PONDCTL" "$id" "$tmp" | tr '\n' ' ' | sed 's/ $//')"
pond cancel "$id" >/dev/null 2>&1
pond wait -q "$id" >/dev/null 2>&1
t_ok "the result verifies" pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$POND_STATE/results/$id"
# each line: seq, via, uid, argv[0], status, timed out, and which of the caller's stdin, stdout and stderr
# the transcript's sha256 matches ("." for a stream the caller's file does not hold alone)
# shellcheck disable=SC2016 # python's
CHECK='import hashlib, json, os, sys
d, tmp = sys.argv[1], sys.argv[2]
r = json.load(open(d + "/result.json"))
x = r["execs"]
lines = [json.loads(l) for l in open(d + "/execs/index", "rb").read().splitlines()]
print("count", x["count"], len(lines), "dropped", x["dropped_bytes"])
def caller(n, ext):
    p = "%s/%d.%s" % (tmp, n, ext)
    return hashlib.sha256(open(p, "rb").read() if os.path.exists(p) else b"").hexdigest() if ext != "err" or os.path.exists(p) else None
for e in sorted(lines, key=lambda e: e["seq"]):
    n = e["seq"]
    got = []
    for s, ext in (("stdin", "in"), ("stdout", "out"), ("stderr", "err")):
        want = caller(n, ext)
        got.append("." if want is None else s if e[s]["sha256"] == want and e[s]["kept"] == e[s]["bytes"] else "MISMATCH")
    print(n, e["via"], e["uid"], e["argv"][0], e["status"], "timed_out" if e["timed_out"] else "-", *got)'
OUT=$(in_box python3 -c "$CHECK" "$POND_STATE/results/$id" "$tmp" 2>&1)
diag "transcript: $(tr '\n' '|' <<<"$OUT")"
t_eq "the transcript holds exactly those four calls, what each caller received by its sha256" \
"count 4 4 dropped 0
1 init 0 sh 0 - stdin stdout stderr
2 init 0 sh 0 - stdin stdout .
3 init 0 sh 3 - stdin stdout stderr
4 init 0 sh 137 timed_out stdin stdout ." "$OUT"
# shellcheck disable=SC2016 # the box's sh expands them
EDIT='set -eu; src=$1 dst=$2 what=$3
rm -rf "$dst"; cp -a "$src" "$dst"
case $what in
byte) python3 -c "import sys; p = sys.argv[1]; b = bytearray(open(p, \"rb\").read()); b[0] ^= 1; open(p, \"wb\").write(b)" "$dst/execs/1.stdout" ;;
line) sed -i 1d "$dst/execs/index" ;;
file) echo extra >"$dst/execs/5.stdout" ;;
esac'
for what in none byte line file; do
        in_box sh -c "$EDIT" sh "$POND_STATE/results/$id" "$tmp/copy-$what" "$what"
done
t_ok "control: an unedited copy verifies" \
        pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$tmp/copy-none"
OUT=$(pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$tmp/copy-byte" 2>&1)
t_like "a copy with one byte of a kept output changed does not verify" "FAILED: execs/1.stdout sha256 mismatch" "$OUT"
OUT=$(pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$tmp/copy-line" 2>&1)
t_like "a copy with an index line removed does not verify" "FAILED: execs/index sha256 mismatch" "$OUT"
OUT=$(pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$tmp/copy-file" 2>&1)
t_like "a copy with a file added to execs/ does not verify" "FAILED: execs/ holds files not covered" "$OUT"
in_box rm -rf "$tmp"
t_clean "nothing of the transcript job is left" "$id"

# Profile none: the runtime's exec (no init serves execs) is recorded the same way, as the runtime's.
id=$(new_id exec-none)
printf '{"job_id":"%s","tenant":"t","command":["sh","-c","echo ready; exec sleep 300"],"sandbox":{"profile":"none","backend":"%s"}}\n' \
        "$id" "$BACKEND" | in_box "$PONDCTL" submit - >/dev/null
for _ in $(seq 600); do
        pond logs "$id" 2>/dev/null | grep -q '^ready' && break
        sleep 0.1
done
t_eq "profile none: the runtime's exec runs" "via the runtime" "$(pond exec "$id" -- echo via the runtime 2>&1)"
pond cancel "$id" >/dev/null 2>&1
pond wait -q "$id" >/dev/null 2>&1
t_ok "... the result verifies" pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$POND_STATE/results/$id"
# shellcheck disable=SC2016 # python's
OUT=$(in_box python3 -c 'import hashlib, json, sys
e = [json.loads(l) for l in open(sys.argv[1] + "/execs/index", "rb")]
print(len(e), e[0]["via"], e[0]["argv"], e[0]["status"],
      e[0]["stdout"]["sha256"] == hashlib.sha256(b"via the runtime\n").hexdigest())' "$POND_STATE/results/$id" 2>&1)
t_eq "... its transcript has the call, the runtime's, with the sha256 of what came back" \
        "1 runtime ['echo', 'via', 'the', 'runtime'] 0 True" "$OUT"
t_clean "nothing of the profile none job is left" "$id"

# A payload that kills its init: under runc it cannot (the kernel drops the signal) and the job ends with
# the payload's own status; gVisor delivers it, the init dies, and the job fails saying so (never an exec
# without the init: nothing else forks them).
id=$(new_id exec-kill1)
run_job "$id" --profile untrusted-code-write -- sh -c 'kill -KILL 1; kill -STOP 1; sleep 1; echo alive; exit 3'
if [ "$BACKEND" = runc ]; then
        t_eq "runc: a payload's kill -KILL 1 does nothing: the job ends with the payload's rc (3)" "3" "$RC"
        t_eq "... completed" "completed 3" "$(result_field "$id" 'r["status"] + " " + str(r["exit"]["rc"])')"
else
        t_eq "runsc: a payload's kill -KILL 1 kills the init: the job fails, no rc made up" "failed None" \
                "$(result_field "$id" 'r["status"] + " " + str(r["exit"]["rc"])')"
        t_like "... saying the init was killed from inside the job" "init was killed from inside the job" \
                "$(result_field "$id" 'r["reason"]')"
fi
t_clean "nothing of it is left" "$id"
id=$(new_id exec-sig)
run_job "$id" --profile untrusted-code-write -- sh -c 'kill -SEGV $$'
t_eq "a payload killed by SIGSEGV is reported as SIGSEGV (the init exits 139 for it)" "SIGSEGV None" \
        "$(result_field "$id" 'str(r["exit"]["signal"]) + " " + str(r["exit"]["rc"])')"
t_clean "nothing of it is left" "$id"
done_testing
