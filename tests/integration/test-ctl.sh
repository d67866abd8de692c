#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-ctl.sh: pondctl as a script drives it, through real pond-job@ID units: usage and its exit status,
# `submit -` from stdin (checked as strictly as a file), `wait --json`, `status --json`, `list --json` with
# its filters, and `logs -f` started right after submit: every line of the live log exactly once, in order,
# while the job still runs and across the switch to the result's signed copy; and `result`/`verify` of a job
# whose artifacts are named with terminal escapes print none of them.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

# json FILE EXPR: a python expression over the JSON document in FILE (as j)
json() {
        python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>&1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- usage: bare pondctl is an error with the usage on stderr; VERB --help is a success on stdout
pond >"$tmp/out" 2>"$tmp/err"
t_eq "bare pondctl exits 64 (usage error)" 64 "$?"
t_eq "bare pondctl prints nothing on stdout" "" "$(cat "$tmp/out")"
t_like "bare pondctl prints the usage on stderr" "^Usage: pondctl" "$(cat "$tmp/err")"
t_like "logs --help: the verb's usage on stdout" "^Usage: pondctl logs " "$(pond logs --help 2>/dev/null)"
pond status "no-such-job-$$" >/dev/null 2>&1
t_eq "status of an unknown job exits 4" 4 "$?"

# spec ID COMMAND-JSON: a job spec on stdout
spec() {
        printf '{"job_id":"%s","tenant":"t","command":%s,"sandbox":{"profile":"untrusted-code-write","backend":"%s"}}\n' \
                "$1" "$2" "$BACKEND"
}

# submit_and_follow: `pondctl submit -` (the spec on stdin) and, in the same shell in the box as soon as it
# has printed the id, `pondctl logs -f ID`: started before pond-run has created the live log. (pondctl
# before the live follow, started like this, showed nothing until the job had ended: 3 runs of 3.)
submit_and_follow() {
        # shellcheck disable=SC2016 # expanded by the box's sh
        in_box sh -c 'id=$("$1" submit -) && exec "$1" logs -f "$id"' sh "$PONDCTL"
}

# --- submit - refuses a bad spec from stdin as it would a file, and leaves nothing behind
bad=$(new_id ctl-bad)
printf '{"job_id":"%s","command":["true"],"sandbox":{"profile":"untrusted-code-write"},"bogus":1}\n' "$bad" |
        pond submit - >"$tmp/out" 2>"$tmp/err"
t_eq "submit - of a spec with an unknown key: refused (125)" 125 "$?"
t_like "the refusal names the key" "bogus" "$(cat "$tmp/err")"
t_eq "no spool entry for the refused job" absent "$(path_state "$POND_STATE/jobs/$bad")"

# --- logs -f right after submit: a job printing lines over a few seconds, on both streams
id=$(new_id ctl-logs)
lines=30
# shellcheck disable=SC2016 # the job's shell expands these
cmd='["sh","-c","i=1; while [ $i -le '$lines' ]; do echo line-$i; echo err-$i >&2; sleep 0.1; i=$((i+1)); done"]'
spec "$id" "$cmd" | submit_and_follow >"$tmp/stdout" 2>"$tmp/stderr"
t_eq "logs -f exits 0 once the job has ended" 0 "$?"
t_eq "submit - started the job" completed "$(result_field "$id" 'r["status"]')" || diag "$(cat "$tmp/stderr")"
t_eq "logs -f: every stdout line exactly once, in order" "$(seq -f 'line-%g' 1 $lines)" "$(cat "$tmp/stdout")"
t_eq "logs -f: every stderr line exactly once, in order" "$(seq -f 'err-%g' 1 $lines)" "$(cat "$tmp/stderr")"

# --- wait --json on the finished job
pond wait --json "$id" >"$tmp/wait.json" 2>/dev/null
t_eq "wait --json exits with the job's status" 0 "$?"
t_eq "wait --json: verified" True "$(json "$tmp/wait.json" 'j["verified"]')"
t_eq "wait --json: exit_status" 0 "$(json "$tmp/wait.json" 'j["exit_status"]')"
t_eq "wait --json: status" completed "$(json "$tmp/wait.json" 'j["status"]')"
t_eq "wait --json: the verified result" "$id" "$(json "$tmp/wait.json" 'j["result"]["job_id"]')"

# --- status --json
pond status --json "$id" >"$tmp/status.json" 2>/dev/null
t_eq "status --json exits 0" 0 "$?"
t_eq "status --json: state" completed "$(json "$tmp/status.json" 'j["state"]')"
t_eq "status --json: unit" "pond-job@$id.service" "$(json "$tmp/status.json" 'j["unit"]')"
t_eq "status --json: the result's status, not verified" "completed False" \
        "$(json "$tmp/status.json" 'j["result"]["status"] + " " + str(j["result"]["verified"])')"
t_eq "status --json: profile and rc" "untrusted-code-write 0" \
        "$(json "$tmp/status.json" 'j["profile"] + " " + str(j["rc"])')"

# --- list --json and its filters
has() { # FILE: whether the list in FILE has $id
        json "$1" "any(e['job_id'] == '$id' for e in j)"
}
pond list --json --state completed >"$tmp/list.json" 2>/dev/null
t_eq "list --json --state completed: has the job" True "$(has "$tmp/list.json")"
t_eq "list --json --state completed: only completed jobs" "['completed']" \
        "$(json "$tmp/list.json" 'sorted(set(e["state"] for e in j))')"
t_eq "list --json: the job's entry" "completed untrusted-code-write 0" \
        "$(json "$tmp/list.json" '" ".join(str(e[k]) for e in j if e["job_id"] == "'"$id"'" for k in ("state", "profile", "rc"))')"
pond list --json --state running,pending >"$tmp/list.json" 2>/dev/null
t_eq "list --json --state running,pending: not the job" False "$(has "$tmp/list.json")"
pond list --json --profile untrusted-code-read >"$tmp/list.json" 2>/dev/null
t_eq "list --json --profile of another profile: not the job" False "$(has "$tmp/list.json")"
pond list --json --since 1h >"$tmp/list.json" 2>/dev/null
t_eq "list --json --since 1h: has the job" True "$(has "$tmp/list.json")"
pond list --json --since "@$(( $(date +%s) + 86400 ))" >"$tmp/list.json" 2>/dev/null
t_eq "list --json --since tomorrow: not the job" False "$(has "$tmp/list.json")"
t_like "list (text): the job's line" "^$id completed untrusted-code-write 0$" "$(pond list --state completed | grep "^$id ")"

# --- result and verify show what a job named its files escaped: one artifact named to erase the line and
# print "OK", one to set the operator's clipboard (OSC 52). No ESC reaches the terminal; --json stays exact.
esc=$(new_id ctl-esc)
src=$(in_box mktemp -d /var/tmp/pond-src.XXXXXX)
in_box chown 4242:4242 "$src"
# shellcheck disable=SC2016 # the job's shell expands these
run_job "$esc" --profile untrusted-code-write --checkout "$src" -- sh -c \
        'printf x > "/workspace/$(printf "evil\033]52;c;ZWNobyBwd25lZA==\007")" &&
         printf y > "/workspace/$(printf "\033[2K\rOK")"'
t_eq "a job naming its files with escapes completes" 0 "$RC" || diag "$OUT"
pond result "$esc" >"$tmp/result.txt" 2>&1
t_eq "result of it: verified (exit 0)" 0 "$?"
t_eq "result: no ESC, BEL or CR in what it prints" 0 "$(tr -cd '\033\007\r' <"$tmp/result.txt" | wc -c)"
t_like "result: the OSC 52 name, escaped" ' evil\\x1b\]52;c;ZWNobyBwd25lZA==\\x07 ' "$(cat "$tmp/result.txt")"
t_like "result: the forged OK, escaped" ' \\x1b\[2K\\x0dOK ' "$(cat "$tmp/result.txt")"
pond verify --pubkey /etc/pond/keys/sign.pub "$POND_STATE/results/$esc" >"$tmp/verify.txt" 2>&1
t_eq "verify: no ESC, BEL or CR in what it prints" 0 "$(tr -cd '\033\007\r' <"$tmp/verify.txt" | wc -c)"
pond result --json "$esc" >"$tmp/result.json" 2>/dev/null
t_eq "result --json: the names exactly, as JSON" "['\\x1b[2K\\rOK', 'evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07']" \
        "$(json "$tmp/result.json" 'sorted(a["path"] for a in j["artifacts"])')"
in_box rm -rf "$src"
t_clean "nothing left after the job with hostile names" "$esc"

# --- logs -f shows the live log while the job runs: the job prints five lines and then waits until it is
# cancelled, which happens only after logs -f has shown all five. A pondctl that showed the log only once
# the job ended would never show them (the bounded wait below fails instead of hanging).
id=$(new_id ctl-live)
# shellcheck disable=SC2016
cmd='["sh","-c","for i in 1 2 3 4 5; do echo live-$i; done; exec sleep 600"]'
spec "$id" "$cmd" | submit_and_follow >"$tmp/live" 2>/dev/null &
follower=$!
seen=no
for _ in $(seq 600); do
        if grep -qx live-5 "$tmp/live"; then seen=yes; break; fi
        sleep 0.1
done
t_eq "logs -f showed the live lines while the job ran" yes "$seen"
t_eq "the job was still running then" active "$(in_box systemctl is-active "pond-job@$id.service")"
t_eq "status --json of a running job: running" running \
        "$(pond status --json "$id" 2>/dev/null >"$tmp/s.json"; json "$tmp/s.json" 'j["state"]')"
pond list --json --state running >"$tmp/list.json" 2>/dev/null
t_eq "list --json --state running: has the running job" True \
        "$(json "$tmp/list.json" "any(e['job_id'] == '$id' for e in j)")"
pond cancel "$id"
wait "$follower"
t_eq "logs -f ends with the job" 0 "$?"
t_eq "logs -f: the live lines exactly once, nothing after the switch" "$(seq -f 'live-%g' 1 5)" "$(cat "$tmp/live")"
pond wait --json "$id" >"$tmp/wait.json" 2>/dev/null
t_eq "wait --json of a cancelled job exits 130" 130 "$?"
t_eq "wait --json: cancelled" "cancelled 130" "$(json "$tmp/wait.json" 'j["status"] + " " + str(j["exit_status"])')"
t_clean "nothing left after the cancelled job" "$id"

done_testing
