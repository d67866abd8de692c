#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-deb.sh: the Debian package as an operator meets it. Built from this tree with `dpkg-buildpackage -us
# -uc -b` (lintian: nothing but the overridden tags; polkitd among its recommendations), installed with
# `apt-get install ./pond_*.deb` into a fresh box of its own (tools/pond-box start --packages: the host's
# release and package set, a writable /usr, no network), then: the layout (units, tmpfiles.d, sysusers.d,
# catalog, man pages, policy, keys and their modes), nothing started, `systemd-analyze verify` clean on every
# unit with man-db there (and a unit naming a missing page is not), a first real job with `pondctl run` to a
# verified result, and a site policy file in /etc/pond replacing the shipped one of its name. The time of
# install and first job are reported as diagnostics (docs/operations.md, "Install"). POND_DEB=FILE: install
# that package instead of building one. Starts its own box: it needs none from POND_BOX.
# shellcheck disable=SC2016 # the commands in single quotes run in the box's sh, with their own arguments
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ "$(id -u)" = 0 ] || t_skip_all "needs root (it boots a box)"
for tool in systemd-nspawn dpkg-buildpackage dh lintian; do
        command -v "$tool" >/dev/null || t_skip_all "$tool not installed (tools/install-deps)"
done

plan 25
work=$(mktemp -d /var/tmp/pond-test-deb.XXXXXX)
box=deb-$$
cleanup() {
        POND_BOX_QUIET=1 POND_BOX_STOP_TIMEOUT=0 "$POND_BOX_TOOL" stop "$box" >/dev/null 2>&1 || true
        case $work in /var/tmp/pond-test-deb.*) rm -rf -- "$work" ;; esac
}
trap 'rc=$?; cleanup; (exit $rc); _t_atexit' EXIT
now() { date +%s%N; }
secs() { local ms=$((($2 - $1) / 1000000)); printf '%d.%01d' $((ms / 1000)) $((ms % 1000 / 100)); }
bx() { "$POND_BOX_TOOL" exec "$box" -- "$@"; }

# --- the package, from this tree (its files as git knows them, or the whole tree outside a clone)
t0=$(now)
mkdir "$work/pond"
if git -C "$POND_SRCDIR" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$POND_SRCDIR" ls-files -co --exclude-standard -z | (cd "$POND_SRCDIR" && tar --null -cf - -T -) |
                tar -xf - -C "$work/pond"
else
        tar -C "$POND_SRCDIR" --exclude='./build*' -cf - . | tar -xf - -C "$work/pond"
fi
if [ -n "${POND_DEB:-}" ]; then
        cp "$POND_DEB" "$work/"
        t_ok "package given: $POND_DEB" test -f "$POND_DEB"
else
        # nocheck: the unit suite runs in tools/test on its own; the package's test is debian/rules'.
        t_ok "dpkg-buildpackage -us -uc -b builds the package" \
                sh -c 'cd "$1/pond" && DEB_BUILD_OPTIONS=nocheck nice dpkg-buildpackage -us -uc -b' sh "$work"
fi
diag "package built in $(secs "$t0" "$(now)") s"
deb=$(find "$work" -maxdepth 1 -name 'pond_*_*.deb' | head -n 1)
[ -n "$deb" ] || bail_out "no pond_*.deb in $work"
# Each remaining tag is overridden with its reason in debian/pond.lintian-overrides (docs/operations.md).
t_ok "lintian: no error or warning beyond the overridden tags" lintian --fail-on error,warning "$deb"
t_like "lintian reads the package's overrides" "statically-linked-binary" \
        "$(lintian --show-overrides "$deb" 2>&1)"
# Without polkitd the members of the group pond cannot submit (docs/operations.md, "Who may use pond"): apt
# installs it with the package unless told not to.
t_like "the package recommends polkitd, which runs the group pond's rule" "(^|, )polkitd(,|$)" \
        "$(dpkg-deb -f "$deb" Recommends)"

# --- a fresh box: no pond, no catalog entry of pond's
t_ok "a fresh box whose dpkg can install packages" \
        "$POND_BOX_TOOL" start "$box" --bind "$POND_SRCDIR" --bind-ro "$work" --packages
t_ok "control: no pondctl in the fresh box" bx sh -c '! command -v pondctl && ! dpkg-query -W pond'
t_fail "control: no pond entry in the fresh box's catalog" \
        bx sh -c 'journalctl --list-catalog | grep -q d00e7eb856e042beb0e01295c25eda01'

# --- install: one step (the box's own part is LXCFS's container workaround and a resolver, tools/box-install)
t1=$(now)
t_ok "apt-get install ./$(basename "$deb")" bx "$POND_SRCDIR/tools/box-install" "$deb"
t2=$(now)
t_eq "package installed" "install ok installed" "$(bx dpkg-query -W -f='${Status}' pond)"
t_eq "layout: units in systemd's unit directory, helpers, policy, tmpfiles.d, sysusers.d, catalog, man" \
        "ok" "$(bx sh -c 'for f in /lib/systemd/system/pond-job@.service /lib/systemd/system/pond.slice \
                /usr/bin/pondctl /usr/libexec/pond/pond-run /usr/libexec/pond/pond-init \
                /usr/share/pond/policy/profiles.json /usr/share/pond/nft/job.nft /usr/lib/tmpfiles.d/pond.conf \
                /usr/lib/sysusers.d/pond.conf /usr/lib/systemd/catalog/pond.catalog \
                /usr/share/doc/pond/egress.md; do [ -e "$f" ] || echo "missing $f"; done
                man -w pondctl pond-run pond-policy >/dev/null || echo "man pages not found"; echo ok')"
