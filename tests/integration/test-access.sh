#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-access.sh: who may use pond (docs/operations.md, "Who may use pond"; docs/threat-model.md, "Members of
# the group pond"), with real users in the box, real polkitd and real pond-job@ID units under
# POND_TEST_BACKEND. alice (group pond) runs a job to a verified result, reads her own result and log, and
# cancels her own job; bob (group pond) can neither cancel nor read alice's job (root can: the control);
# mallory (not in the group) is refused at submit and cannot start a job unit; alice cannot start other
# units, restart her own job or create transient units (root can start the same unit: the control), may
# not use profile none or a checkout that is not hers, and cannot pass off a second name of an inbox file as
# a submission. A member's job left without a result is never run again, least of all as root's; a member
# cannot stop root's job while its unit is still activating; a job stopped before its supervisor ran is
# signed as cancelled before it started. A job whose checkout its member edits while it runs gets no
# input_sha and says input_changed (an untouched one has its input_sha: the control). A world-readable or
# non-root signing key stops every job with the reason in the journal (a restored key runs the same job: the
# control).
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

KEY=/etc/pond/keys/sign.key
TARGET=pond-test-access-target.service
# the key's mode and owner back, the test unit gone, then lib.sh's own exit handler, with the script's status
restore() {
        # shellcheck disable=SC2016 # expanded by the box's sh
        in_box sh -c 'chown root:root "$1" "$3" && chmod 0600 "$1" "$3"; rm -f "/etc/systemd/system/$2";
                rm -rf /etc/systemd/system/pond-job@*.service.d; systemctl daemon-reload' sh "$KEY" "$TARGET" \
                /etc/pond/keys/seal.key
}
trap 'rc=$?; restore; (exit "$rc"); _t_atexit' EXIT

# as USER CMD...: CMD in the box as USER, with their groups (setpriv: the box has no PAM session for su)
as() {
        local user=$1; shift
        # shellcheck disable=SC2016 # expanded by the box's sh
        in_box sh -c 'u=$1; shift; exec setpriv --reuid "$u" --regid "$(id -g "$u")" --init-groups -- "$@"' \
                sh "$user" "$@"
}
# pond_as USER ARGS...: pondctl as USER, from their home
pond_as() {
        local user=$1; shift
        # shellcheck disable=SC2016 # expanded by the box's sh
        in_box sh -c 'u=$1; shift; cd "/home/$u" &&
                exec setpriv --reuid "$u" --regid "$(id -g "$u")" --init-groups -- "$@"' sh "$user" "$PONDCTL" "$@"
}
# spec_as USER ID COMMAND: a spec file in USER's home for job ID (profile untrusted-code-read, USER's checkout)
spec_as() {
        # shellcheck disable=SC2016 # expanded by the box's sh
        as "$1" sh -c 'printf "{\"job_id\":\"%s\",\"tenant\":\"local\",\"checkout\":\"/home/%s/co\",\"command\":[\"sh\",\"-c\",\"%s\"],
\"sandbox\":{\"profile\":\"untrusted-code-read\",\"backend\":\"%s\"}}\n" "$2" "$1" "$3" "$4" >"/home/$1/$2.json"' \
                sh "$1" "$2" "$3" "$BACKEND"
}

# The users: two members, one outsider, each with a checkout of their own.
# shellcheck disable=SC2016 # expanded by the box's sh
in_box sh -c 'for u in alice bob mallory; do id "$u" >/dev/null 2>&1 || useradd -m "$u"; done
        usermod -aG pond alice && usermod -aG pond bob &&
        for u in alice bob mallory; do mkdir -p "/home/$u/co" && echo "hello from $u" >"/home/$u/co/f" &&
                chown -R "$u:" "/home/$u"; done' || bail_out "cannot create the test users"

# --- alice: a job to a verified result, her own result and log
a1=$(new_id acc-a)
OUT=$(pond_as alice run --quiet --job-id "$a1" --backend "$BACKEND" --profile untrusted-code-read \
        --checkout /home/alice/co -- cat /workspace/f 2>&1)
t_eq "alice runs a job to its end (rc 0)" 0 "$?"
t_like "alice's job saw her checkout" "hello from alice" "$OUT"
t_eq "the signed result names alice as the submitter" "alice $(in_box id -u alice)" \
        "$(result_field "$a1" 'r["submitter"]["user"] + " " + str(r["submitter"]["uid"])')"
