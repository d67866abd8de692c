# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Tiny TAP library for integration tests.  Source it from a bash test script:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   need_box                      # or skip the whole script
#   plan 3                        # or call done_testing at the end
#   t_ok   "systemd is up"  in_box systemctl is-system-running
#   t_fail "no such unit"   in_box systemctl status nope.service
#   t_eq   "answer"         42 "$(in_box sh -c 'echo 42')"
#   t_not_ok "job started" "its scope never became active"   # a check that could not be made
#   done_testing                  # only without plan
#
# TAP goes to the script's original stdout; everything the commands under
# test print is captured and shown as "# " diagnostics when a test fails (or
# always with POND_TEST_VERBOSE=1), so the TAP stream stays clean for meson
# (protocol : 'tap').  See docs/testing.md.

# Source root, from this file's own location (tests are run from the build
# dir by meson).
POND_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
POND_BOX_TOOL=${POND_BOX_TOOL:-$POND_SRCDIR/tools/pond-box}

_t_n=0             # tests emitted
_t_failed=0        # "not ok" emitted
_t_plan=           # number from plan, or "done" after done_testing
_t_auto_box=       # box started by need_box for POND_BOX=auto
exec {_t_out}>&1   # TAP stream: the original stdout

_t_print() { printf '%s\n' "$*" >&"$_t_out"; }

# diag MSG...: each argument, and each line in it, as a "# ..." line of the
# TAP stream
diag() {
        local arg line
        for arg in "$@"; do
                while IFS= read -r line; do
                        _t_print "# $line"
                done <<<"$arg"
        done
}

# plan N: announce N tests (call once, before the first test)
plan() {
        _t_plan=$1
        _t_print "1..$1"
}

# done_testing: end of a script without a plan (prints "1..N")
done_testing() {
        if [ -z "$_t_plan" ]; then
                _t_print "1..$_t_n"
                _t_plan="done"
        fi
}