# The key directory and the public keys are everyone's to verify with; the inbox is the group pond's
# (sysusers.d before tmpfiles.d: docs/operations.md, "Who may use pond").
t_eq "state, run, key and inbox directories from tmpfiles.d" "755 711 755 1731:pond" \
        "$(bx stat -c %a /var/lib/pond /run/pond /etc/pond/keys | tr '\n' ' ')$(bx stat -c %a:%G /var/lib/pond/inbox)"
t_eq "postinst made the worker's key pairs: secret keys 0600 root's, public keys 0644" "600 0 600 0 644 644" \
        "$(bx stat -c '%a %u' /etc/pond/keys/sign.key /etc/pond/keys/seal.key | tr '\n' ' ')$(bx stat -c %a \
                /etc/pond/keys/sign.pub /etc/pond/keys/seal.pub | tr '\n' ' ' | sed 's/ $//')"
t_eq "the polkit rule for the group pond" "ok" \
        "$(bx sh -c '[ -s /usr/share/polkit-1/rules.d/50-pond.rules ] && getent group pond >/dev/null && echo ok')"
pub=$(bx cat /etc/pond/keys/sign.pub)
t_like "sign.pub is a key" "^[A-Za-z0-9+/=]{40,}$" "$pub"
# The keys are pinned by the control plane: reinstalling (or upgrading) must keep them.
t_ok "apt-get install --reinstall" bx sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall "$1" \
        >/dev/null 2>&1' sh "$deb"
t_eq "a reinstall keeps the worker's keys" "$pub" "$(bx cat /etc/pond/keys/sign.pub)"
t_ok "journalctl --list-catalog has pond's entries" \
        bx sh -c 'journalctl --list-catalog | grep -q d00e7eb856e042beb0e01295c25eda01'
t_eq "nothing of pond runs after the install" "" \
        "$(bx systemctl list-units --no-legend --plain --state=active 'pond*')"

t_eq "pond-reconcile.service is enabled (it runs at each boot, before any job)" enabled \
        "$(bx systemctl is-enabled pond-reconcile.service)"

# --- systemd-analyze verify on every unit (Documentation=man: resolved by man-db), and a control unit naming a
# page that does not exist, which verify must report
findings=$(bx sh -c 'for u in pond-job@v.service pond-sandbox.service pond-reconcile.service pond-egress@v.service \
                pond-broker@v.service pond.slice; do
        systemd-analyze verify "$u" 2>&1 | sed "s/^/$u: /"; done')
t_eq "systemd-analyze verify: clean on every unit" "" "$findings"
t_like "control: verify reports a Documentation= page that is not installed" "pond-no-such-page" \
        "$(bx sh -c 'mkdir -p /run/pond-deb-control && sed "s/^Documentation=.*/Documentation=man:pond-no-such-page(8)/" \
                /lib/systemd/system/pond.slice >/run/pond-deb-control/pond-control.slice &&
                systemd-analyze verify /run/pond-deb-control/pond-control.slice 2>&1')"
for u in pond-job@v.service pond-sandbox.service pond-egress@v.service pond-broker@v.service; do
        diag "systemd-analyze security $u: $(bx systemd-analyze security --no-pager "$u" 2>&1 | tail -n 1)"
done

# --- a first real job, to a verified result. Under runsc: in this box /usr is an overlay (what makes it
# writable for dpkg), which the kernel cannot idmap, and a confined runc job idmaps its root into its own uid
# range (docs/testing.md, "The package test"); on a worker's real /usr runc runs as well.
id=deb-$$-$RANDOM
t3=$(now)
out=$(bx sh -c 'set -e; d=$(mktemp -d /var/tmp/checkout.XXXXXX); cd "$d"; echo "print(1 + 1)" >calc.py
        pondctl run --job-id "$1" --backend runsc --profile untrusted-code-write --checkout "$d" --output answer \
                --memory 512M -- sh -c "python3 /workspace/calc.py >/workspace/answer"
        pondctl verify --pubkey /etc/pond/keys/sign.pub --job-id "$1" "/var/lib/pond/results/$1"' sh "$id" 2>&1)
rc=$?
t4=$(now)
t_eq "first job: pondctl run and pondctl verify succeed" 0 "$rc" || diag "$out"
t_eq "first job's result: completed, its answer in the change set" "completed answer" \
        "$(bx python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(r["status"], " ".join(a["path"] for a in r["artifacts"]))' "/var/lib/pond/results/$id/result.json" 2>&1)"
diag "install (apt-get install + the box's part): $(secs "$t1" "$t2") s; first job (pondctl run + verify):" \
        "$(secs "$t3" "$t4") s; steps: apt-get install ./$(basename "$deb"), pondctl run"

# --- site policy: /etc/pond/profiles.json replaces the shipped one by name (here: memory capped at 256M)
bx sh -c 'python3 - <<EOF
import json
p = json.load(open("/usr/share/pond/policy/profiles.json"))
p["knobs"]["memory"]["max"] = "256M"
json.dump(p, open("/etc/pond/profiles.json", "w"), indent=1)
EOF'
out=$(bx sh -c 'cd /var/tmp && pondctl run --job-id "$1" --backend runsc --profile untrusted-code-read --memory 512M \
        -- true' sh "ovr-$id" 2>&1)
t_like "/etc/pond/profiles.json replaces the shipped file: 512M is over its bound" "memory.*256M" "$out"
bx rm -f /etc/pond/profiles.json
t_ok "without it the shipped policy is back: the same job runs" \
        bx sh -c 'cd /var/tmp && pondctl run --quiet --job-id "$1" --backend runsc --profile untrusted-code-read \
                --memory 512M -- true' sh "ovr2-$id"