t_ok "alice verifies her result with the world-readable public key" pond_as alice result "$a1"
t_ok "alice reads her own result.json" as alice cat "$POND_STATE/results/$a1/result.json"
t_like "alice reads her own job's log" "hello from alice" "$(pond_as alice logs "$a1" 2>&1)"
t_like "alice's status of her job" "completed" "$(pond_as alice status "$a1" 2>&1)"

# --- alice edits her checkout while her job runs (and puts the bytes back): the result gives no input_sha
# and says input_changed. The control: her first job, untouched, has its input_sha.
t_eq "control: alice's untouched job has an input_sha and input_changed false" "True False" \
        "$(result_field "$a1" 'str(r["input_sha"] is not None) + " " + str(r["input_changed"])')"
a8=$(new_id acc-edit)
spec_as alice "$a8" "sleep 3; cat /workspace/f"
pond_as alice submit "/home/alice/$a8.json" >/dev/null
wait_running "$a8" || t_not_ok "alice's job is running" "it did not start within ~20 s"
as alice sh -c 'echo "edited by alice" >/home/alice/co/f && echo "hello from alice" >/home/alice/co/f'
pond_as alice wait "$a8" >/dev/null 2>&1
t_eq "alice's job whose checkout she edited under it completes" completed "$(result_field "$a8" 'r["status"]')"
t_eq "its result gives no input_sha, and says input_changed" "None True" \
        "$(result_field "$a8" 'str(r["input_sha"]) + " " + str(r["input_changed"])')"
t_ok "alice verifies that result" pond_as alice result "$a8"

# --- bob: not alice's result, not her log, not her spec (root can: the control)
t_fail "bob cannot read alice's result.json" as bob cat "$POND_STATE/results/$a1/result.json"
t_fail "bob cannot read alice's result through pondctl" pond_as bob result "$a1"
OUT=$(pond_as bob status "$a1" 2>&1)
t_like "bob's status of alice's job says it is not his (exit 1)" "^1 .*not yours" "$? $OUT"
t_fail "bob cannot read alice's log through pondctl" pond_as bob logs "$a1"
t_fail "bob cannot read alice's log" as bob cat "$POND_STATE/jobs/$a1/log/stdout"
t_fail "bob cannot read alice's spec" as bob cat "$POND_STATE/jobs/$a1/job.json"
t_ok "control: root reads alice's result and log" in_box cat "$POND_STATE/results/$a1/result.json" \
        "$POND_STATE/jobs/$a1/log/stdout"
b1=$(new_id acc-b)
t_ok "control: bob runs and reads a job of his own" pond_as bob run --quiet --job-id "$b1" --backend "$BACKEND" \
        --profile untrusted-code-read --checkout /home/bob/co -- cat /workspace/f

OUT=$(pond_as alice list 2>&1)
t_like "alice's list has her job" "^$a1 completed" "$OUT"
t_eq "alice's list has none of bob's" "" "$(grep -F "$b1" <<<"$OUT")"
t_like "bob's list has his own job" "^$b1 completed" "$(pond_as bob list 2>&1)"

# --- cancelling: bob cannot stop alice's running job, alice can
a2=$(new_id acc-a)
spec_as alice "$a2" "echo running; sleep 300"
t_ok "alice submits a long job" pond_as alice submit "/home/alice/$a2.json"
wait_running "$a2" || t_not_ok "alice's long job is running" "it did not start within ~20 s"
OUT=$(pond_as bob cancel "$a2" 2>&1)
t_eq "bob cannot cancel alice's job (pondctl cancel: exit 1)" 1 "$?"
t_like "polkit denied it" "Access denied|[Aa]uthentication" "$OUT"
t_fail "bob cannot stop alice's job (systemctl stop)" as bob systemctl stop "pond-job@$a2.service"
t_fail "alice cannot restart her own job (only start and stop are granted)" \
        as alice systemctl restart "pond-job@$a2.service"
