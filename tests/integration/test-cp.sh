#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-cp.sh: `pondctl cp` through the job's init (docs/job-spec.md, "Copying files"; docs/threat-model.md, "The
# job's init") under POND_TEST_BACKEND: a put lands in the staged workspace (a command in the job reads it,
# sha256 the same), owned by the job's user, with the local file's mode or --mode; a get gives it back
# byte for byte (a 1 MiB random file, a small one, one the payload wrote), to a file or stdout; the job's
# home and /tmp are writable roots too; the source checkout on the host does not change; each copy is in
# the journal with its sha256. Controls that must fail: a path outside the writable roots (/etc/passwd put
# and get, /workspace/../etc/passwd), a symbolic link the payload planted in /workspace, at the end or as
# a directory (put does not write through it, get does not read through it), a file beyond 64 MiB either
# way, a directory either way, a job that is not running, a profile without the job's init.
# Usage: run by meson (suite integration) as root on a systemd host, or with POND_BOX=NAME.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

state() { pond status "$1" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
sha() { in_box sha256sum "$1" | cut -d' ' -f1; }
# in_job ID CMD...: CMD's output in the job
in_job() { local id=$1; shift; pond exec "$id" -- "$@" 2>&1; }

src=$(in_box mktemp -d /var/tmp/pond-cp-src.XXXXXX)
loc=$(in_box mktemp -d /var/tmp/pond-cp-local.XXXXXX)
in_box sh -c "echo keep > $src/keep && mkdir $src/sub && echo deep > $src/sub/deep && chown -R 4242:4242 $src"
listing="cd $src && find . -printf '%p %m %U %s %l\n' | sort && find . -type f -exec sha256sum {} + | sort"
before=$(in_box sh -c "$listing")
in_box sh -c "printf 'hello\n' > $loc/small && chmod 640 $loc/small && head -c 1048576 /dev/urandom > $loc/big &&
              truncate -s 67108865 $loc/huge && mkdir $loc/dir"

id=$(new_id cp)
# the payload writes a file, plants links to /etc and makes a directory, a file beyond the maximum (sparse)
# shellcheck disable=SC2016 # the job's sh's
payload='echo from-payload > /workspace/made && ln -s /etc/passwd /workspace/evil && ln -s /etc /workspace/etcdir &&
mkdir /workspace/d && truncate -s 67108865 /tmp/huge && echo ready; exec sleep 300'
cmd=$(python3 -c 'import json,sys; print(json.dumps(["sh", "-c", sys.argv[1]]))' "$payload")
printf '{"job_id":"%s","tenant":"t","command":%s,"checkout":"%s",%s}\n' "$id" "$cmd" "$src" \
        "\"sandbox\":{\"profile\":\"untrusted-code-write\",\"backend\":\"$BACKEND\"}" | in_box "$PONDCTL" submit - >/dev/null
for _ in $(seq 600); do
        pond logs "$id" 2>/dev/null | grep -q '^ready' && break
        sleep 0.1
done
t_eq "the job runs" "running" "$(state "$id")"

# put, read inside, get back
t_ok "put a small file" pond cp "$loc/small" "$id:/workspace/x"
t_eq "... a command in the job reads it (sha256)" "$(sha "$loc/small")  /workspace/x" \
        "$(in_job "$id" sha256sum /workspace/x)"
t_eq "... owned by the job's user, with the local file's mode" "1000 640" "$(in_job "$id" stat -c '%u %a' /workspace/x)"
t_ok "put a 1 MiB random file" pond cp "$loc/big" "$id:/workspace/sub/big"
t_eq "... a command in the job reads it (sha256)" "$(sha "$loc/big")  /workspace/sub/big" \
        "$(in_job "$id" sha256sum /workspace/sub/big)"
t_ok "get it back" pond cp "$id:/workspace/sub/big" "$loc/big.back"
t_ok "... byte-identical" in_box cmp "$loc/big" "$loc/big.back"
t_ok "get the small one back" pond cp "$id:/workspace/x" "$loc/small.back"
t_ok "... byte-identical" in_box cmp "$loc/small" "$loc/small.back"
t_eq "get a file the payload wrote, to stdout" "from-payload" "$(pond cp "$id:/workspace/made" - 2>&1)"
t_ok "put replaces a file, --mode sets its mode" pond cp --mode 0755 "$loc/small" "$id:/workspace/made"
# shellcheck disable=SC2016 # the job's sh's
t_eq "... its bytes and mode" "hello 755" \
        "$(in_job "$id" sh -c 'echo "$(cat /workspace/made) $(stat -c %a /workspace/made)"')"
t_eq "put from stdin into the job's /tmp, get to stdout" "via-stdin" \
        "$(echo via-stdin | pond cp - "$id:/tmp/s" && pond cp "$id:/tmp/s" - 2>&1)"
t_ok "put into the job's home" pond cp "$loc/small" "$id:/home/job/.tool.cfg"
t_eq "... where the job reads it" "hello" "$(in_job "$id" cat /home/job/.tool.cfg)"
t_eq "no temporary file is left beside them" "" \
        "$(in_job "$id" sh -c 'ls -A /workspace /workspace/sub /tmp | grep pond-cp')"

# each copy is audited with its sha256
journal=$(in_box journalctl -o cat --no-pager POND_JOB_ID="$id" POND_EVENT=copy 2>&1)
t_like "the journal has the put of the 1 MiB file with its sha256" \
        "put /workspace/sub/big, 1048576 bytes, sha256 $(sha "$loc/big"): done" "$journal"
t_like "... and its get" "get /workspace/sub/big, 1048576 bytes, sha256 $(sha "$loc/big"): done" "$journal"
t_like "... naming the caller's uid" "by uid 0 through the job's init: put /workspace/x" "$journal"

# controls: outside the writable roots, through links, too big, directories
passwd=$(in_job "$id" sha256sum /etc/passwd)
OUT=$(pond cp "$loc/small" "$id:/etc/passwd" 2>&1)
RC=$?
t_eq "put /etc/passwd: refused (125)" "125" "$RC"
t_like "... saying why" "not below one of the job's writable directories" "$OUT"
OUT=$(pond cp "$id:/etc/passwd" - 2>&1)
RC=$?
t_eq "get /etc/passwd: refused (125)" "125" "$RC"
t_fail "... and no bytes came" in_box sh -c "$PONDCTL cp $id:/etc/passwd - 2>/dev/null | grep -q root"
OUT=$(pond cp "$loc/small" "$id:/workspace/../etc/passwd" 2>&1)
t_like "put /workspace/../etc/passwd: refused, not normalized" "normalized" "$OUT"
OUT=$(pond cp "$id:/workspace/../etc/passwd" - 2>&1)
t_like "get /workspace/../etc/passwd: refused, not normalized" "normalized" "$OUT"
OUT=$(pond cp "$loc/small" "$id:/workspace/evil" 2>&1)
RC=$?
t_eq "put onto the payload's link to /etc/passwd: fails (1)" "1" "$RC"
t_like "... saying why" "symbolic link" "$OUT"
t_eq "... the link is still a link" "link" "$(in_job "$id" sh -c 'test -L /workspace/evil && echo link')"
t_eq "... /etc/passwd is as it was" "$passwd" "$(in_job "$id" sha256sum /etc/passwd)"
OUT=$(pond cp "$id:/workspace/evil" - 2>&1)
RC=$?
t_eq "get through the payload's link to /etc/passwd: fails (1)" "1" "$RC"
t_fail "... nothing of /etc/passwd came" grep -q "root:" <<<"$OUT"
t_like "... saying why" "symbolic link" "$OUT"
OUT=$(pond cp "$id:/workspace/etcdir/passwd" - 2>&1)
t_like "get through the payload's link to /etc as a directory: refused" "symbolic link: refused" "$OUT"
t_fail "... nothing of /etc/passwd came" grep -q "root:" <<<"$OUT"
OUT=$(pond cp "$loc/small" "$id:/workspace/etcdir/passwd" 2>&1)
t_like "put through it: refused" "symbolic link: refused" "$OUT"
OUT=$(pond cp "$loc/huge" "$id:/workspace/huge" 2>&1)
RC=$?
t_eq "put a file beyond 64 MiB: refused (125)" "125" "$RC"
t_like "... saying the maximum" "64 MiB" "$OUT"
OUT=$(pond cp "$id:/tmp/huge" "$loc/huge.back" 2>&1)
RC=$?
t_eq "get a file beyond 64 MiB: fails (1)" "1" "$RC"
t_like "... saying the maximum" "beyond the 67108864" "$OUT"
t_eq "... and no file, not even a cut one, is left" "absent" "$(path_state "$loc/huge.back")"
OUT=$(pond cp "$id:/workspace/d" "$loc/d.back" 2>&1)
t_like "get a directory: refused" "is a directory" "$OUT"
OUT=$(pond cp "$loc/small" "$id:/workspace/d" 2>&1)
t_like "put over a directory: refused" "is a directory" "$OUT"
OUT=$(pond cp "$loc/dir" "$id:/workspace/y" 2>&1)
RC=$?
t_eq "put a local directory: refused (64)" "64" "$RC"
t_like "... regular files only" "regular files only" "$OUT"
t_eq "control: the checkout's own file reads through cp" "keep" "$(pond cp "$id:/workspace/keep" - 2>&1)"

t_eq "the source checkout on the host did not change (the staged copy did)" "$before" "$(in_box sh -c "$listing")"
t_eq "the job still runs" "running" "$(state "$id")"
pond cancel "$id" >/dev/null 2>&1
pond wait -q "$id" >/dev/null 2>&1
OUT=$(pond cp "$id:/workspace/x" - 2>&1)
RC=$?
t_eq "a job that ended: refused (125)" "125" "$RC"
t_like "... saying so" "not running" "$OUT"
t_ok "its result verifies, its transcript included" \
        pond verify --pubkey /etc/pond/keys/sign.pub --job-id "$id" "$POND_STATE/results/$id"
# the 1 MiB put: its bytes as the copy's stdin; its get: as the copy's stdout
# shellcheck disable=SC2016 # python's
t_eq "the transcript holds the 1 MiB put and get, their bytes by sha256" "$(sha "$loc/big") $(sha "$loc/big")" \
        "$(in_box python3 -c 'import json, sys
e = [json.loads(l) for l in open(sys.argv[1] + "/execs/index", "rb")]
put = [x for x in e if x["argv"][1:3] == ["--put", "/workspace/sub/big"] and x["status"] == 0]
get = [x for x in e if x["argv"][1:3] == ["--get", "/workspace/sub/big"] and x["status"] == 0]
print(put[0]["stdin"]["sha256"], get[0]["stdout"]["sha256"])' "$POND_STATE/results/$id" 2>&1)"
t_clean "nothing of the job is left" "$id"

# under Landlock (untrusted-code-locked, runc): its exec rules do not name /dev, and the init's fork runs the
# copy without a new execve
if [ "$BACKEND" = runc ]; then
        id=$(new_id cp-locked)
        printf '{"job_id":"%s","tenant":"t","command":["sh","-c","echo ready; exec sleep 300"],%s}\n' "$id" \
                "\"sandbox\":{\"profile\":\"untrusted-code-locked\",\"backend\":\"$BACKEND\"}" |
                in_box "$PONDCTL" submit - >/dev/null
        for _ in $(seq 600); do
                pond logs "$id" 2>/dev/null | grep -q '^ready' && break
                sleep 0.1
        done
        t_ok "untrusted-code-locked (Landlock): put into /tmp" pond cp "$loc/small" "$id:/tmp/x"
        t_eq "... and get it back" "hello" "$(pond cp "$id:/tmp/x" - 2>&1)"
        # shellcheck disable=SC2016 # the job's sh's
        t_like "... while the payload's own processes still cannot execute /dev/.pond-init (Landlock)" \
                "rc=126" "$(pond exec "$id" -- sh -c '/dev/.pond-init --get /tmp/x --beneath /tmp --max 9; echo "rc=$?"' 2>&1)"
        pond cancel "$id" >/dev/null 2>&1
        pond wait -q "$id" >/dev/null 2>&1
        t_clean "nothing of the locked job is left" "$id"
fi

# profile none has no init: refused, with the way there
id=$(new_id cp-none)
printf '{"job_id":"%s","tenant":"t","command":["sh","-c","echo ready; exec sleep 300"],%s}\n' "$id" \
        "\"sandbox\":{\"profile\":\"none\",\"backend\":\"$BACKEND\"}" | in_box "$PONDCTL" submit - >/dev/null
for _ in $(seq 600); do
        pond logs "$id" 2>/dev/null | grep -q '^ready' && break
        sleep 0.1
done
OUT=$(pond cp "$loc/small" "$id:/tmp/x" 2>&1)
RC=$?
t_eq "profile none: cp refused (125)" "125" "$RC"
t_like "... it needs the job's init" "goes through the job's init" "$OUT"
pond cancel "$id" >/dev/null 2>&1
pond wait -q "$id" >/dev/null 2>&1
t_clean "nothing of the none job is left" "$id"
in_box rm -rf "$src" "$loc"
done_testing
