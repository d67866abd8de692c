#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-core.sh: the core job path through real pond-job@ID units on a real systemd with a real runtime
# (POND_TEST_BACKEND, default runc): success and a verifying result, confinement, limits, time-outs,
# the write posture's change set, refusals, and no leftovers, also after kill -9 of the supervisor.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

# --- a job succeeds and its result verifies
id=$(new_id ok)
run_job "$id" --profile untrusted-code-write -- sh -c 'echo hello-out; echo hello-err >&2; exit 3'
t_eq "job's exit status is pondctl's" 3 "$RC"
t_like "stdout streamed" "hello-out" "$OUT"
t_like "stderr streamed" "hello-err" "$OUT"
t_ok "result verifies with the worker key" \
        pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$POND_STATE/results/$id"
t_fail "result does not verify as another job" \
        pond verify --pubkey /etc/pond/keys/sign.pub --job-id "other-$id" "$POND_STATE/results/$id"
t_eq "result records rc" 3 "$(result_field "$id" 'r["exit"]["rc"]')"
t_eq "result records status" completed "$(result_field "$id" 'r["status"]')"
t_eq "a job that did not run out of memory is not OOM-killed" False "$(result_field "$id" 'r["exit"]["oom_killed"]')"
t_eq "result records profile" untrusted-code-write "$(result_field "$id" 'r["profile"]')"
t_eq "result records backend" "$BACKEND" "$(result_field "$id" 'r["backend"]')"
t_eq "log kept in the result" "hello-out" "$(in_box cat "$POND_STATE/results/$id/log/stdout")"
t_like "journal: accepted, started, exited, signed" "accepted.*started.*exited.*signed" \
        "$(in_box journalctl -q -o cat --output-fields=POND_EVENT POND_JOB_ID="$id" | tr '\n' ' ')"
t_clean "nothing left after a job" "$id"