t_eq "alice's job still runs after bob's attempts" active "$(in_box systemctl is-active "pond-job@$a2.service")"
# exec goes through the job's console socket (RUNDIR/console/ID.sock, 0600, its submitter's; SO_PEERCRED)
t_eq "alice execs into her own running job (uid 1000 inside)" 1000 "$(pond_as alice exec "$a2" -- id -u 2>&1)"
t_fail "bob cannot exec into alice's job" pond_as bob exec "$a2" -- id -u
t_eq "control: root execs into alice's job" 1000 "$(pond exec "$a2" -- id -u 2>&1)"
t_ok "alice cancels her own job" pond_as alice cancel "$a2"
OUT=$(pond_as alice wait "$a2" 2>&1)
t_eq "alice's wait of her cancelled job: exit 130" 130 "$?"
t_eq "alice's cancelled job's result says cancelled" cancelled "$(result_field "$a2" 'r["status"]')"
b2=$(new_id acc-b)
spec_as bob "$b2" "sleep 300"
pond_as bob submit "/home/bob/$b2.json" >/dev/null
wait_running "$b2" || t_not_ok "bob's long job is running" "it did not start within ~20 s"
t_fail "alice cannot cancel bob's job either" pond_as alice cancel "$b2"
t_ok "control: root cancels bob's job" pond cancel "$b2"
wait_gone "$b2" || true

# --- root's job: a member's inbox file under its id does not make it theirs (the owner record says root)
r1=$(new_id acc-r)
# shellcheck disable=SC2016 # expanded by the box's sh
in_box sh -c 'printf "{\"job_id\":\"%s\",\"tenant\":\"local\",\"command\":[\"sleep\",\"300\"],
\"sandbox\":{\"profile\":\"untrusted-code-read\",\"backend\":\"%s\"}}\n" "$1" "$2" >"/root/$1.json"' sh "$r1" "$BACKEND"
pond submit "/root/$r1.json" >/dev/null
wait_running "$r1" || t_not_ok "root's long job is running" "it did not start within ~20 s"
t_eq "root's job has an owner record naming root" root "$(in_box cat "$POND_STATE/owners/$r1")"
# shellcheck disable=SC2016 # expanded by the box's sh
as bob sh -c 'echo "{}" >"$1"' sh "$POND_STATE/inbox/$r1.json"
t_fail "bob cannot stop root's job by putting an inbox file under its id" as bob systemctl stop "pond-job@$r1.service"
t_eq "root's job still runs" active "$(in_box systemctl is-active "pond-job@$r1.service")"
t_ok "control: root cancels its own job" pond cancel "$r1"
wait_gone "$r1" || true
in_box rm -f "$POND_STATE/inbox/$r1.json"

# --- a member's job that ended without a result (pruned from results/, or never written: a crash, a full
# disk): a new inbox file of hers under its id gives her nothing. Its unit is not hers to start (the id is
# taken), and when it is started (root, a scheduler) the old spool entry is never run again, least of all as
# root's: the job ends signed, failed, hers.
a6=$(new_id acc-rerun)
pond_as alice run --quiet --job-id "$a6" --backend "$BACKEND" --profile untrusted-code-read \
        --checkout /home/alice/co -- true >/dev/null 2>&1
wait_gone "$a6" || true
in_box rm -rf "$POND_STATE/results/$a6"
spec_as alice "$a6" "echo rerun-ran"
as alice cp "/home/alice/$a6.json" "$POND_STATE/inbox/$a6.json"
t_fail "alice cannot start her old job's unit again (its id is taken)" as alice systemctl start "pond-job@$a6.service"
in_box systemctl start "pond-job@$a6.service" >/dev/null 2>&1
wait_gone "$a6" || true
t_like "started again by root, the old job is not run: failed, accepted before" "^failed: .*accepted before" \
        "$(result_field "$a6" 'r["status"] + ": " + r["reason"]')"
t_eq "the result names alice, never root" alice "$(result_field "$a6" 'r["submitter"]["user"]')"
t_fail "the new spec under the old id never ran" in_box grep -qr rerun-ran "$POND_STATE/jobs/$a6/log"
OUT=$(in_box systemctl start "pond-job@$a6.service" 2>&1)
t_like "a later start is refused: the job has ended" "has ended" \
        "$(in_box journalctl -q -u "pond-job@$a6.service" -o cat | tail -n 20)"

