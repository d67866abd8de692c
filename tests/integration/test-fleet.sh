#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-fleet.sh: a worker driven from another machine with systemd's own tools. Two boxes on one veth link:
# the worker ($POND_BOX, with sshd from a throwaway key pair) and a peer that is both the client and the
# journal collector. The peer runs `pondctl -H root@worker` over real ssh: run, submit, status, logs, wait,
# cancel, list, result (units over the worker's bus through systemd-stdio-bridge, files through the worker's
# pondctl); each result is fetched and verified on the peer with the worker's public key, and a byte flipped
# in the fetched copy, or another key, fails that check. Hostile words in arguments reach the worker as
# words (the control: the same words joined unquoted, as a naive `ssh host CMD` would, run their payload).
# The worker's journal goes to the peer with systemd-journal-upload to systemd-journal-remote over http,
# where the job's decision records (POND_JOB_ID, POND_EVENT) are found with the worker's machine id.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box
[ "$(_t_box_mode)" = box ] || t_skip_all "needs POND_BOX: a second box joins it over a veth link"
for tool in /usr/sbin/sshd /usr/bin/ssh /usr/bin/ssh-keygen /usr/bin/systemd-stdio-bridge \
        /lib/systemd/systemd-journal-remote /lib/systemd/systemd-journal-upload; do
        [ -x "$tool" ] ||
                t_skip_all "$tool is missing: install openssh-server, systemd-journal-remote (tools/install-deps)"
done
build=${POND_BUILD_ROOT:-$PWD}
[ -x "$build/helpers/pondctl/pondctl" ] || t_skip_all "no pondctl in $build (set POND_BUILD_ROOT)"

W_ADDR=10.234.77.1 P_ADDR=10.234.77.2
PEER=fleet-peer-$$
FLEET=/run/pond-fleet           # the worker's sshd: its config, host key, authorized key
tmp=$(mktemp -d /tmp/pond-fleet-XXXXXX)
CLIENT_PONDCTL=$build/helpers/pondctl/pondctl

cleanup() {
        POND_BOX_QUIET=1 POND_BOX_STOP_TIMEOUT=0 "$POND_BOX_TOOL" stop "$PEER" >/dev/null 2>&1
        in_box systemctl stop pond-fleet-sshd.service pond-fleet-upload.service >/dev/null 2>&1
        in_box systemctl reset-failed pond-fleet-sshd.service pond-fleet-upload.service >/dev/null 2>&1
        in_box ip link del fleet0 >/dev/null 2>&1
        in_box sed -i '/^sshd:x:74:65534:pond-fleet:/d' /etc/passwd
        # shellcheck disable=SC2016 # the box's sh expands $1
        in_box sh -c '[ ! -f "$1" ] || cat "$1" > /etc/shadow' sh "$FLEET/shadow.orig"
        in_box rm -rf "$FLEET" /tmp/pond-fleet-pwned /tmp/pond-fleet-pwned-control
        rm -rf "$tmp"
}
trap 'rc=$?; cleanup; (exit $rc); _t_atexit' EXIT

peer() { "$POND_BOX_TOOL" exec "$PEER" -- "$@"; }
# remote ARGS...: pondctl -H root@worker ARGS... on the peer
remote() { peer env POND_REMOTE_PONDCTL="$PONDCTL" "$CLIENT_PONDCTL" -H root@worker "$@"; }
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>&1; }
# json_in EXPR: the same over the JSON document on stdin
json_in() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }
# spec ID COMMAND-JSON: a job spec on stdout
spec() {
        printf '{"job_id":"%s","tenant":"t","command":%s,"sandbox":{"profile":"%s","backend":"%s"}}\n' \
                "$1" "$2" untrusted-code-write "$BACKEND"
}

# --- the second box, and a link between the two
mkdir -p "$tmp/results"
if ! "$POND_BOX_TOOL" start "$PEER" --bind "$tmp" --bind "$build" --bind-ro "$POND_SRCDIR" >"$tmp/peer.log" 2>&1; then
        diag "$(cat "$tmp/peer.log")"
        bail_out "could not start the peer box $PEER"
fi
wpid=$("$POND_BOX_TOOL" init-pid "$POND_BOX") ppid=$("$POND_BOX_TOOL" init-pid "$PEER")
t_ok "a veth link between the worker's and the peer's network namespaces" \
        ip link add fleet0 netns "$wpid" type veth peer name fleet1 netns "$ppid"
in_box ip addr add "$W_ADDR/30" dev fleet0 && in_box ip link set fleet0 up
peer ip addr add "$P_ADDR/30" dev fleet1 && peer ip link set fleet1 up