# --- confinement as seen from inside (capabilities through capget, no_new_privs and ambient through prctl:
# gVisor's /proc does not show every status line)
id=$(new_id ident)
run_job "$id" --profile untrusted-code-write -- python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class Hdr(ctypes.Structure): _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure): _fields_ = [("eff", ctypes.c_uint32), ("prm", ctypes.c_uint32), ("inh", ctypes.c_uint32)]
hdr, data = Hdr(0x20080522, 0), (Data * 2)()
assert libc.capget(ctypes.byref(hdr), data) == 0
print("uid", os.getuid(), os.geteuid(), "gid", os.getgid(), "groups", os.getgroups())
print("eff", data[0].eff | data[1].eff, "prm", data[0].prm | data[1].prm, "inh", data[0].inh | data[1].inh)
print("bnd", sum(libc.prctl(23, c, 0, 0, 0) == 1 for c in range(64)))
print("amb", sum(libc.prctl(47, 1, c, 0, 0) == 1 for c in range(64)))
print("nnp", libc.prctl(39, 0, 0, 0, 0))
print("seccomp", [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")])
print("fds", sorted(int(f) for f in os.listdir("/proc/self/fd")))
for k in sorted(os.environ): print("env", k + "=" + os.environ[k])'
t_eq "runs as uid/gid 1000, no supplementary groups" "uid 1000 1000 gid 1000 groups []" "$(grep '^uid' <<<"$OUT")"
t_eq "effective, permitted, inheritable capabilities empty" "eff 0 prm 0 inh 0" "$(grep '^eff' <<<"$OUT")"
t_eq "bounding set empty" "bnd 0" "$(grep '^bnd' <<<"$OUT")"
t_eq "ambient set empty" "amb 0" "$(grep '^amb' <<<"$OUT")"
t_eq "no_new_privs" "nnp 1" "$(grep '^nnp' <<<"$OUT")"
t_eq "seccomp filter on (mode 2)" "seccomp ['2']" "$(grep '^seccomp' <<<"$OUT")"
t_eq "only fds 0 1 2 (+ the listing's own)" "fds [0, 1, 2, 3]" "$(grep '^fds' <<<"$OUT")"
t_eq "nothing of systemd's or the supervisor's environment" "" \
        "$(grep -E '^env (INVOCATION_ID|NOTIFY_SOCKET|CREDENTIALS_DIRECTORY|JOURNAL_STREAM|SYSTEMD_|LISTEN_|MAINPID)' <<<"$OUT")"
t_like "POND_JOB_ID set" "^env POND_JOB_ID=$id$" "$(grep 'env POND_JOB_ID' <<<"$OUT")"
t_ok "seccomp refuses unshare(CLONE_NEWUSER)" pond run --quiet --backend "$BACKEND" --profile untrusted-code-write \
        -- python3 -c 'import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).unshare(0x10000000) != 0 else 1)'

# --- threads and spawn, as every real harness uses them. glibc's pthread_create and posix_spawn (system,
# popen) try clone3 first and fall back to clone only on ENOSYS, which each backend must give (runsc: see
# docs/threat-model.md); clone with a namespace flag stays refused. coreutils' ls and stat use statx.
id=$(new_id spawn)
run_job "$id" --profile untrusted-code-write -- python3 -c '
import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
ts = [threading.Thread(target=lambda: 0) for _ in range(16)]
for t in ts: t.start()
for t in ts: t.join()
print("threads", len(ts))
print("system", os.system("true"))
print("popen", os.popen("echo hi").read().strip())
print("posix_spawn", os.waitpid(os.posix_spawnp("true", ["true"], os.environ), 0)[1])
print("subprocess", subprocess.run(["sh", "-c", "exit 7"]).returncode)
r = libc.syscall(435, None, 0)
print("clone3", r, ctypes.get_errno())
r = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)
if r == 0: os._exit(0)
print("clone-newuser", r, ctypes.get_errno())
for cmd in ("ls -l / >/dev/null", "stat -c %F /workspace", "find /workspace -maxdepth 0 -printf %y", "nproc"):
    p = subprocess.run(["sh", "-c", cmd], stdout=subprocess.PIPE, text=True)
    print(("cmd %s rc %d %s" % (cmd, p.returncode, p.stdout.strip())).rstrip())'
t_eq "threads and spawn job succeeds" 0 "$RC"
t_eq "16 threads start" "threads 16" "$(grep '^threads' <<<"$OUT")"
t_eq "os.system (posix_spawn)" "system 0" "$(grep '^system' <<<"$OUT")"
t_eq "popen" "popen hi" "$(grep '^popen' <<<"$OUT")"
t_eq "posix_spawn" "posix_spawn 0" "$(grep '^posix_spawn' <<<"$OUT")"
t_eq "subprocess (fork/vfork)" "subprocess 7" "$(grep '^subprocess' <<<"$OUT")"
t_eq "clone3 answers ENOSYS" "clone3 -1 38" "$(grep '^clone3' <<<"$OUT")"
t_eq "clone(CLONE_NEWUSER) refused" "clone-newuser -1 1" "$(grep '^clone-newuser' <<<"$OUT")"
t_eq "ls -l works (statx)" "cmd ls -l / >/dev/null rc 0" "$(grep '^cmd ls' <<<"$OUT")"
t_eq "stat works" "cmd stat -c %F /workspace rc 0 directory" "$(grep '^cmd stat' <<<"$OUT")"
t_eq "find -printf works" "cmd find /workspace -maxdepth 0 -printf %y rc 0 d" "$(grep '^cmd find' <<<"$OUT")"
t_like "nproc works" "^cmd nproc rc 0 [0-9]+$" "$(grep '^cmd nproc' <<<"$OUT")"

# --- filesystem posture
id=$(new_id fs)
# shellcheck disable=SC2016 # the job's shell expands $p
run_job "$id" --profile untrusted-code-write -- sh -c \
        'for p in /x /etc/x /usr/x /var/x /workspace/ok /tmp/ok; do
                 if touch $p 2>/dev/null; then echo "$p writable"; else echo "$p refused"; fi; done'
for p in /x /etc/x /usr/x /var/x; do
        t_like "write to $p fails" "^$p refused$" "$(grep "^$p " <<<"$OUT")"
done
t_like "write to /workspace works" "^/workspace/ok writable$" "$(grep '^/workspace/ok ' <<<"$OUT")"
t_like "write to /tmp works" "^/tmp/ok writable$" "$(grep '^/tmp/ok ' <<<"$OUT")"

# --- what /proc tells a job about other tenants and the host kernel: masked (empty or absent), while the
# same files are readable and not empty outside (the control)
# (/proc/keys, /proc/locks and /proc/timer_list are masked too, but show uid 1000 nothing here anyway)
LEAKS="/proc/key-users /proc/config.gz /proc/kallsyms /proc/pressure/cpu"
# shellcheck disable=SC2016 # the job's shell expands $p
LEAK_SH='for p in '"$LEAKS"'; do
        if [ -e $p ]; then echo "$p $(cat $p 2>/dev/null | wc -c)"; else echo "$p absent"; fi; done'
id=$(new_id procleak)
run_job "$id" --profile untrusted-code-write -- sh -c "$LEAK_SH"
control=$(in_box setpriv --reuid 1000 --regid 1000 --clear-groups sh -c "$LEAK_SH")
for p in $LEAKS; do
        t_like "control: $p is readable on the host" "^$p [1-9][0-9]*$" "$(grep "^$p " <<<"$control")"
        t_like "$p tells the job nothing" "^$p (0|absent)$" "$(grep "^$p " <<<"$OUT")"
done

# --- the confined job's home: private, writable, the job user's, size-capped, with the spec's files in it
# (templated), gone with the job; profile none keeps HOME=/tmp and cannot have home files
id=$(new_id home)
spec=$(in_box mktemp /var/tmp/pond-spec.XXXXXX)
in_box sh -c "cat > $spec" <<JSON
{"job_id":"$id","tenant":"t","command":["true"],
 "sandbox":{"profile":"untrusted-code-read","overrides":{"home_size":"4M"}},
 "home_files":[{"path":".config/tool/settings.json","content":"{\"job\": \"{{JOB_ID}}\"}\n"},
               {"path":"bin/hello","content":"#!/bin/sh\necho hello from home\n","mode":"0700"}]}
JSON
# shellcheck disable=SC2016 # the job's shell expands $HOME
run_job "$id" --spec "$spec" -- sh -c '
        echo "HOME=$HOME"; stat -c "owner %u:%g %a" "$HOME"
        stat -c "file %a %u" "$HOME/.config/tool/settings.json" "$HOME/bin/hello"; stat -c "dir %a %u" "$HOME/.config"
        cat "$HOME/.config/tool/settings.json"; "$HOME/bin/hello"
        touch "$HOME/new" && echo "home writable"
        python3 -c "import os
try:
    with open(os.environ[\"HOME\"] + \"/big\", \"wb\") as f: f.write(b\"x\" * (8 << 20))
    print(\"big written\")
except OSError as e: print(\"big refused\", e.errno)"'
t_eq "home job succeeds" 0 "$RC"
t_eq "HOME is /home/job" "HOME=/home/job" "$(grep '^HOME=' <<<"$OUT")"
t_eq "home owned by the job user, 0700" "owner 1000:1000 700" "$(grep '^owner' <<<"$OUT")"
t_eq "home files: modes and owner" "$(printf 'file 600 1000\nfile 700 1000')" "$(grep '^file' <<<"$OUT")"
t_eq "intermediate directories: 0700, the job user's" "dir 700 1000" "$(grep '^dir' <<<"$OUT")"
t_eq "{{JOB_ID}} rendered" "{\"job\": \"$id\"}" "$(grep '^{' <<<"$OUT")"
t_eq "a home file runs" "hello from home" "$(grep '^hello' <<<"$OUT")"
t_eq "home writable (read-only posture)" "home writable" "$(grep '^home writable' <<<"$OUT")"
t_eq "home capped at home_size (4M): 8M refused, ENOSPC" "big refused 28" "$(grep '^big' <<<"$OUT")"
t_clean "nothing left after a home job" "$id"
# shellcheck disable=SC2016 # the job's shell expands $HOME
run_job "$(new_id homenone)" --profile none -- sh -c 'echo "HOME=$HOME"'
t_eq "profile none keeps HOME=/tmp" "HOME=/tmp" "$(grep '^HOME=' <<<"$OUT")"
id=$(new_id homenone)
in_box sh -c "cat > $spec" <<JSON
{"job_id":"$id","tenant":"t","command":["true"],"sandbox":{"profile":"none"},
 "home_files":[{"path":"x","content":"x"}]}
JSON
run_job "$id" --spec "$spec" -- true
t_eq "home_files with profile none: refused (exit 125)" 125 "$RC"
t_like "the refusal names home_files" "home_files: need a confined profile" "$OUT"
id=$(new_id homebad)
in_box sh -c "cat > $spec" <<JSON
{"job_id":"$id","tenant":"t","command":["true"],"sandbox":{"profile":"untrusted-code-write"},
 "home_files":[{"path":"x","content":"{{NOPE}}"}]}
JSON
run_job "$id" --spec "$spec" -- true
t_eq "an unknown placeholder: refused (exit 125)" 125 "$RC"
t_like "the refusal names the field" "home_files\[0\]\.content: unknown placeholder" "$OUT"
in_box rm -f "$spec"

# --- the write posture's change set; the source checkout never changes
src=$(in_box mktemp -d /var/tmp/pond-src.XXXXXX)
in_box sh -c "mkdir -p $src/sub && echo keep > $src/keep && echo old > $src/mod && echo bye > $src/gone &&
              echo deep > $src/sub/deep && ln -s /etc/passwd $src/link && chown -R 4242:4242 $src"
before=$(in_box sh -c "cd $src && find . -printf '%p %m %U %s %l\n' | sort && find . -type f -exec sha256sum {} + | sort")
id=$(new_id write)
run_job "$id" --profile untrusted-code-write --checkout "$src" -- sh -c \
        'echo new >> /workspace/mod && echo added > /workspace/new && rm /workspace/gone &&
         ln -s /etc/shadow /workspace/evil && cat /workspace/keep'
t_eq "write job succeeds" 0 "$RC"
t_like "checkout readable by the job" "keep" "$OUT"
after=$(in_box sh -c "cd $src && find . -printf '%p %m %U %s %l\n' | sort && find . -type f -exec sha256sum {} + | sort")
t_eq "source checkout unchanged (names, modes, owners, contents)" "$before" "$after"
changes=$(result_field "$id" '" ".join(sorted(a["path"]+":"+a["change"] for a in r["artifacts"]))')
t_eq "change set: added, modified, deleted, link" "evil:added gone:deleted mod:modified new:added" "$changes"
t_eq "link recorded as a link, not followed" "link /etc/shadow" \
        "$(result_field "$id" '" ".join(a["kind"]+" "+a.get("target","") for a in r["artifacts"] if a["path"]=="evil")')"
t_eq "changed file's bytes in the result" "$(printf 'old\nnew')" \
        "$(in_box cat "$POND_STATE/results/$id/artifacts/mod")"
t_ok "write result verifies" pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$POND_STATE/results/$id"
ish=$(in_box "$PONDCTL" hash-input "$POND_STATE/jobs/$id/job.json")
t_eq "input_sha reproducible by the control plane" "$ish" "$(result_field "$id" 'r["input_sha"]')"
t_clean "nothing left after a write job" "$id"

# --- read-only posture
id=$(new_id ro)
run_job "$id" --profile untrusted-code-read --checkout "$src" -- sh -c 'cat /workspace/keep; touch /workspace/x'
t_like "read job reads the checkout" "keep" "$OUT"
t_fail "read job cannot write /workspace" test "$RC" = 0
t_clean "nothing left after a read job" "$id"

# --- profile none edits its checkout in place: the checkout is in /var/tmp, which pond-job@'s own mount
# namespace replaces (PrivateTmp=), under a root that is read-only there (ProtectSystem=strict); it is
# staged from the service manager's namespace, where it is the host's and writable
# (an existing file: under runsc, creating one on the idmapped checkout fails with EOVERFLOW, namespace or not)
id=$(new_id none)
run_job "$id" --profile none --checkout "$src" -- sh -c 'cat /workspace/keep && echo made >> /workspace/keep'
t_eq "profile none job succeeds" 0 "$RC"
t_like "profile none reads its checkout" "keep" "$OUT"
t_eq "... and writes it in place, on the host" "$(printf 'keep\nmade')" "$(in_box cat "$src/keep")"
t_clean "nothing left after a profile none job" "$id"
in_box rm -rf "$src"

# --- the payload's cgroup and limits; the supervisor stays outside
id=$(new_id cg)
in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write \
        --memory 256M --cpus 0.5 --pids 100 -- sleep 30 >/dev/null 2>&1 &
runner=$!
if wait_running "$id"; then
        props=$(in_box systemctl show "pond-$id.scope" -p Slice -p MemoryMax -p TasksMax -p CPUQuotaPerSecUSec -p Delegate)
        t_like "scope in pond.slice" "^Slice=pond.slice$" "$(grep Slice <<<"$props")"
        t_like "scope MemoryMax" "^MemoryMax=268435456$" "$(grep MemoryMax <<<"$props")"
        # runsc: sized for the sandbox's own host tasks (100 * 8 + 256); the payload's cap is RLIMIT_NPROC
        tasks=100; [ "$BACKEND" = runsc ] && tasks=1056
        t_like "scope TasksMax" "^TasksMax=$tasks$" "$(grep TasksMax <<<"$props")"
        t_like "scope CPUQuota" "^CPUQuotaPerSecUSec=500ms$" "$(grep CPUQuota <<<"$props")"
        t_like "scope delegated" "^Delegate=yes$" "$(grep Delegate <<<"$props")"
        if layout=$(cgroup_layout); then
                cg=$(memory_cgroup "$layout" "pond.slice/pond-$id.scope/payload")
                t_like "payload runs below pond.slice/pond-$id.scope ($layout cgroups)" "^[0-9]+" \
                        "$(in_box cat "$cg/cgroup.procs")"
                t_eq "kernel memory limit on the payload's cgroup" 268435456 \
                        "$(in_box cat "$cg/$(memory_limit_file "$layout")")"
                main=$(in_box systemctl show -P MainPID "pond-job@$id.service")
                t_like "supervisor stays in its service" "/pond-job@$id\.service$" "$(proc_cgroup "$layout" "$main")"
        else
                t_not_ok "the box's cgroup layout is known" "$(in_box stat -f -c %T /sys/fs/cgroup 2>&1)"
        fi
        pond cancel "$id" >/dev/null 2>&1
else
        t_not_ok "job $id started (its scope and service became active within 20 s)"
fi
wait "$runner"
t_eq "cancelled job exits 130" 130 "$?"
t_eq "result says cancelled" cancelled "$(result_field "$id" 'r["status"]')"
t_clean "nothing left after a cancelled job" "$id"

# --- memory hog: OOM-killed and reported
id=$(new_id oom)
run_job "$id" --profile untrusted-code-write --memory 64M -- python3 -c 'b = bytearray(512 << 20); print("survived")'
t_eq "memory hog is killed" 137 "$RC"
t_eq "result says OOM-killed" True "$(result_field "$id" 'r["exit"]["oom_killed"]')"
t_eq "result says SIGKILL" SIGKILL "$(result_field "$id" 'r["exit"]["signal"]')"
t_clean "nothing left after an OOM kill" "$id"

# --- fork bomb: contained by pids, the host stays responsive
id=$(new_id forks)
run_job "$id" --profile untrusted-code-write --pids 64 --timeout 20 -- python3 -c '
import os, time
n = 0
for i in range(2000):
    try:
        if os.fork() == 0:
            time.sleep(10); os._exit(0)
        n += 1
    except OSError:
        break
print("forked", n)'
n=$(sed -n 's/^forked \([0-9]*\)$/\1/p' <<<"$OUT")
# Both backends: the guest's fork() fails at the limit and the job lives on (under runsc RLIMIT_NPROC is
# the cap inside the sandbox, and the host-side limit is sized so the sandbox never dies of it).
t_like "fork bomb stopped below the pids limit" "^[0-9]+$" "$n"
[ -n "$n" ] && t_ok "forks capped ($n < 64)" test "$n" -lt 64
t_eq "the job survived its fork bomb" 0 "$RC"
id2=$(new_id threads)
run_job "$id2" --profile untrusted-code-write --pids 64 --timeout 20 -- python3 -c '
import threading, time
ts = []
try:
    for i in range(2000):
        t = threading.Thread(target=time.sleep, args=(3,)); t.start(); ts.append(t)
except RuntimeError:
    pass
print("threads", len(ts))'
n=$(sed -n 's/^threads \([0-9]*\)$/\1/p' <<<"$OUT")
t_like "thread bomb stopped" "^[0-9]+$" "$n"
[ -n "$n" ] && t_ok "threads capped ($n < 64)" test "$n" -lt 64
t_eq "the job survived its thread bomb" 0 "$RC"
t_clean "nothing left after a thread bomb" "$id2"
t_ok "host still responsive (systemd answers, a new process starts)" in_box timeout 5 sh -c 'systemctl show -P Version >/dev/null && true'
t_clean "nothing left after a fork bomb" "$id"

# --- wall clock
id=$(new_id slow)
start=$(date +%s)
run_job "$id" --profile untrusted-code-write --timeout 2 -- sleep 60
t_eq "timed-out job exits 124" 124 "$RC"
t_ok "killed promptly" test $(( $(date +%s) - start )) -lt 30
t_eq "result says timed_out" True "$(result_field "$id" 'r["exit"]["timed_out"]')"
t_like "journal says timed-out" "timed-out" "$(in_box journalctl -q -o cat --output-fields=POND_EVENT POND_JOB_ID="$id")"
t_clean "nothing left after a time-out" "$id"

# --- output capped at limits.output_bytes, the truncation recorded, the job not blocked by it
id=$(new_id cap)
spec=$(in_box mktemp /var/tmp/pond-spec.XXXXXX)
in_box sh -c "cat > $spec" <<JSON
{"job_id":"$id","tenant":"t","command":["true"],"sandbox":{"profile":"untrusted-code-write"},
 "limits":{"output_bytes":1000}}
JSON
run_job "$id" --spec "$spec" -- sh -c 'head -c 100000 /dev/zero | tr "\\0" x; echo; echo done >&2'
t_eq "capped job still completes" 0 "$RC"
t_eq "kept bytes = the cap" 1000 "$(result_field "$id" 'r["log"]["kept_bytes"]')"
t_eq "truncation recorded" True "$(result_field "$id" 'r["log"]["truncated"]')"
t_eq "what the job wrote is counted" 100001 "$(result_field "$id" 'r["log"]["stdout_bytes"]')"
t_eq "log file holds exactly the cap" 1000 "$(in_box stat -c %s "$POND_STATE/jobs/$id/log/stdout")"
in_box rm -f "$spec"

# --- refusals: before anything runs, with the reason
refused_ids=()
refuse() { # DESC REASON-REGEX ARGS...
        local desc=$1 re=$2 rid; shift 2
        rid=$(new_id refuse)
        refused_ids+=("$rid")
        OUT=$(pond run --quiet --job-id "$rid" "$@" -- true 2>&1); RC=$?
        t_eq "refused: $desc (exit 125)" 125 "$RC"
        t_like "refusal names the reason: $desc" "$re" "$OUT"
}
refuse "no profile" "profile" --backend "$BACKEND"
refuse "unknown profile" "unknown profile" --profile untrusted-code-yolo
refuse "unknown backend" "backend" --profile untrusted-code-write --backend nosuch
refuse "kata on a host without it" "kata" --profile untrusted-code-write --backend kata
refuse "memory out of bounds" "memory" --profile untrusted-code-write --memory 1T
refuse "zero pids" "pids" --profile untrusted-code-write --pids 0
refuse "image that does not exist" "image" --profile untrusted-code-write --image nosuchimage
# Each refusal that reached the supervisor (it wrote a result saying so) is in the journal under its own job
# id; those pondctl made itself never reached a unit.
in_box journalctl --sync >/dev/null 2>&1
supervised=0 journaled=0
for rid in "${refused_ids[@]}"; do
        [ "$(path_state "$POND_STATE/results/$rid/result.json")" = present ] || continue
        supervised=$((supervised + 1))
        if in_box journalctl -q -o cat --output-fields=POND_EVENT POND_JOB_ID="$rid" POND_EVENT=refused |
                grep -qx refused; then
                journaled=$((journaled + 1))
        else
                diag "no POND_EVENT=refused record with POND_JOB_ID=$rid"
        fi
done
t_ok "some refusals were the supervisor's ($supervised of ${#refused_ids[@]})" test "$supervised" -gt 0
t_eq "journal has each of them, under its job id" "$supervised" "$journaled"

# --- quorum re-runs (pondctl quorum): the same task twice agrees; a task that writes the time disagrees on
# exactly that file; results of different tasks are not comparable
qco=$(in_box mktemp -d /var/tmp/pond-quorum.XXXXXX)
in_box sh -c "printf 'print(1)\n' > $qco/main.py"
# shellcheck disable=SC2016 # the job's sh expands these
QUORUM_SH='mkdir -p build && python3 -c "import sys; print(sys.version_info[0])" > build/out.txt && echo "$TZ $SOURCE_DATE_EPOCH" > build/env.txt
[ "${1:-}" = stamp ] && date +%s%N > build/stamp.txt; exit 0'
q=()
for k in 1 2 3 4; do
        q[k]=$(new_id quorum)
done
run_job "${q[1]}" --profile untrusted-code-write --checkout "$qco" -- sh -c "$QUORUM_SH" sh
run_job "${q[2]}" --profile untrusted-code-write --checkout "$qco" -- sh -c "$QUORUM_SH" sh
run_job "${q[3]}" --profile untrusted-code-write --checkout "$qco" -- sh -c "$QUORUM_SH" sh stamp
run_job "${q[4]}" --profile untrusted-code-write --checkout "$qco" -- sh -c "$QUORUM_SH" sh stamp
t_eq "quorum: the job sees TZ and SOURCE_DATE_EPOCH" "UTC 315532800" \
        "$(in_box cat "$POND_STATE/results/${q[1]}/artifacts/build/env.txt")"
t_like "quorum: a task_sha is signed" '^[0-9a-f]{64}$' "$(result_field "${q[1]}" 'r["task_sha"]')"
t_eq "quorum: two runs of one task have one task_sha" "$(result_field "${q[1]}" 'r["task_sha"]')" \
        "$(result_field "${q[2]}" 'r["task_sha"]')"
t_ok "quorum: ... and two input_sha (the id is in the spec)" test \
        "$(result_field "${q[1]}" 'r["input_sha"]')" != "$(result_field "${q[2]}" 'r["input_sha"]')"
QR="$POND_STATE/results"
t_ok "quorum: the same task twice agrees" pond quorum --pubkey /etc/pond/keys/sign.pub "$QR/${q[1]}" "$QR/${q[2]}"
OUT=$(pond quorum --pubkey /etc/pond/keys/sign.pub "$QR/${q[3]}" "$QR/${q[4]}" 2>&1)
RC=$?
t_eq "quorum: runs that write the time disagree (exit 3)" 3 "$RC" || diag "$OUT"
t_eq "quorum: ... on exactly that file" "differs: build/stamp.txt" "$(grep '^differs:' <<<"$OUT")"
OUT=$(pond quorum --pubkey /etc/pond/keys/sign.pub "$QR/${q[1]}" "$QR/${q[3]}" 2>&1)
t_eq "quorum: different tasks are not comparable (exit 2)" 2 "$?" || diag "$OUT"
t_like "quorum: ... saying which field" "NOT COMPARABLE: task_sha" "$OUT"
in_box sh -c "cp -a $QR/${q[2]} $qco/forged && echo x >> $qco/forged/artifacts/build/out.txt"
OUT=$(pond quorum --pubkey /etc/pond/keys/sign.pub "$QR/${q[1]}" "$qco/forged" 2>&1)
t_eq "quorum: a result that does not verify (exit 1)" 1 "$?" || diag "$OUT"
in_box rm -rf "$qco"

# --- kill -9 of the supervisor mid-job: ExecStopPost removes everything
id=$(new_id kill9)
in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write -- sleep 60 \
        >/dev/null 2>&1 &
runner=$!
if wait_running "$id"; then
        # The control for the leftover check: the staging is mounted only in the unit's own mount namespace
        # (not the host's), and the check, which reads every namespace, finds it there.
        t_like "the leftover check sees a running job's staging mounts" "mount: $POND_RUN/jobs/$id/workspace" \
                "$(leftovers "$id")"
        t_eq "the staging is not mounted in the host's namespace" "" \
                "$(in_box grep -F "$POND_RUN/jobs/$id" /proc/1/mountinfo)"
        in_box sh -c "kill -9 \$(systemctl show -P MainPID pond-job@$id.service)"
        wait_gone "$id"
        t_clean "nothing left after kill -9 of pond-run" "$id"
        t_eq "a failed result is left for the control plane" failed "$(result_field "$id" 'r["status"]')"
else
        t_not_ok "job $id started (its scope and service became active within 20 s)"
fi
wait "$runner"

# shellcheck disable=SC2016 # expanded by the box's sh
t_eq "no pond mounts at all, in any mount namespace" "" \
        "$(in_box sh -c 'cat /proc/[0-9]*/mountinfo 2>/dev/null | grep -F "$1"' sh "$POND_RUN/jobs")"
t_eq "no pond scopes at all" "" "$(in_box systemctl list-units --plain --no-legend 'pond-*.scope')"
done_testing
