#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-man-pages.sh SRCDIR [BUILDDIR]: every man page a unit's Documentation= names is one pond builds
# from docs/man (its source exists and docs/meson.build lists it), and, where go-md2man was found, the
# built page is there. `systemd-analyze verify` on a host with man-db checks the same on the installed
# units; this keeps it true in every build.
set -u
src=$1 build=${2:-}
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; }

pages=$(grep -ho 'man:[a-z0-9.-]*([0-9])' "$src"/units/* | sort -u)
if [ -n "$pages" ]; then ok "the units name man pages"; else not_ok "the units name man pages"; fi
for ref in $pages; do
        name=${ref#man:} name=${name%%(*} section=${ref##*(} section=${section%)}
        case $name in pond*) ;; *) continue ;; esac # systemd's own pages are not ours to build
        page=$name.$section
        if [ -f "$src/docs/man/$page.md" ] && grep -q "'$page'" "$src/docs/meson.build"; then
                ok "$ref: docs/man/$page.md exists and is built"
        else
                not_ok "$ref: docs/man/$page.md exists and is listed in docs/meson.build"
        fi
        if [ -n "$build" ] && [ -d "$build/docs" ] && command -v go-md2man >/dev/null; then
                if [ -s "$build/docs/$page" ]; then ok "$page was built"; else not_ok "$page was built"; fi
        fi
done
echo "1..$n"
exit "$failed"
