#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-bundle.sh: encrypted source bundles through real pond-job@ID jobs: the worker opens a bundle sealed
# to it for that job, the job works on the tree, input_sha is the bundle's hash as issued; a bundle for
# another job or an altered one is refused before anything runs, and nothing is left behind.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

src=$(in_box mktemp -d /var/tmp/pond-bundle-src.XXXXXX)
in_box sh -c "mkdir -p $src/sub && echo hello > $src/a.txt && printf '#!/bin/sh\necho run\n' > $src/sub/run.sh &&
              chmod 755 $src/sub/run.sh && ln -s a.txt $src/link"
work=$(in_box mktemp -d /var/tmp/pond-bundle.XXXXXX)

# bundle_job ID BUNDLE-FOR-ID: a bundle sealed to this worker for BUNDLE-FOR-ID and a spec for job ID
bundle_job() {
        SHA=$(in_box "$PONDCTL" bundle create --to /etc/pond/keys/seal.pub --job-id "$2" "$src" -o "$work/$1.bundle")
        in_box sh -c "cat > $work/$1.json" <<JSON
{"job_id":"$1","tenant":"t","command":["true"],"bundle":"$work/$1.bundle",
 "sandbox":{"profile":"untrusted-code-write","backend":"$BACKEND"}}
JSON
}

id=$(new_id bundle)
bundle_job "$id" "$id"
run_job "$id" --spec "$work/$id.json" -- sh -c 'cat /workspace/a.txt; /workspace/sub/run.sh; readlink /workspace/link;
                                               echo changed > /workspace/a.txt'
t_eq "bundle job succeeds" 0 "$RC"
t_eq "the job sees the tree: contents, executable bit, symlink" "$(printf 'hello\nrun\na.txt')" "$OUT"
t_like "pondctl bundle create prints the input_sha" "^[0-9a-f]{64}$" "$SHA"
t_eq "input_sha is the bundle's hash as issued" "$SHA" "$(result_field "$id" 'r["input_sha"]')"
t_eq "... which is the sha256 of the bundle file" "$SHA" "$(in_box sha256sum "$work/$id.bundle" | cut -d' ' -f1)"
t_eq "the change is in the result" "a.txt:modified" \
        "$(result_field "$id" '" ".join(a["path"]+":"+a["change"] for a in r["artifacts"])')"
# pondctl returns at the verified result; the teardown, which removes the checkout, may still run
wait_gone "$id" || true
t_eq "the extracted checkout is gone" absent "$(path_state "$POND_STATE/jobs/$id/checkout")"
t_clean "nothing left after a bundle job" "$id"

id=$(new_id bundleother)
bundle_job "$id" "other-$id"
run_job "$id" --spec "$work/$id.json" -- true
t_eq "a bundle for another job is refused" 125 "$RC"
t_like "... with the reason" "bundle" "$(result_field "$id" 'r["reason"]')"
t_eq "... and nothing extracted" absent "$(path_state "$POND_STATE/jobs/$id/checkout")"

id=$(new_id bundleflip)
bundle_job "$id" "$id"
in_box python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2] ^= 1; open(p,"wb").write(b)' \
        "$work/$id.bundle"
run_job "$id" --spec "$work/$id.json" -- true
t_eq "a bundle with a flipped byte is refused" 125 "$RC"
t_eq "... and nothing extracted" absent "$(path_state "$POND_STATE/jobs/$id/checkout")"
in_box rm -rf "$src" "$work"
done_testing
