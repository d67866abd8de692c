#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-broker.sh: sealed model credentials through real pond-job@ID jobs: the job calls the model API
# through its broker with a dummy key; the upstream (a test HTTPS server with a CA only the broker
# trusts) sees the real key; the job never does. Credentials for another job or tampered are refused;
# paths and methods outside the allowlist are refused; streamed responses are metered; the cost ceiling
# cancels the job and lands in the result.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

UP=/tmp/pond-broker-upstream
REAL_KEY="sk-real-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" down "$UP" >/dev/null 2>&1
in_box rm -rf "$UP"
in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" up "$UP" >/dev/null 2>&1 || bail_out "cannot set up the upstream"
in_box sh -c "cd $UP && ip netns exec pond-up python3 $POND_SRCDIR/tests/unit/broker-e2e-upstream.py 9443 srv.crt srv.key \
        $UP/requests.log 198.51.100.2 </dev/null >/dev/null 2>&1 & echo \$! >> $UP/pids
        cp $UP/ca.crt /etc/pond/broker-test-ca.crt
        echo 'POND_BROKER_ARGS=--ca-file /etc/pond/broker-test-ca.crt' > /etc/pond/broker.env
        grep -q allowed.test /etc/hosts || echo '198.51.100.2 allowed.test' >> /etc/hosts"
trap 'in_box sh -c "rm -f /etc/pond/broker.env /etc/pond/broker-test-ca.crt; sed -i /allowed.test/d /etc/hosts"
      in_box "$POND_SRCDIR/tests/integration/egress-upstream.sh" down "$UP" >/dev/null 2>&1' EXIT
for _ in $(seq 50); do in_box ip netns exec pond-up ss -ltn | grep -q 9443 && break; sleep 0.1; done

# spec ID SEALED MAX_CENTS [MEMBERS]: a job spec file in the box with one Anthropic-shaped credential (and
# MEMBERS, more top-level members)
spec() {
        local f
        f=$(in_box mktemp /var/tmp/pond-spec.XXXXXX)
        in_box sh -c "cat > $f" <<JSON
{"job_id":"$1","tenant":"t","command":["true"],"sandbox":{"profile":"untrusted-code-write","backend":"$BACKEND"},
 "limits":{"max_cost_cents":$3},
 "credentials":[{"name":"anthropic","upstream":"https://allowed.test:9443",
   "inject":{"header":"x-api-key","format":"{key}"},
   "allow":["POST /v1/messages","GET /v1/models"],
   "env":{"key":"ANTHROPIC_API_KEY","base_url":"ANTHROPIC_BASE_URL"},"sealed":"$2"}]${4:+,$4}}
JSON
        echo "$f"
}
seal() { in_box sh -c "printf %s '$REAL_KEY' | $PONDCTL seal --to /etc/pond/keys/seal.pub --job-id $1"; }

CLIENT='
import json, os, sys, urllib.request, urllib.error
base, key = os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"]
def call(method, path, body=None, stream=False):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"x-api-key": key, "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
msg = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
'

id=$(new_id broker)
f=$(spec "$id" "$(seal "$id")" 100)
run_job "$id" --spec "$f" -- python3 -c "$CLIENT"'
print("plain", *call("POST", "/v1/messages", msg))
print("stream", call("POST", "/v1/messages", dict(msg, stream=True))[1].count("event:"))
print("badpath", call("POST", "/v1/complete", msg)[0])
print("badmethod", call("DELETE", "/v1/messages")[0])
print("env-has-real", any("'"$REAL_KEY"'" in v for v in os.environ.values()))
print("base", base.split("/")[-1])
import subprocess
print("procs", subprocess.run(["ps", "-e", "-o", "comm="], capture_output=True, text=True).stdout.split())'
t_eq "job succeeds" 0 "$RC"
t_like "a real client reaches the upstream through BASE_URL" '^plain 200 .*"hi"' "$(grep '^plain' <<<"$OUT")"
t_eq "streamed (SSE) response arrives" "stream 5" "$(grep '^stream' <<<"$OUT")"
t_eq "path outside the allowlist refused" "badpath 403" "$(grep '^badpath' <<<"$OUT")"
t_eq "method outside the allowlist refused" "badmethod 403" "$(grep '^badmethod' <<<"$OUT")"
t_eq "the real key is not in the job's environment" "env-has-real False" "$(grep '^env-has-real' <<<"$OUT")"
t_eq "BASE_URL names the credential" "base anthropic" "$(grep '^base ' <<<"$OUT")"
t_like "the broker's process is invisible from the job" "^procs " "$(grep '^procs' <<<"$OUT")"
t_fail "no pond-broker among the job's processes" grep -q pond-broker <<<"$(grep '^procs' <<<"$OUT")"
t_eq "the upstream saw the real key" "$REAL_KEY" \
        "$(in_box python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["headers"].get("x-api-key", json.loads(open(sys.argv[1]).readline())["headers"].get("X-Api-Key","")))' "$UP/requests.log")"