# --- the activation window: a root job whose unit is starting (made 5 s long here: ExecStartPre= sleeps in a
# drop-in of that one unit) has its owner record from its submission on, so a member's inbox file under its
# id lets her stop nothing; a member's own job stopped in that window is signed as cancelled before it
# started, hers.
slow() { # ID: the drop-in
        # shellcheck disable=SC2016 # expanded by the box's sh
        in_box sh -c 'mkdir -p "/etc/systemd/system/pond-job@$1.service.d" &&
                printf "[Service]\nExecStartPre=/bin/sleep 5\n" >"/etc/systemd/system/pond-job@$1.service.d/slow.conf" &&
                systemctl daemon-reload' sh "$1"
}
r2=$(new_id acc-window)
slow "$r2"
# shellcheck disable=SC2016 # expanded by the box's sh
in_box sh -c 'printf "{\"job_id\":\"%s\",\"tenant\":\"local\",\"command\":[\"true\"],
\"sandbox\":{\"profile\":\"untrusted-code-read\",\"backend\":\"%s\"}}\n" "$1" "$2" >"/root/$1.json"' sh "$r2" "$BACKEND"
pond submit "/root/$r2.json" >/dev/null 2>&1 &
for _ in $(seq 100); do
        [ "$(in_box systemctl show -P ActiveState "pond-job@$r2.service")" = activating ] && break
        sleep 0.05
done
t_eq "root's job is activating (its supervisor not yet run)" activating \
        "$(in_box systemctl show -P ActiveState "pond-job@$r2.service")"
# shellcheck disable=SC2016 # expanded by the box's sh
as bob sh -c 'echo "{}" >"$1"' sh "$POND_STATE/inbox/$r2.json"
t_fail "bob cannot stop root's activating job with an inbox file under its id" \
        as bob systemctl stop "pond-job@$r2.service"
wait
wait_gone "$r2" || true
t_eq "root's job ran to its end, root's" "completed root" "$(result_field "$r2" 'r["status"] + " " + r["submitter"]["user"]')"
a7=$(new_id acc-window)
slow "$a7"
spec_as alice "$a7" "true"
pond_as alice submit "/home/alice/$a7.json" >/dev/null 2>&1 &
for _ in $(seq 100); do
        [ "$(in_box systemctl show -P ActiveState "pond-job@$a7.service")" = activating ] && break
        sleep 0.05
done
t_ok "alice stops her own job in that window" as alice systemctl stop "pond-job@$a7.service"
wait
wait_gone "$a7" || true
t_like "her job is signed as cancelled before it started, hers" "^cancelled alice: cancelled before it started" \
        "$(result_field "$a7" 'r["status"] + " " + r["submitter"]["user"] + ": " + r["reason"]')"
in_box sh -c 'rm -rf /etc/systemd/system/pond-job@*.service.d && systemctl daemon-reload'

# --- mallory, not in the group: refused at submit, and no job unit for her
m1=$(new_id acc-m)
OUT=$(pond_as mallory run --quiet --job-id "$m1" --backend "$BACKEND" --profile untrusted-code-read \
        --checkout /home/mallory/co -- true 2>&1)
t_eq "mallory's submission is refused (125)" 125 "$?"
t_like "the refusal says who may submit" "group pond" "$OUT"
t_eq "no inbox file of mallory's" absent "$(path_state "$POND_STATE/inbox/$m1.json")"
t_fail "mallory cannot start a job unit" as mallory systemctl start "pond-job@$m1.service"
t_fail "mallory cannot write the spool either" as mallory mkdir "$POND_STATE/jobs/$m1"

# --- alice cannot use systemd beyond her own job (root can start the same unit: the control)
# shellcheck disable=SC2016 # expanded by the box's sh
in_box sh -c 'printf "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n" >"/etc/systemd/system/$1" &&
        systemctl daemon-reload' sh "$TARGET"
t_fail "alice cannot start another unit" as alice systemctl start "$TARGET"
t_fail "alice cannot start a sidecar unit (pond-egress@)" as alice systemctl start "pond-egress@$a1.service"
t_fail "alice cannot start a job unit with no inbox file of hers" as alice systemctl start "pond-job@$(new_id acc-x).service"
t_fail "alice cannot create a transient unit" as alice systemd-run --no-block /bin/true
t_fail "alice cannot write the spool (root's) to submit around the inbox" as alice mkdir "$POND_STATE/jobs/$(new_id acc-x)"
t_ok "control: root starts that unit" in_box systemctl start "$TARGET"

# --- what alice may submit: not profile none, not a checkout that is not hers, not a second name of a file
a3=$(new_id acc-a)
OUT=$(pond_as alice run --quiet --job-id "$a3" --backend "$BACKEND" --profile none --checkout /home/alice/co -- true 2>&1)
t_eq "alice's profile none is refused (125)" 125 "$?"
t_like "the refusal names the policy" "may not use profile none.*access.json" "$(result_field "$a3" 'r["reason"]')"
a4=$(new_id acc-a)
OUT=$(pond_as alice run --quiet --job-id "$a4" --backend "$BACKEND" --profile untrusted-code-read \
        --checkout /home/bob -- ls /workspace 2>&1)