# --- sshd on the worker, from a throwaway key pair; the peer's ssh knows only that host key
ssh-keygen -q -t ed25519 -N '' -C pond-fleet-client -f "$tmp/id_ed25519"
in_box mkdir -p "$FLEET" /run/sshd
in_box ssh-keygen -q -t ed25519 -N '' -C pond-fleet-host -f "$FLEET/host_key"
# shellcheck disable=SC2016 # the box's sh expands $1
in_box sh -c 'cat > "$1"' sh "$FLEET/authorized_keys" <"$tmp/id_ed25519.pub"
# OpenSSH's privilege separation user, which the box's /etc has not; and root's account not locked ("!"),
# which sshd refuses even for a key, but without a password ("*"). Both put back at cleanup.
in_box sh -c 'grep -q "^sshd:" /etc/passwd ||
        echo "sshd:x:74:65534:pond-fleet:/run/sshd:/usr/sbin/nologin" >>/etc/passwd'
in_box cp -p /etc/shadow "$FLEET/shadow.orig"
in_box sed -i 's/^root:!\**:/root:*:/' /etc/shadow
# shellcheck disable=SC2016 # the box's sh expands $1
in_box sh -c 'cat > "$1"' sh "$FLEET/sshd_config" <<EOF
ListenAddress $W_ADDR
HostKey $FLEET/host_key
AuthorizedKeysFile $FLEET/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
EOF
t_ok "the worker's sshd configuration is valid" in_box /usr/sbin/sshd -t -f "$FLEET/sshd_config"
t_ok "the worker's sshd runs" \
        in_box systemd-run -q --unit=pond-fleet-sshd.service /usr/sbin/sshd -D -e -f "$FLEET/sshd_config"
printf '%s %s\n' "$W_ADDR" "$(in_box cat "$FLEET/host_key.pub" | cut -d' ' -f1,2)" >"$tmp/known_hosts"
peer sh -c 'mkdir -p /root/.ssh && cat > /root/.ssh/config' <<EOF
Host worker
        HostName $W_ADDR
        IdentityFile $tmp/id_ed25519
        UserKnownHostsFile $tmp/known_hosts
        StrictHostKeyChecking yes
        BatchMode yes
        ConnectTimeout 10
        LogLevel ERROR
EOF
for _ in $(seq 100); do
        in_box ss -Hltn "sport = :22" | grep -q . && break
        sleep 0.1
done
t_ok "ssh from the peer to root@worker, host key checked" peer ssh root@worker true
in_box cat /etc/pond/keys/sign.pub >"$tmp/worker.pub"
peer "$CLIENT_PONDCTL" keygen --dir "$tmp/other-keys" >/dev/null

# --- the journal collector on the peer, the uploader on the worker (before any job: all of it goes)
peer mkdir -p /var/log/journal/remote
t_ok "systemd-journal-remote listens on the peer (http, port 19532)" \
        peer systemd-run -q --unit=pond-fleet-remote.service /lib/systemd/systemd-journal-remote \
        --listen-http="$P_ADDR:19532" --output=/var/log/journal/remote/
for _ in $(seq 100); do
        peer ss -Hltn "sport = :19532" | grep -q . && break
        sleep 0.1
done
t_ok "systemd-journal-upload on the worker sends to the peer" \
        in_box systemd-run -q --unit=pond-fleet-upload.service /lib/systemd/systemd-journal-upload \
        --url="http://$P_ADDR:19532" --save-state="$FLEET/upload.state"

# --- run -H: output streamed, the job's rc, the result verified here
id=$(new_id fleet-run)
mkdir -p "$tmp/run"
remote run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-write --pubkey "$tmp/worker.pub" \
        --into "$tmp/run" -- sh -c 'echo hello-fleet; echo err-fleet >&2; exit 3' >"$tmp/out" 2>"$tmp/err"
t_eq "run -H exits with the job's rc" 3 "$?"
t_eq "run -H: the job's stdout" hello-fleet "$(cat "$tmp/out")" || diag "$(cat "$tmp/err")"
t_like "run -H: the job's stderr" "err-fleet" "$(cat "$tmp/err")"
t_eq "the job ran on the worker" completed "$(result_field "$id" 'r["status"]')"
t_fail "the peer has no spool entry or result of it" peer test -e "/var/lib/pond/results/$id"
t_ok "run -H --into: the verified result stays on the peer" \
        peer "$CLIENT_PONDCTL" verify --pubkey "$tmp/worker.pub" --job-id "$id" "$tmp/run/$id"

# --- result -H: fetched, verified on the peer; tampering or another key fails that check
t_ok "result -H --into: fetched and verified" remote result --pubkey "$tmp/worker.pub" --into "$tmp/results" "$id"
t_ok "the fetched copy verifies with pondctl verify on the peer" \
        peer "$CLIENT_PONDCTL" verify --pubkey "$tmp/worker.pub" --job-id "$id" "$tmp/results/$id"
