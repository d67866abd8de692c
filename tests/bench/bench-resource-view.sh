#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench-resource-view.sh: why the resource view matters. A real C build, `make -j$(nproc)` of pond's own
# 109 C files (helpers/, -O1), in a runc job with --cpus 1, as many jobs as the job's nproc tells it; the
# wall time and the throttled time of the job's cpu.stat (CFS quota) side by side, ROUNDS rounds. Then the
# view's cost on a job's start: `pondctl run -- true` under profile none with LXCFS running (the view:
# cpuset, LXCFS checked and bound) against LXCFS masked (best-effort: the cpuset alone), interleaved.
# Run it in a box with pond installed (as root); run it once with the pond to compare against installed
# too (the "host view" row is pond before the view, whose jobs saw the host's CPUs):
#   tools/pond-box exec NAME -- $PWD/tests/bench/bench-resource-view.sh SRCDIR BUILDDIR [ROUNDS [START_ROUNDS]]
# (START_ROUNDS 0: the build alone, e.g. to interleave two boxes round by round)
set -euo pipefail
src=${1:?usage: bench-resource-view.sh SRCDIR BUILDDIR [ROUNDS [START_ROUNDS]]}
build=${2:?usage: bench-resource-view.sh SRCDIR BUILDDIR [ROUNDS [START_ROUNDS]]}
rounds=${3:-3}
start_rounds=${4:-20}
pondctl=${POND_BIN:-/opt/pond/bin}/pondctl
work=$(mktemp -d /tmp/bench-resource-view.XXXXXX)
trap 'rm -rf "$work"; systemctl unmask --runtime lxcfs.service >/dev/null 2>&1 || true' EXIT

# The checkout: pond's sources and its generated config.h, with a plain Makefile.
mkdir -p "$work/src/config"
cp -r "$src/helpers" "$work/src/"
cp "$build/config.h" "$work/src/config/"
incs=$(cd "$work/src" && find helpers -type d | sed 's|^|-I/workspace/|' | tr '\n' ' ')
cat >"$work/src/Makefile" <<EOF
SRC := \$(shell cd /workspace && find helpers -name '*.c')
OBJ := \$(patsubst %.c,/tmp/obj/%.o,\$(SRC))
CFLAGS := -O1 -D_GNU_SOURCE -I/workspace/config $incs -I/usr/include/json-c -I/usr/include/libnl3
all: \$(OBJ)
/tmp/obj/%.o: /workspace/%.c
	@mkdir -p \$(dir \$@)
	@gcc \$(CFLAGS) -c \$< -o \$@
EOF
chmod -R a+rX "$work"

# In the job: nproc, wall ms of the build, and the throttled time (ns) and periods of its cpu.stat.
# shellcheck disable=SC2016 # the job's sh expands these
job='for st in /sys/fs/cgroup/cpu/cpu.stat /sys/fs/cgroup/cpu,cpuacct/cpu.stat /sys/fs/cgroup/cpu.stat; do
        [ -r $st ] && break
done
t() { sed -n "s/^throttled_\(time\|usec\) //p" $st; }
n() { sed -n "s/^nr_throttled //p" $st; }
b=$(t) bn=$(n) s=$(date +%s%N)
make -s -j"$(nproc)" -C /workspace >/dev/null
e=$(date +%s%N)
echo "$(nproc) $(((e - s) / 1000000)) $(($(t) - b)) $(($(n) - bn))"'

echo "make -j\$(nproc) of $(cd "$work/src" && find helpers -name '*.c' | wc -l) C files, --cpus 1, host nproc $(nproc)"
echo "round  nproc  wall_ms  throttled_ms  nr_throttled"
for r in $(seq 1 "$rounds"); do
        read -r np wall thr nthr < <("$pondctl" run --quiet --profile untrusted-code-write --backend runc \
                --checkout "$work/src" --cpus 1 --memory 2G -- sh -c "$job" | tail -n 1)
        # v1 reports throttled_time in ns, v2 throttled_usec in us
        [ -d /sys/fs/cgroup/cpu ] && thr=$((thr / 1000000)) || thr=$((thr / 1000))
        printf '%5s  %5s  %7s  %12s  %12s\n' "$r" "$np" "$wall" "$thr" "$nthr"
done

# The view's cost on a job's start, interleaved: view (LXCFS running) and no view (LXCFS masked).
[ "$start_rounds" -gt 0 ] || exit 0
python3 - "$pondctl" "$start_rounds" <<'EOF'
import statistics, subprocess, sys, time
pondctl, rounds = sys.argv[1], int(sys.argv[2])
def job():
    t = time.perf_counter()
    subprocess.run([pondctl, "run", "--quiet", "--profile", "none", "--backend", "runc", "--", "true"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000
def lxcfs(on):
    cmd = "systemctl unmask --runtime lxcfs.service && systemctl start lxcfs.service" if on else \
          "systemctl mask --runtime lxcfs.service && systemctl stop lxcfs.service"
    subprocess.run(["sh", "-c", cmd], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
res = {True: [], False: []}
for r in range(rounds + 2):
    for on in (True, False):
        lxcfs(on)
        ms = job()
        if r >= 2:
            res[on].append(ms)
lxcfs(True)
for on in (True, False):
    v = sorted(res[on])
    print("job start, %-22s median %6.1f ms  p90 %6.1f ms  (%d rounds)" %
          ("view (LXCFS bound)" if on else "no view (LXCFS masked)", statistics.median(v), v[int(len(v) * 0.9) - 1], len(v)))
print("view's cost on a job's wall time (median difference): %+.1f ms" %
      (statistics.median(res[True]) - statistics.median(res[False])))
EOF