t_eq "alice's job on bob's home is refused (125)" 125 "$?"
t_like "the refusal says whose it is" "not by the submitter alice" "$(result_field "$a4" 'r["reason"]')"
a5=$(new_id acc-a)
spec_as alice "$a5" "true"
as alice cp "/home/alice/$a5.json" "$POND_STATE/inbox/$a5.json"
if as alice ln "$POND_STATE/inbox/$a5.json" "/home/alice/$a5.link" 2>/dev/null; then
        as alice systemctl start "pond-job@$a5.service"
        wait_gone "$a5" || true
        t_like "an inbox file with a second name is refused" "one name" "$(result_field "$a5" 'r["reason"]')"
else
        t_skip "an inbox file with a second name is refused" "the box's /home and /var/lib are separate file systems"
fi

# --- the signing key: world-readable, or not root's, stops every job; restored, the same job runs
for bad in "chmod 0644" "chown alice"; do
        k=$(new_id acc-k)
        in_box sh -c "$bad \"\$1\"" sh "$KEY"
        OUT=$(pond run --quiet --job-id "$k" --backend "$BACKEND" --profile untrusted-code-read -- true 2>&1)
        t_fail "a job under a signing key after '$bad' does not run" test "$(result_field "$k" 'r["status"]' 2>/dev/null)" = completed
        t_eq "no result is signed with that key ($bad)" absent "$(path_state "$POND_STATE/results/$k")"
        t_like "the journal of the job says why ($bad)" "Refusing the key $KEY" \
                "$(in_box journalctl -q -u "pond-job@$k.service" -o cat)"
        # shellcheck disable=SC2016 # expanded by the box's sh
        in_box sh -c 'chown root:root "$1" && chmod 0600 "$1"' sh "$KEY"
done
# The sealing key, which the broker gets as a credential: a job with credentials is refused with the reason.
SEAL=/etc/pond/keys/seal.key
for mode in 0644 0600; do
        k=$(new_id acc-s)
        # shellcheck disable=SC2016 # expanded by the box's sh
        sealed=$(in_box sh -c 'printf %s sk-test | "$1" seal --to /etc/pond/keys/seal.pub --job-id "$2"' sh "$PONDCTL" "$k")
        # shellcheck disable=SC2016 # expanded by the box's sh
        in_box sh -c 'chmod "$2" "$1" && printf "%s\n" "$3" >/root/$4.json' sh "$SEAL" "$mode" \
                "{\"job_id\":\"$k\",\"tenant\":\"t\",\"command\":[\"true\"],\"limits\":{\"max_cost_cents\":1},
\"sandbox\":{\"profile\":\"untrusted-code-write\",\"backend\":\"$BACKEND\"},
\"credentials\":[{\"name\":\"anthropic\",\"upstream\":\"https://allowed.test:9443\",
\"inject\":{\"header\":\"x-api-key\",\"format\":\"{key}\"},\"allow\":[\"GET /v1/models\"],
\"env\":{\"key\":\"ANTHROPIC_API_KEY\",\"base_url\":\"ANTHROPIC_BASE_URL\"},\"sealed\":\"$sealed\"}]}" "$k"
        pond run --quiet --spec "/root/$k.json" >/dev/null 2>&1
        if [ "$mode" = 0644 ]; then
                t_like "a world-readable seal.key refuses a job with credentials" "sealing key is refused" \
                        "$(result_field "$k" 'r["status"] + ": " + r["reason"]')"
        else
                t_eq "control: with seal.key 0600 the same job completes" completed "$(result_field "$k" 'r["status"]')"
        fi
done

k=$(new_id acc-k)
t_ok "control: with the key root's and 0600 again, a job completes" \
        pond run --quiet --job-id "$k" --backend "$BACKEND" --profile untrusted-code-read -- true
t_eq "the key directory and public key are world-readable, the secret is not" "755 644 600" \
        "$(in_box stat -c %a /etc/pond/keys /etc/pond/keys/sign.pub "$KEY" | tr '\n' ' ' | sed 's/ $//')"

for id in "$a1" "$a2" "$b1" "$a3" "$a4" "$r1" "$a6" "$r2" "$a7"; do t_clean "nothing of $id is left" "$id"; done
done_testing