t_fail "the real key appears nowhere in the job's output" grep -qF "$REAL_KEY" <<<"$OUT"
t_fail "the real key appears nowhere in the journal" sh -c "$POND_BOX_TOOL exec $POND_BOX -- journalctl -q -o cat | grep -qF '$REAL_KEY'"
t_fail "the real key appears nowhere in the result" in_box grep -rqF "$REAL_KEY" "$POND_STATE/results/$id"
t_eq "usage metered (streamed and plain), recorded in the result" "200 100" \
        "$(result_field "$id" '"%d %d" % (r["broker"]["input_tokens"], r["broker"]["output_tokens"])')"
t_clean "nothing left after a broker job" "$id"
t_eq "no broker unit left" "" "$(in_box systemctl list-units --all --plain --no-legend "pond-broker@$id.service")"

# --- the harness's home: its config file gets the broker's URL and the dummy key, the same the environment
# has, and a client reading only that file reaches the upstream
id=$(new_id brokerhome)
f=$(spec "$id" "$(seal "$id")" 100 '"home_files":[{"path":".tool/config.json",
  "content":"{\"url\":\"{{BROKER_URL:anthropic}}\",\"key\":\"{{DUMMY_KEY:anthropic}}\",\"id\":\"{{JOB_ID}}\"}"}]')
run_job "$id" --spec "$f" -- python3 -c "$CLIENT"'
c = json.load(open(os.environ["HOME"] + "/.tool/config.json"))
print("url", c["url"] == base, c["url"].split("/")[-1])
print("key", c["key"] == key, c["key"].startswith("pond-dummy-"))
print("id", c["id"] == os.environ["POND_JOB_ID"])
base, key = c["url"], c["key"]
print("call", call("POST", "/v1/messages", msg)[0])'
t_eq "home job with credentials succeeds" 0 "$RC"
t_eq "{{BROKER_URL:anthropic}} is the job's base URL for the credential" "url True anthropic" "$(grep '^url' <<<"$OUT")"
t_eq "{{DUMMY_KEY:anthropic}} is the job's dummy key" "key True True" "$(grep '^key' <<<"$OUT")"
t_eq "{{JOB_ID}} is the job's id" "id True" "$(grep '^id' <<<"$OUT")"
t_eq "a client configured only by the home file reaches the upstream" "call 200" "$(grep '^call' <<<"$OUT")"
t_fail "the real key is not in the home file's job output" grep -qF "$REAL_KEY" <<<"$OUT"
t_clean "nothing left after a broker job with a home" "$id"
id=$(new_id brokerhomebad)
f=$(spec "$id" "$(seal "$id")" 100 '"home_files":[{"path":"k","content":"{{DUMMY_KEY:openai}}"}]')
run_job "$id" --spec "$f" -- true
t_eq "a placeholder naming no credential of the job: refused" 125 "$RC"
t_like "the refusal names the field" "home_files\[0\]\.content: \{\{DUMMY_KEY:openai\}\} names no credential" "$OUT"

# --- sealed for another job, or tampered: the broker does not start, the job does not run
id=$(new_id other)
f=$(spec "$id" "$(seal "not-$id")" 100)
run_job "$id" --spec "$f" -- true
t_eq "a credential sealed for another job id: the job is refused, it does not run" 125 "$RC"
t_eq "the result says refused" refused "$(result_field "$id" 'r["status"]')"
t_eq "no invented exit" "(None, None)" "$(result_field "$id" 'r["exit"]["rc"], r["exit"]["signal"]')"
t_like "the reason is recorded" "credential does not open" "$(result_field "$id" 'r["reason"]')"
t_like "the broker says why" "job" "$(in_box journalctl -q -o cat -u "pond-broker@$id.service" | grep -i refused)"
t_clean "nothing left after a refused credential" "$id"
id=$(new_id tamper)
sealed=$(seal "$id")
c=${sealed:20:1}; [ "$c" = A ] && c=B || c=A   # another base64 letter, whatever the blob had there
f=$(spec "$id" "${sealed:0:20}$c${sealed:21}" 100)
run_job "$id" --spec "$f" -- true
t_eq "a tampered sealed blob: the job is refused, it does not run" 125 "$RC"
id=$(new_id nobudget)
f=$(spec "$id" "$(seal "$id")" 1)
in_box sed -i 's/"max_cost_cents":1/"max_cost_cents":0/' "$f"
run_job "$id" --spec "$f" -- true
t_eq "credentials without a budget are refused" 125 "$RC"

# --- the cost ceiling: refused before it is crossed, the job cancelled, cost and reason in the result
id=$(new_id ceiling)
f=$(spec "$id" "$(seal "$id")" 1)
run_job "$id" --spec "$f" -- python3 -c "$CLIENT"'
import time
print("big", call("POST", "/v1/messages", dict(msg, max_tokens=4000))[0])
sys.stdout.flush()
time.sleep(20)
print("still running")'
t_eq "the request that would cross the ceiling is refused (402)" "big 402" "$(grep '^big' <<<"$OUT")"
t_eq "the job is cancelled" 130 "$RC"
t_like "the result says why" "cost ceiling" "$(result_field "$id" 'r["reason"]')"
t_eq "the result records the ceiling" True "$(result_field "$id" 'r["broker"]["ceiling_hit"]')"
t_clean "nothing left after the ceiling" "$id"
done_testing
