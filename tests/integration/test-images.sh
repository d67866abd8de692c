#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-images.sh: jobs on imported images (docs/images.md), per backend. A real Debian image built
# offline from the archive (images-build.sh, cached outside the repository) is imported as an
# oci-archive and a docker-archive; jobs run its own libc and tools under pond's posture; a two-layer
# image's whiteout and opaque directory are honoured; two concurrent jobs share the layers' inodes; the
# signed result pins the image by digest; rm refuses while a job holds the image; nothing is left behind.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

[ "$(id -u)" = 0 ] || t_skip_all "building the test image needs root"
cache=$("$POND_SRCDIR/tests/integration/images-build.sh" 2>/tmp/pond-images-build.$$.log) || {
        diag "$(tail -n 20 /tmp/pond-images-build.$$.log)"
        rm -f /tmp/pond-images-build.$$.log
        t_skip_all "cannot build the test image (mmdebstrap, umoci, the Debian archive)"
}
rm -f /tmp/pond-images-build.$$.log
suite=$(cat "$cache/suite")
[ "$suite" = trixie ] || diag "the Debian archive's trixie was not reachable: the image is $suite"
name=pond-test/$suite:$BACKEND

# import FILE ARGS...: through a pipe, as `podman save ... | pondctl image import /dev/stdin` would
import() { local f=$1; shift; in_box "$PONDCTL" image import /dev/stdin "$@" <"$f"; }

digest=$(import "$cache/trixie.oci.tar" --name "$name")
t_like "an oci-archive imports and prints its manifest digest" "^sha256:[0-9a-f]{64} $name\$" "$digest"
digest=${digest%% *}
t_eq "re-importing is idempotent (same digest)" "$digest $name" "$(import "$cache/trixie.oci.tar" --name "$name")"
two=$(import "$cache/twolayer.oci.tar" --name "pond-test/two:$BACKEND")
two=${two%% *}
t_like "a two-layer image imports" "^sha256:" "$two"
docker=$(import "$cache/trixie.docker.tar")
t_like "a docker-archive imports under its RepoTags name" "^sha256:[0-9a-f]{64} pond-test/docker:trixie\$" "$docker"
t_like "image list shows it" "$digest" "$(pond image list)"
t_like "probe advertises it by digest" "\"digest\":\"$digest\"" \
        "$(pond probe --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["images"]))' | tr -d ' ')"

id=$(new_id image)
# shellcheck disable=SC2016 # expanded by the job's shell
run_job "$id" --profile untrusted-code-write --image "$name" -- sh -c '
        . /etc/os-release; echo "codename=$VERSION_CODENAME"
        ldd --version | head -n1
        echo "uid=$(id -u) user=$(id -un) cwd=$(pwd) env=$POND_IMAGE_ENV home=$HOME"
        echo hello | sha256sum
        touch /usr/x 2>/dev/null && echo root-writable || echo root-read-only
        sha256sum </etc/ssl/certs/ca-certificates.crt
        grep -c "" /etc/passwd'
t_eq "job on the image succeeds" 0 "$RC"
t_like "... runs the image's own Debian ($suite)" "codename=$suite" "$OUT"
host_libc=$(in_box ldd --version | head -n1)
t_like "... and its own libc" "GLIBC" "$(echo "$OUT" | grep -i glibc)"
[ "$suite" = trixie ] && t_eq "... which is not the host's" "" "$(echo "$OUT" | grep -F "$host_libc")"
t_like "... as pond's job user in /workspace with the image's Env (User ignored)" \
        "uid=1000 user=job cwd=/workspace env=from-image home=/home/job" "$OUT"
t_like "... with real tools" "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" "$OUT"
t_like "... on a read-only root" "root-read-only" "$OUT"
if in_box test -s /etc/ssl/certs/ca-certificates.crt; then
        t_like "... with the worker's CA bundle" "$(in_box sh -c 'sha256sum </etc/ssl/certs/ca-certificates.crt')" "$OUT"
else
        t_skip "... with the worker's CA bundle" "this worker has no CA bundle: the image's own shows through"
fi
t_eq "... and pond's /etc/passwd (3 users)" 3 "$(echo "$OUT" | tail -n1)"
t_eq "result.json pins the image by manifest digest" "$digest" "$(result_field "$id" 'r["image_digest"]')"
t_eq "... and names it as asked" "$name" "$(result_field "$id" 'r["image"]')"
t_ok "pondctl verify --image-digest accepts it" \
        pond verify --pubkey /etc/pond/keys/sign.pub --image-digest "$digest" "$POND_STATE/results/$id"