t_fail "result -H with another key than the worker's: does not verify" \
        remote result --pubkey "$tmp/other-keys/sign.pub" "$id"
python3 - "$tmp/results/$id/result.json" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
i = b.index(b'"completed"') + 1
b[i] ^= 0x20  # "completed" -> "Completed"
open(p, "wb").write(bytes(b))
EOF
t_fail "control: a byte flipped in the fetched result.json does not verify" \
        peer "$CLIENT_PONDCTL" verify --pubkey "$tmp/worker.pub" --job-id "$id" "$tmp/results/$id"
t_fail "result -H --into refuses to replace what is there" \
        remote result --pubkey "$tmp/worker.pub" --into "$tmp/results" "$id"
t_eq "result -H --json: result.json as verified" "$id" \
        "$(remote result --json --pubkey "$tmp/worker.pub" "$id" 2>/dev/null | json_in 'j["job_id"]')"

# --- submit - (the spec on stdin), status, logs -f, wait --json
id2=$(new_id fleet-submit)
# shellcheck disable=SC2016 # the job's sh expands $i
spec "$id2" '["sh","-c","for i in 1 2 3; do echo line-$i; sleep 0.2; done"]' |
        remote submit - >"$tmp/submit.out" 2>"$tmp/err"
t_eq "submit -H - prints the id" "$id2" "$(cat "$tmp/submit.out")" || diag "$(cat "$tmp/err")"
remote logs -f "$id2" >"$tmp/logs.out" 2>"$tmp/err"
t_eq "logs -H -f: every line, once, in order" "$(printf 'line-%s\n' 1 2 3)" "$(cat "$tmp/logs.out")"
remote wait --json --pubkey "$tmp/worker.pub" --into "$tmp/results" "$id2" >"$tmp/wait.json" 2>"$tmp/err"
t_eq "wait -H --json exits 0" 0 "$?"
t_eq "wait -H --json: verified, completed, the local copy" "True completed $tmp/results/$id2" \
        "$(json "$tmp/wait.json" 'str(j["verified"]) + " " + j["status"] + " " + j["result_dir"]')"
remote status --json "$id2" >"$tmp/status.json" 2>"$tmp/err"
t_eq "status -H --json: state, unit" "completed pond-job@$id2.service" \
        "$(json "$tmp/status.json" 'j["state"] + " " + j["unit"]')"
t_like "list -H --json has both jobs" "^2$" \
        "$(remote list --json --since 1h 2>/dev/null | json_in "sum(e['job_id'] in ('$id', '$id2') for e in j)")"

# --- cancel -H over the worker's bus, then wait -H: a signed "cancelled" result, exit 130
id3=$(new_id fleet-cancel)
spec "$id3" '["sh","-c","echo up; exec sleep 600"]' | remote submit - >/dev/null 2>"$tmp/err"
t_eq "submit -H of a long job" 0 "$?" || diag "$(cat "$tmp/err")"
state=
for _ in $(seq 300); do
        state=$(remote status --json "$id3" 2>/dev/null | json_in 'j["state"]')
        [ "$state" = running ] && in_box test -s "$POND_STATE/jobs/$id3/log/stdout" && break
        sleep 0.2
done
t_eq "status -H: the long job runs" running "$state"
t_ok "cancel -H stops its unit over the worker's bus" remote cancel "$id3"
remote wait -q --pubkey "$tmp/worker.pub" "$id3" 2>"$tmp/err"
t_eq "wait -H of the cancelled job exits 130" 130 "$?" || diag "$(cat "$tmp/err")"
t_eq "its signed result says cancelled" cancelled "$(result_field "$id3" 'r["status"]')"

