#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# images-build.sh: builds the real images test-images.sh runs jobs on, once, into a cache outside the
# repository keyed by this script's content (every backend's run and the ASan pass reuse it):
#   trixie.oci.tar    mmdebstrap --variant=minbase of Debian trixie (a libc other than the host's), one
#                     layer, made an oci-archive with umoci; Env and WorkingDir set in its config
#   twolayer.oci.tar  the same plus a layer that deletes /etc/issue (whiteout) and replaces
#                     /usr/share/doc (opaque) with one file
#   trixie.docker.tar the base as a docker-archive (manifest.json + layer tar), written by hand below
# Prints the cache directory. Falls back to bookworm (and says so on stderr) when trixie is not reachable.
# Needs root, mmdebstrap, umoci and python3.
set -euo pipefail

key=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
cache=${POND_TEST_IMAGE_CACHE:-/var/cache/pond-test}/images-$key
if [ -f "$cache/done" ]; then
        echo "$cache"
        exit 0
fi
for tool in mmdebstrap umoci python3; do
        command -v "$tool" >/dev/null || { echo "images-build: $tool is missing (tools/install-deps)" >&2; exit 1; }
done
rm -rf "$cache"
mkdir -p "$cache"
work=$(mktemp -d "$cache/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The archive the machine's own apt sources name (never a host written here).
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
suite=trixie
if ! mmdebstrap --quiet --mode=root --variant=minbase --include=ca-certificates "$suite" "$work/rootfs.tar" \
        ${mirror:+"$mirror"} >"$work/mmdebstrap.log" 2>&1; then
        echo "images-build: trixie failed (see below); falling back to bookworm" >&2
        tail -n 5 "$work/mmdebstrap.log" >&2
        suite=bookworm
        mmdebstrap --quiet --mode=root --variant=minbase --include=ca-certificates "$suite" "$work/rootfs.tar" \
                ${mirror:+"$mirror"}
fi
echo "$suite" >"$cache/suite"

# The one-layer image.
umoci init --layout "$work/oci"
umoci new --image "$work/oci:base"
umoci raw add-layer --image "$work/oci:base" "$work/rootfs.tar"
umoci config --image "$work/oci:base" --config.env "POND_IMAGE_ENV=from-image" \
        --config.env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --config.workingdir /srv --config.user 4242 --config.entrypoint /bin/false
# The second layer: OCI whiteouts as a builder writes them.
python3 - "$work/layer2.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    def add(name, kind=tarfile.REGTYPE, data=b"", mode=0o644):
        ti = tarfile.TarInfo(name); ti.type = kind; ti.mode = mode; ti.size = len(data)
        t.addfile(ti, io.BytesIO(data) if data else None)
    add("etc", tarfile.DIRTYPE, mode=0o755)
    add("etc/.wh.issue")
    add("usr", tarfile.DIRTYPE, mode=0o755)
    add("usr/share", tarfile.DIRTYPE, mode=0o755)
    add("usr/share/doc", tarfile.DIRTYPE, mode=0o755)
    add("usr/share/doc/.wh..wh..opq")
    add("usr/share/doc/pond.txt", data=b"replaced by the upper layer\n")
PY
cp -a "$work/oci" "$work/oci2"
umoci raw add-layer --image "$work/oci2:base" "$work/layer2.tar"
umoci tag --image "$work/oci:base" trixie
umoci tag --image "$work/oci2:base" twolayer
umoci rm --image "$work/oci:base"
umoci rm --image "$work/oci2:base"
tar -C "$work/oci" -cf "$cache/trixie.oci.tar" .
tar -C "$work/oci2" -cf "$cache/twolayer.oci.tar" .

# docker-archive: manifest.json, the config as HEX.json, the layer uncompressed (its digest is the diff_id).
python3 - "$work/rootfs.tar" "$work/oci" "$cache/trixie.docker.tar" <<'PY'
import hashlib, io, json, os, sys, tarfile
rootfs, layout, out = sys.argv[1:4]
index = json.load(open(os.path.join(layout, "index.json")))
blob = lambda d: open(os.path.join(layout, "blobs", "sha256", d.split(":")[1]), "rb").read()
manifest = json.loads(blob(index["manifests"][0]["digest"]))
config = blob(manifest["config"]["digest"])
cfg = json.loads(config)
layer_sha = cfg["rootfs"]["diff_ids"][0].split(":")[1]
with tarfile.open(out, "w") as t:
    def add(name, data):
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    add(hashlib.sha256(config).hexdigest() + ".json", config)
    ti = t.gettarinfo(rootfs, arcname=layer_sha + "/layer.tar"); ti.uid = ti.gid = 0
    with open(rootfs, "rb") as f:
        t.addfile(ti, f)
    add("manifest.json", json.dumps([{"Config": hashlib.sha256(config).hexdigest() + ".json",
                                       "RepoTags": ["pond-test/docker:trixie"],
                                       "Layers": [layer_sha + "/layer.tar"]}]).encode())
PY
touch "$cache/done"
echo "$cache"