_t_result() { # PASS(0|1) DESC [DIRECTIVE]
        _t_n=$((_t_n + 1))
        local desc=${2//#/\\#}
        if [ "$1" = 0 ]; then
                _t_print "ok $_t_n - $desc${3:+ # $3}"
        else
                _t_failed=$((_t_failed + 1))
                _t_print "not ok $_t_n - $desc${3:+ # $3}"
        fi
}

# _t_run CMD...: run CMD with stdout+stderr captured in $_t_log; status in $_t_rc
_t_run() {
        _t_log=$(mktemp)
        "$@" >"$_t_log" 2>&1
        _t_rc=$?
}

_t_show() { # FAILED(0|1): show captured output
        if [ "$1" = 1 ] || [ "${POND_TEST_VERBOSE:-0}" = 1 ]; then
                [ -s "$_t_log" ] && diag "$(tail -n 60 "$_t_log")"
        fi
        rm -f "$_t_log"
}

# t_ok DESC CMD...: passes if CMD exits 0.  Returns 0 if passed, 1 if not.
t_ok() {
        local desc=$1; shift
        _t_run "$@"
        if [ "$_t_rc" = 0 ]; then
                _t_result 0 "$desc"; _t_show 0; return 0
        fi
        _t_result 1 "$desc"
        diag "command: $*" "exit status: $_t_rc"
        _t_show 1
        return 1
}

# t_fail DESC CMD...: passes if CMD exits non-zero, except 126/127 (command
# not executable / not found), which never count as the expected failure.
t_fail() {
        local desc=$1; shift
        _t_run "$@"
        if [ "$_t_rc" != 0 ] && [ "$_t_rc" != 126 ] && [ "$_t_rc" != 127 ]; then
                _t_result 0 "$desc"; _t_show 0; return 0
        fi
        _t_result 1 "$desc"
        diag "command: $*" "exit status: $_t_rc (expected a failure)"
        _t_show 1
        return 1
}

# t_eq DESC EXPECTED ACTUAL: passes if the strings are equal
t_eq() {
        if [ "$2" = "$3" ]; then
                _t_result 0 "$1"; return 0
        fi
        _t_result 1 "$1"
        diag "expected: '$2'" "     got: '$3'"
        return 1
}

# t_like DESC REGEX ACTUAL: passes if ACTUAL matches the extended regex
t_like() {
        if grep -Eq -- "$2" <<<"$3"; then
                _t_result 0 "$1"; return 0
        fi
        _t_result 1 "$1"
        diag "expected to match: /$2/" "got: '$3'"
        return 1
}

# t_not_ok DESC [DIAG...]: a test that failed without a command to run, e.g. because
# what it needed did not happen ("the job started"); DIAG lines say why
t_not_ok() {
        local desc=$1; shift
        _t_result 1 "$desc"
        [ $# -eq 0 ] || diag "$@"
        return 1
}

# t_skip DESC REASON: a skipped test ("ok N - DESC # SKIP REASON")
t_skip() {
        _t_result 0 "$1" "SKIP $2"
}

# t_skip_all REASON: skip the whole script.  Prints "1..0 # SKIP REASON" and
# exits 0 (meson's TAP parser reports that as SKIP; a non-zero exit status,
# even 77, would be an ERROR for protocol 'tap').  Call it before any test.
t_skip_all() {
        if [ "$_t_n" -gt 0 ]; then
                # misuse, but keep the stream valid: skip what is left
                diag "skipping the rest: $1"
                if [ -n "$_t_plan" ] && [ "$_t_plan" != "done" ]; then
                        while [ "$_t_n" -lt "$_t_plan" ]; do t_skip "not run" "$1"; done
                else
                        done_testing
                fi
        else
                _t_print "1..0 # SKIP $1"
                _t_plan="done"
                _t_skipped_all=1
        fi
        exit 0
}

# bail_out REASON: abort the whole script (meson: ERROR)
bail_out() {
        _t_print "Bail out! $*"
        _t_plan="done"
        _t_bailed=1
        exit 1
}

# _t_box_mode: how in_box runs commands: "box" (POND_BOX names a running
# box), "host" (the host runs systemd), or "none: REASON"
_t_box_mode() {
        if [ -n "${POND_BOX:-}" ]; then
                echo box
        elif [ -d /run/systemd/system ]; then
                echo host
        else
                echo "none: no systemd here (PID 1 is $(cat /proc/1/comm 2>/dev/null || echo '?')); set POND_BOX=NAME (a box from tools/pond-box start) or POND_BOX=auto"
        fi
}

# need_box: make sure in_box can work, else skip the whole script.  With
# POND_BOX=auto, boots a private box for this script (source root and the
# current directory bound in) and stops it when the script exits.
need_box() {
        if [ "${POND_BOX:-}" = auto ]; then
                [ "$(id -u)" = 0 ] || t_skip_all "POND_BOX=auto needs root"
                command -v systemd-nspawn >/dev/null || t_skip_all "POND_BOX=auto: systemd-nspawn not installed"
                local name binds=(--bind "$POND_SRCDIR")
                name="auto-$(basename "$0" .sh | tr -c 'A-Za-z0-9_.\n-' _)-$$"
                case $PWD/ in "$POND_SRCDIR"/*) ;; *) binds+=(--bind "$PWD") ;; esac
                _t_auto_box=$name
                if ! "$POND_BOX_TOOL" start "$name" "${binds[@]}" >"/tmp/pond-box-$name.log" 2>&1; then
                        diag "$(cat "/tmp/pond-box-$name.log")"
                        rm -f "/tmp/pond-box-$name.log"
                        _t_auto_box=
                        bail_out "could not start box $name"
                fi
                diag "$(cat "/tmp/pond-box-$name.log")"
                rm -f "/tmp/pond-box-$name.log"
                export POND_BOX=$name
                return 0
        fi
        local mode
        mode=$(_t_box_mode)
        case $mode in
        box)
                "$POND_BOX_TOOL" init-pid "$POND_BOX" >/dev/null 2>&1 ||
                        bail_out "POND_BOX=$POND_BOX but no such box is running (tools/pond-box start $POND_BOX --bind $POND_SRCDIR)"
                ;;
        host) ;;
        *) t_skip_all "${mode#none: }" ;;
        esac
}

# in_box CMD...: run CMD under systemd: inside the box $POND_BOX (via
# tools/pond-box exec: all namespaces, clean environment, variables named in
# POND_BOX_PASSENV passed through, exit status and stdin/stdout kept), or
# directly when the host itself runs systemd; otherwise skip the script
# (call need_box first so that this happens before any test).
in_box() {
        local mode
        mode=$(_t_box_mode)
        case $mode in
        box) "$POND_BOX_TOOL" exec "$POND_BOX" -- "$@" ;;
        host) "$@" ;;
        *) t_skip_all "${mode#none: }" ;;
        esac
}

_t_atexit() {
        local rc=$?
        if [ -n "$_t_auto_box" ]; then
                POND_BOX_QUIET=1 POND_BOX_STOP_TIMEOUT=0 "$POND_BOX_TOOL" stop "$_t_auto_box" ||
                        diag "could not stop box $_t_auto_box"
        fi
        [ -n "${_t_skipped_all:-}${_t_bailed:-}" ] && exit "$rc"
        if [ -z "$_t_plan" ]; then
                _t_print "Bail out! script ended (status $rc) after $_t_n tests without plan or done_testing"
                exit 1
        fi
        if [ "$_t_plan" != "done" ] && [ "$_t_plan" != "$_t_n" ]; then
                diag "planned $_t_plan tests but ran $_t_n"
                exit 1
        fi
        [ "$_t_failed" = 0 ] || { diag "failed $_t_failed of $_t_n tests"; exit 1; }
        # all planned tests ran and passed: a stray non-zero status of the
        # script's last command does not turn that into an ERROR
        exit 0
}
trap _t_atexit EXIT
