#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-workloads.sh: real workloads run unchanged in pond jobs (POND_TEST_BACKEND, default runc): a real
# project's test suite under pytest (also with xdist), Python threads, multiprocessing, sqlite3, venv + pip
# install of a local wheel and sdist, posix_spawn/system, coreutils' stat calls, npm install of a packed
# local package, node worker_threads and child processes, make -j4 and make check of a C project, git clone/
# commit/diff/gc, a Go build and its tests, and a probe of the kernel facilities runtimes lean on (one TAP
# line each). The cases themselves are workloads/case.sh.
#
# Every case also runs outside pond as its oracle: the same command as the same uid (1000) in a copy of the
# same tree, with the box's own /usr, HOME and TMPDIR a fresh empty directory as in the job. A case that
# passes in its oracle must pass in pond (a failure prints both outputs); one that fails in its oracle is a
# SKIP saying why (a missing toolchain, say), never a pass. The end prints the table: case, oracle, pond.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box

# Limits: the profile's defaults for memory (4G) and /tmp (1G) hold every case. Pids do not under runsc:
# there the scope's pids limit counts gVisor's own host threads, about 30 per running guest process (a peak
# of 1105 for the probe's 34-process pipeline), so at the default 1024 the whole sandbox dies mid-case now and
# then, its output cut short. 4096 leaves room on both backends. A case gets a wall clock of its own so that
# a hang fails that case, not the whole script's meson time-out.
# POND_TEST_PROFILE: the default, untrusted-code-write, runs every case under its Landlock under runc (writes
# only to the workspace, /tmp, the home, /dev/shm and message queues, TCP to the proxy only); untrusted-code-
# locked adds its exec allowlist and closes message queues: the toolchains must not notice either.
PROFILE=${POND_TEST_PROFILE:-untrusted-code-write}
CASE_TIMEOUT=300
CASE_PIDS=4096
PATH_JOB=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin

# --- the checkout: this directory's workloads/, pyflakes with its own test suite (from Debian's
# python3-pyflakes), and a git repository to clone; owned by uid 1000 like the job user's own tree
fx=$(in_box mktemp -d /var/tmp/pond-workloads.XXXXXX)
# shellcheck disable=SC2016 # expanded by the box's sh
if ! out=$(in_box sh -c '
        set -e
        fx=$1 src=$2
        cp -r "$src" "$fx/co"
        if [ -d /usr/lib/python3/dist-packages/pyflakes/test ]; then
                cp -r /usr/lib/python3/dist-packages/pyflakes "$fx/co/pyflakes"
                find "$fx/co/pyflakes" -name __pycache__ -prune -exec rm -rf {} +
                # its upstream tree has the script its integration tests run as ../bin/pyflakes
                mkdir "$fx/co/bin"
                printf "from pyflakes.scripts.pyflakes import main\nmain()\n" >"$fx/co/bin/pyflakes"
        fi
        cp -r "$fx/co/cproj" "$fx/co/repo"
        cd "$fx/co/repo"
        export GIT_AUTHOR_NAME=pond GIT_AUTHOR_EMAIL=pond@example.org GIT_COMMITTER_NAME=pond \
                GIT_COMMITTER_EMAIL=pond@example.org GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent
        git init -q -b main
        git add Makefile src && git commit -q -m "the library"
        git add tests && git commit -q -m "its tests"
        chown -R 1000:1000 "$fx"
        chmod 755 "$fx"' sh "$fx" "$POND_SRCDIR/tests/integration/workloads" 2>&1); then
        bail_out "could not lay out the checkout in $fx: $out"
fi

ids=()            # every job, for the leftover and result checks at the end
rcs=()            # pondctl's exit status for each of them
table=()          # "case oracle pond verdict" rows
OPASS='' OOUT='' PPASS='' POUT='' PRC='' PID_LAST=''

# passed RC OUTPUT NAME: the case ran to its end ("case NAME ok" last) with status 0
passed() { [ "$1" = 0 ] && [ "${2##*$'\n'}" = "case $3 ok" ]; }

# oracle NAME: the case outside pond, in a fresh copy of the checkout; sets OPASS (pass|fail) and OOUT
oracle() {
        local h rc
        # shellcheck disable=SC2016 # expanded by the box's sh
        h=$(in_box sh -c 'rm -rf "$1/oracle" && cp -a "$1/co" "$1/oracle" && h=$(mktemp -d "$1/home.XXXXXX") &&
                chown 1000:1000 "$h" && echo "$h"' sh "$fx") || bail_out "could not copy the checkout for the oracle"
        # shellcheck disable=SC2016 # expanded by the box's sh
        OOUT=$(in_box setpriv --reuid=1000 --regid=1000 --clear-groups -- env -i PATH="$PATH_JOB" HOME="$h" \
                TMPDIR="$h" LANG=C.UTF-8 USER=job timeout "$CASE_TIMEOUT" \
                sh -c 'cd "$1" && exec bash case.sh "$2"' sh "$fx/oracle" "$1" 2>&1)
        rc=$?
        if passed "$rc" "$OOUT" "$1"; then OPASS=pass; else OPASS=fail; OOUT+=$'\n'"(exit status $rc)"; fi
}

# in_pond NAME: the case as a pond job on the checkout; sets PPASS (pass|fail), POUT, PRC and PID_LAST (its id)
in_pond() {
        local id
        id=$(new_id "wl-$1")
        ids+=("$id")
        PID_LAST=$id
        POUT=$(pond run --quiet --job-id "$id" --backend "$BACKEND" --profile "$PROFILE" \
                --checkout "$fx/co" --timeout "$CASE_TIMEOUT" --pids "$CASE_PIDS" -- bash case.sh "$1" 2>&1)
        PRC=$?
        rcs+=("$PRC")
        if passed "$PRC" "$POUT" "$1"; then PPASS=pass; else PPASS=fail; POUT+=$'\n'"(exit status $PRC)"; fi
}

# journal_of ID: the last of what pond and systemd said about job ID (not the payload's output, shown above):
# the supervisor's own word when it fails
journal_of() {
        in_box journalctl -q --no-pager -o cat _SYSTEMD_UNIT="pond-job@$1.service" SYSLOG_IDENTIFIER=pond \
                + _SYSTEMD_UNIT="pond-egress@$1.service" + UNIT="pond-job@$1.service" \
                + UNIT="pond-egress@$1.service" 2>&1 | grep -v '^$' | tail -n 25
}

# verdict DESC ORACLE POND ORACLE-OUTPUT POND-OUTPUT [ID]: one TAP line (ORACLE and POND are pass|fail), one
# row of the table; a failure also shows the journal of job ID
verdict() {
        local desc=$1 v
        if [ "$2" != pass ]; then
                v=skip
                t_skip "$desc" "fails outside pond too: $(tail -n 2 <<<"$4" | tr '\n' ' ')"
        elif [ "$3" = pass ]; then
                v=ok
                t_eq "$desc" pass pass
        else
                v=FAIL
                t_not_ok "$desc under $BACKEND (its oracle passes)" \
                        "--- in pond ($BACKEND), last 40 lines:" "$(tail -n 40 <<<"$5")" \
                        "--- outside pond (the oracle), last 40 lines:" "$(tail -n 40 <<<"$4")"
                [ -z "${6:-}" ] || diag "--- the journal of job $6:" "$(journal_of "$6")"
        fi
        table+=("$(printf '%-24s %-7s %-7s %s' "$desc" "$2" "$3" "$v")")
}

run_case() { # NAME
        oracle "$1"
        in_pond "$1"
        [ "${POND_TEST_VERBOSE:-0}" != 1 ] || diag "--- $1 in pond:" "$POUT" "--- $1 oracle:" "$OOUT"
        verdict "$1" "$OPASS" "$PPASS" "$OOUT" "$POUT" "$PID_LAST"
}

for c in pytest pytest-xdist python-threading python-multiprocessing python-sqlite3 python-venv-pip \
        python-spawn coreutils-stat npm-install node-workers node-children make git go; do
        run_case "$c"
done

# --- the kernel facilities: one job, one TAP line per facility (its line in each output)
oracle sysprobe
in_pond sysprobe
for f in epoll inotify eventfd timerfd signalfd memfd futex shm proc-self pipes; do
        o=$(grep -E "^$f (ok|FAIL)" <<<"$OOUT") p=$(grep -E "^$f (ok|FAIL)" <<<"$POUT")
        # a facility's own line says why it failed; without one (the probe did not build or crashed), the
        # whole output does
        verdict "sysprobe: $f" "$([ "$o" = "$f ok" ] && echo pass || echo fail)" \
                "$([ "$p" = "$f ok" ] && echo pass || echo fail)" "${o:-$OOUT}" "${p:-$POUT}" "$PID_LAST"
done

# --- every job signed a result that says what pondctl said, and left nothing behind
bad='' left=''
for i in "${!ids[@]}"; do
        id=${ids[$i]} want="completed ${rcs[$i]}"
        [ "${rcs[$i]}" != 124 ] || want="completed timed-out"
        st=$(result_field "$id" \
                'r["status"] + " " + ("timed-out" if r["exit"].get("timed_out") else str(r["exit"]["rc"]))' 2>&1)
        [ "$st" = "$want" ] || bad+="$id: $st (pondctl said ${rcs[$i]})"$'\n'
        l=$(leftovers "$id")
        [ -z "$l" ] || left+="$id: $l"$'\n'
done
t_eq "every job's result says completed, with pondctl's exit status" "" "${bad%$'\n'}"
t_eq "nothing left after the workloads' jobs" "" "${left%$'\n'}"
in_box rm -rf "$fx"

diag "" "workloads under $BACKEND: case, oracle (outside pond), pond, verdict"
diag "$(printf '%-24s %-7s %-7s %s' case oracle pond verdict)" "${table[@]}"
done_testing