# --- Ctrl-C on a terminal: SIGINT to wait -H's whole process group (setsid makes it one), its ssh children
# included (the wait has started: it catches SIGINT); wait cancels the job over a new connection (the old
# one died with its ssh) and exits 130 with the signed result. (`timeout` only keeps a broken cancel from
# holding the suite for the job's 300 s.)
id4=$(new_id fleet-sigint)
spec "$id4" '["sleep","300"]' | remote submit - >/dev/null 2>"$tmp/err"
# shellcheck disable=SC2016 # the peer's bash expands these
peer timeout 200 bash -c '
        POND_REMOTE_PONDCTL=$1 setsid "$2" -H root@worker wait -q --pubkey "$3" "$4" 2>"$5" &
        pid=$!
        # Ready once pondctl catches SIGINT (SigCgt): its handler goes in after the bus is connected.
        for _ in $(seq 600); do
                mask=$(sed -n "s/^SigCgt:\t*//p" "/proc/$pid/status" 2>/dev/null)
                [ -n "$mask" ] && (( 16#$mask & 2 )) && break
                sleep 0.1
        done
        kill -INT -- "-$pid"
        wait "$pid"' bash "$PONDCTL" "$CLIENT_PONDCTL" "$tmp/worker.pub" "$id4" "$tmp/sigint.err"
t_eq "wait -H interrupted with its ssh children: exits 130" 130 "$?" || diag "$(cat "$tmp/sigint.err")"
t_like "it cancelled the job" "Cancelling job $id4" "$(cat "$tmp/sigint.err")"
t_eq "the job's signed result says cancelled" cancelled "$(result_field "$id4" 'r["status"]')"

# --- no such job, bad ids and hostile words
remote status "no-such-job-$$" >/dev/null 2>&1
t_eq "status -H of an unknown job exits 4, through ssh" 4 "$?"
remote cancel "no-such-job-$$" >/dev/null 2>&1
t_eq "cancel -H of an unknown job exits 4" 4 "$?"
remote wait --pubkey "$tmp/worker.pub" "no-such-job-$$" >/dev/null 2>&1
t_eq "wait -H of an unknown job exits 4" 4 "$?"
remote status 'x;touch /tmp/pond-fleet-pwned' >/dev/null 2>&1
t_eq "status -H of an id with a ';': a usage error, before any ssh" 64 "$?"
spec "$(new_id fleet-quote)" '["true"]' |
        remote submit - --checkout '/nonexistent/a b;touch /tmp/pond-fleet-pwned' >/dev/null 2>&1
t_eq "submit -H with a hostile --checkout: refused by the worker (125)" 125 "$?"
t_fail "the hostile --checkout ran nothing on the worker" in_box test -e /tmp/pond-fleet-pwned
peer ssh root@worker echo '/nonexistent/a b;touch /tmp/pond-fleet-pwned-control' >/dev/null 2>&1
t_ok "control: the same words joined unquoted, as ssh joins them, run the payload" \
        in_box test -e /tmp/pond-fleet-pwned-control
remote -H '-oProxyCommand=touch /tmp/x' list >/dev/null 2>&1
t_eq "-H that ssh would read as an option: a usage error" 64 "$?"

# --- the worker's decision records on the collector
machine=$(in_box cat /etc/machine-id)
events=
for _ in $(seq 300); do
        events=$(peer journalctl -D /var/log/journal/remote -q -o cat --output-fields=POND_EVENT POND_JOB_ID="$id" \
                2>/dev/null | tr '\n' ' ')
        [[ "$events" == *signed* ]] && break
        sleep 0.2
done
t_like "collector: the job's records, accepted to signed" "accepted.*started.*exited.*signed" "$events"
t_eq "collector: they come from the worker's machine id" "$machine" \
        "$(peer journalctl -D /var/log/journal/remote -o json -n 1 POND_JOB_ID="$id" POND_EVENT=signed 2>/dev/null |
                json_in 'j["_MACHINE_ID"]')"
t_eq "collector: the record's rc and profile" "3 untrusted-code-write" \
        "$(peer journalctl -D /var/log/journal/remote -o json -n 1 POND_JOB_ID="$id" POND_EVENT=exited 2>/dev/null |
                json_in 'j["POND_RC"] + " " + j["POND_PROFILE"]')"
t_eq "control: the peer's own journal has no record of the job" "" \
        "$(peer journalctl -q -o cat POND_JOB_ID="$id" 2>/dev/null)"

# --- figures for docs/operations.md (diagnostics only, nothing asserted on time)
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
t0=$(date +%s%N); remote status --json "$id" >/dev/null 2>&1; status_ms=$(ms "$t0")
t0=$(date +%s%N); remote cancel "no-such-job-$$" >/dev/null 2>&1; bus_ms=$(ms "$t0")
t0=$(date +%s%N)
remote run -q --backend "$BACKEND" --profile untrusted-code-write --pubkey "$tmp/worker.pub" -- true >/dev/null 2>&1
remote_ms=$(ms "$t0")
t0=$(date +%s%N); pond run -q --backend "$BACKEND" --profile untrusted-code-write -- true >/dev/null 2>&1
local_ms=$(ms "$t0")
diag "status -H (ssh + worker's pondctl): $status_ms ms; cancel -H of an unknown job (ssh + bus): $bus_ms ms" \
        "run -H -- true: $remote_ms ms; the same run on the worker itself: $local_ms ms"

# --- nothing left on the worker by the jobs
t_clean "nothing left after the run -H job" "$id"
t_clean "nothing left after the cancelled job" "$id3"
t_clean "nothing left after the interrupted job" "$id4"
done_testing