t_fail "pondctl verify --image-digest refuses another digest" \
        pond verify --pubkey /etc/pond/keys/sign.pub --image-digest "$two" "$POND_STATE/results/$id"
t_clean "nothing left after a job on an image (the overlay is unmounted)" "$id"

id=$(new_id imagetwo)
run_job "$id" --profile untrusted-code-read --image "$two" -- sh -c 'test -e /etc/issue && echo issue-present || echo issue-gone; ls /usr/share/doc'
t_eq "by digest: the whiteout deletes, the opaque directory replaces" "$(printf 'issue-gone\npond.txt')" "$OUT"
t_clean "nothing left after the two-layer job" "$id"

id=$(new_id imagedocker)
# shellcheck disable=SC2016 # expanded by the job's shell
run_job "$id" --profile untrusted-code-read --image pond-test/docker:trixie -- sh -c '. /etc/os-release; echo $VERSION_CODENAME; pwd'
t_eq "a job runs on the docker-archive import (in /workspace: pond's, not the image's WorkingDir)" \
        "$(printf '%s\n/workspace' "$suite")" "$OUT"

# Two jobs at once on one image: the same inodes (nothing copied), and rm refuses while they hold it.
layer=$(in_box python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0].split(":")[1])' \
        "$POND_STATE/images/records/${digest#sha256:}.json")
store_ino=$(in_box stat -c %i "$POND_STATE/images/layers/$layer/usr/bin/sha256sum")
a=$(new_id imagea)
b=$(new_id imageb)
outa=$(mktemp)
outb=$(mktemp)
pond run --quiet --job-id "$a" --backend "$BACKEND" --profile untrusted-code-read --image "$name" -- sh -c 'stat -c %i /usr/bin/sha256sum; sleep 4' >"$outa" 2>&1 &
pida=$!
pond run --quiet --job-id "$b" --backend "$BACKEND" --profile untrusted-code-read --image "$name" -- sh -c 'stat -c %i /usr/bin/sha256sum; sleep 4' >"$outb" 2>&1 &
pidb=$!
wait_running "$a" && wait_running "$b"
t_fail "image rm refuses an image that running jobs hold" pond image rm "$digest"
wait "$pida" "$pidb"
if [ "$BACKEND" = runsc ]; then
        # gVisor's gofer reports its own inode numbers: the store's are only visible on the host side
        t_eq "two concurrent jobs see the same file" "$(cat "$outa")" "$(cat "$outb")"
else
        t_eq "two concurrent jobs share the layer's inodes (job a)" "$store_ino" "$(cat "$outa")"
        t_eq "... (job b)" "$store_ino" "$(cat "$outb")"
fi
rm -f "$outa" "$outb"
t_clean "nothing left after job a" "$a"
t_clean "nothing left after job b" "$b"

# kill -9 of the supervisor mid-job: ExecStopPost (pond-run --cleanup) unmounts the overlay too, and the
# image's use lock dies with the supervisor (rm works again).
id=$(new_id imagekill9)
in_box "$PONDCTL" run --quiet --job-id "$id" --backend "$BACKEND" --profile untrusted-code-read --image "$name" \
        -- sleep 60 >/dev/null 2>&1 &
runner=$!
if wait_running "$id"; then
        # In the supervisor's mount namespace (pond-job@ has one of its own), not the host's.
        t_like "the overlay is mounted while the job runs" "pond-image" \
                "$(in_box sh -c "grep -F $POND_RUN/jobs/$id/rootfs \
                        /proc/\$(systemctl show -P MainPID pond-job@$id.service)/mountinfo")"
        in_box sh -c "kill -9 \$(systemctl show -P MainPID pond-job@$id.service)"
        wait_gone "$id"
        t_clean "nothing left after kill -9 of pond-run on an image (--cleanup unmounts it)" "$id"
else
        t_not_ok "job $id started (its scope and service became active within 20 s)"
fi
wait "$runner"

id=$(new_id imageabsent)
run_job "$id" --profile untrusted-code-read --image pond-test/absent:1 -- true
t_eq "an image that is not present is refused" 125 "$RC"
t_like "... with the reason" "not present" "$(result_field "$id" 'r["reason"]')"

t_ok "image rm removes a name" pond image rm "$name" pond-test/docker:trixie "pond-test/two:$BACKEND"
t_fail "... and the image with its last name" pond image inspect "$digest"
t_like "gc removes the layers no image names" "removed [1-9][0-9]* layers" "$(pond image gc)"
t_eq "... all of them" "" "$(in_box ls -A "$POND_STATE/images/layers")"
done_testing
