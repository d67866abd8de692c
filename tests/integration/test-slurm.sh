#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-slurm.sh: a fleet on a real Slurm cluster (docs/fleet.md). Three boxes on one bridge: a controller
# (slurmctld, slurmdbd over a real MariaDB) and two workers, each with slurmd and pond ($POND_BOX is
# worker 1; worker 2 is a box of its own without a working runsc and with an image worker 1 lacks), one
# munge key. Each worker's node line comes from `pondctl slurm-node` (Features from its probe, CPUs within
# its admission ceiling: max_jobs 1, when_full refuse, so a job Slurm placed beyond it would be refused);
# each job's sbatch options from `pondctl slurm-args`; each job runs under pond-slurm-job and its Epilog.
# Worker 1 carries the tag pool:trusted only, worker 2 pool:any too (their worker.json), and Features say so.
# Shown, each with a control that fails: placement by features (sacct NodeList), a job no worker can take
# refused before Slurm with dispatch-check's reason, results that verify with their worker's key only, a
# tier any job forced onto worker 1 (sbatch -w, no constraint) refused by that worker's pond, signed,
# queueing past the fleet's CPUs, scancel and a killed wrapper (whose pond job only the Epilog cancels),
# exit codes and accounts in sacct, a worker powered off mid-job: Slurm requeues it and only attempt 1's
# result exists, and fair share ranking the tenant that ran little above the one that ran a lot.
. "$(dirname "${BASH_SOURCE[0]}")/pond.sh"
need_box
[ "$(_t_box_mode)" = box ] || t_skip_all "needs POND_BOX: two more boxes join it over a bridge"
for tool in /usr/sbin/slurmctld-wlm /usr/sbin/slurmd-wlm /usr/sbin/slurmstepd-wlm /usr/sbin/slurmdbd \
        /usr/sbin/munged /usr/sbin/mariadbd /usr/bin/mariadb-install-db /usr/bin/sbatch /usr/bin/sacctmgr; do
        [ -x "$tool" ] || t_skip_all "$tool is missing: install slurmctld slurmd slurmdbd slurm-client munge" \
                "mariadb-server (tools/install-deps)"
done
build=${POND_BUILD_ROOT:-$PWD}
[ -x "$build/helpers/pondctl/pondctl" ] || t_skip_all "no pondctl in $build (set POND_BUILD_ROOT)"
in_box test -d "$build" || t_skip_all "the worker box does not see $build: a directory the boxes share"

W2=slurm-w2-$$ CTL=slurm-ctl-$$
NET=10.234.78 # .1 the controller, .2 worker 1, .3 worker 2
shared=$build/test-slurm-$$     # seen by every box: configuration, specs, probes, keys, results
etc=$shared/etc
CTL_PONDCTL=$build/helpers/pondctl/pondctl
WRAPPER=$build/helpers/slurm/pond-slurm-job
PREFIX=${PONDCTL%/bin/pondctl}
UNITS="pond-slurm-munge.service pond-slurm-slurmd.service"

ctl() { "$POND_BOX_TOOL" exec "$CTL" -- env SLURM_CONF="$etc/slurm.conf" "$@"; }
w2() { "$POND_BOX_TOOL" exec "$W2" -- "$@"; }
# on N CMD...: CMD on worker N (1 or 2)
on() { local n=$1; shift; if [ "$n" = 1 ]; then in_box "$@"; else w2 "$@"; fi; }
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>&1; }

cleanup() {
        for b in "$W2" "$CTL"; do
                POND_BOX_QUIET=1 POND_BOX_STOP_TIMEOUT=0 "$POND_BOX_TOOL" stop "$b" >/dev/null 2>&1
        done
        # shellcheck disable=SC2086 # the unit names are words
        in_box systemctl stop $UNITS >/dev/null 2>&1
        # shellcheck disable=SC2086
        in_box systemctl reset-failed $UNITS >/dev/null 2>&1
        in_box ip link del slurm0 >/dev/null 2>&1
        in_box "$PONDCTL" image rm pond-slurm/tiny:1 >/dev/null 2>&1
        # shellcheck disable=SC2016 # the box's sh expands these
        in_box sh -c 'if [ -e "$1" ]; then cp "$1" /etc/pond/worker.json; else rm -f /etc/pond/worker.json; fi
                rm -rf /etc/munge /run/munge /var/spool/slurmd /etc/alternatives/slurmstepd /run/pond-test-no-epilog' \
                sh "$shared/worker.json.orig"
        rm -rf "$shared"
}
trap 'rc=$?; cleanup; (exit $rc); _t_atexit' EXIT

# --- the boxes and the bridge
mkdir -p "$etc" "$shared/specs" "$shared/probes" "$shared/keys" "$shared/results" "$shared/log"
chmod 0755 "$shared" "$shared/results"
for b in "$W2" "$CTL"; do
        if ! "$POND_BOX_TOOL" start "$b" --bind "$build" --bind-ro "$POND_SRCDIR" >"$shared/log/$b.box" 2>&1; then
                diag "$(cat "$shared/log/$b.box")"
                bail_out "could not start the box $b"
        fi
done
cpid=$("$POND_BOX_TOOL" init-pid "$CTL")
ip link add slurm0 netns "$("$POND_BOX_TOOL" init-pid "$POND_BOX")" type veth peer name w1 netns "$cpid"
ip link add slurm0 netns "$("$POND_BOX_TOOL" init-pid "$W2")" type veth peer name w2 netns "$cpid"
ctl sh -c "ip link add br0 type bridge && ip link set w1 master br0 && ip link set w2 master br0 &&
        ip addr add $NET.1/24 dev br0 && ip link set br0 up && ip link set w1 up && ip link set w2 up"
for n in 1 2; do
        on "$n" sh -c "ip addr add $NET.$((n + 1))/24 dev slurm0 && ip link set slurm0 up"
done
t_eq "both workers' links are on the controller's bridge" "w1 w2" \
        "$(ctl ip -br link show master br0 | cut -d@ -f1 | sort | tr '\n' ' ' | sed 's/ $//')"

# --- worker 2: runsc present but not working (the probe finds it fails; pond-run cannot run it), pond
# installed, a small image of its own
w2 mount --bind /bin/false /usr/bin/runsc
t_ok "worker 2: pond installed" w2 "$POND_SRCDIR/tools/box-install" "$build"
printf 'int main(void) { return 0; }\n' | gcc -static -Os -x c - -o "$shared/true" ||
        bail_out "cannot build a static true for the test image"
python3 - "$shared/true" "$shared/tiny.docker.tar" <<'EOF'
import hashlib, io, json, sys, tarfile
src, out = sys.argv[1:3]
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w") as t:
    d = tarfile.TarInfo("bin"); d.type = tarfile.DIRTYPE; d.mode = 0o755; t.addfile(d)
    ti = t.gettarinfo(src, arcname="bin/true"); ti.uid = ti.gid = 0; ti.mode = 0o755
    with open(src, "rb") as f:
        t.addfile(ti, f)
layer = layer.getvalue()
lsha = hashlib.sha256(layer).hexdigest()
config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/bin"]},
                     "rootfs": {"type": "layers", "diff_ids": ["sha256:" + lsha]}}).encode()
csha = hashlib.sha256(config).hexdigest()
with tarfile.open(out, "w") as t:
    def add(name, data):
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    add(csha + ".json", config)
    add(lsha + "/layer.tar", layer)
    add("manifest.json", json.dumps([{"Config": csha + ".json", "RepoTags": ["pond-slurm/tiny:1"],
                                      "Layers": [lsha + "/layer.tar"]}]).encode())
EOF
digest=$(w2 "$PONDCTL" image import "$shared/tiny.docker.tar" --name pond-slurm/tiny:1 2>"$shared/log/import")
t_like "worker 2: the test image imported" "^sha256:" "$digest" || diag "$(cat "$shared/log/import")"

# --- each worker's ceiling (one job at a time, refused beyond it) and tags, probe, key and node line
in_box sh -c '[ ! -e /etc/pond/worker.json ] || cat /etc/pond/worker.json' >"$shared/worker.json.orig"
[ -s "$shared/worker.json.orig" ] || rm -f "$shared/worker.json.orig"
for n in 1 2; do
        tags='"pool:trusted"'
        [ "$n" = 1 ] || tags='"pool:trusted", "pool:any"'
        # shellcheck disable=SC2016 # the box's sh expands $1
        on "$n" sh -c 'mkdir -p /etc/pond && echo "$1" > /etc/pond/worker.json' \
                sh "{\"max_jobs\": 1, \"when_full\": \"refuse\", \"tags\": [$tags]}"
        on "$n" "$PONDCTL" probe --json >"$shared/probes/w$n.json" 2>/dev/null
        on "$n" cat /etc/pond/keys/sign.pub >"$shared/keys/w$n.pub"
        on "$n" "$PONDCTL" slurm-node --name "w$n" >"$shared/node$n" 2>"$shared/log/node$n"
        t_like "worker $n describes itself as a node (CPUs within max_jobs 1)" "^NodeName=w$n CPUs=1 .*pool_trusted" \
                "$(cat "$shared/node$n")" || diag "$(cat "$shared/log/node$n")"
done
t_like "worker 2's Features carry its worker.json's pool:any" "pool_any" "$(cat "$shared/node2")"
t_fail "control: worker 1's do not" grep -q pool_any "$shared/node1"
t_eq "the probe reports worker 1's tags from its worker.json" "['pool:trusted']" \
        "$(json "$shared/probes/w1.json" 'j["tags"]')"
t_like "worker 1 advertises runsc" "sb_runsc" "$(cat "$shared/node1")"
t_fail "worker 2 does not (its runsc does not work)" grep -q sb_runsc "$shared/node2"
t_like "worker 2 advertises its image by digest" "img_${digest:7:12}" "$(cat "$shared/node2")"
t_fail "worker 1 does not have it" grep -q "img_${digest:7:12}" "$shared/node1"

# --- the cluster's configuration, one file for every node
ctlhost=$(ctl hostname)
epilog=$PREFIX/libexec/pond/pond-slurm-epilog
cat >"$etc/slurm.conf" <<EOF
ClusterName=pond
SlurmctldHost=$ctlhost($NET.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=cred_expire=10
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$shared/log/slurmctld.log
SlurmdLogFile=$shared/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=10
KillWait=10
SchedulerParameters=batch_sched_delay=0,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$ctlhost
AccountingStorageEnforce=associations,limits
JobAcctGatherType=jobacct_gather/linux
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
RequeueExit=75
JobRequeue=1
Epilog=$shared/epilog
PriorityCalcPeriod=1
$(sed "s/^NodeName=w1 /NodeName=w1 NodeAddr=$NET.2 /" "$shared/node1")
$(sed "s/^NodeName=w2 /NodeName=w2 NodeAddr=$NET.3 /" "$shared/node2")
PartitionName=trusted Nodes=w1,w2 Default=YES MaxTime=60 State=UP
PartitionName=any Nodes=w1,w2 MaxTime=60 State=UP
EOF
# pond's Epilog, unless a control run turned it off on that node
cat >"$shared/epilog" <<EOF
#!/bin/sh
[ -e /run/pond-test-no-epilog ] && exit 0
exec $epilog
EOF
chmod 0755 "$shared/epilog"
cat >"$etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=$ctlhost
DbdAddr=$NET.1
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
LogFile=$shared/log/slurmdbd.log
PidFile=/run/slurmdbd.pid
EOF
chmod 0600 "$etc/slurmdbd.conf"
cat >"$etc/hosts" <<EOF
127.0.0.1 localhost
$NET.1 $ctlhost
$NET.2 w1
$NET.3 w2
EOF

# --- munge everywhere (one key), the database and the controller, then each worker's slurmd
head -c 1024 /dev/urandom >"$etc/munge.key"
start_munge() {
        # shellcheck disable=SC2016 # the box's sh expands $1
        "$@" sh -c 'mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge && cp "$1" /etc/munge/munge.key &&
                chmod 0400 /etc/munge/munge.key && systemd-run -q --unit=pond-slurm-munge.service munged -F --force' \
                sh "$etc/munge.key"
}
start_munge ctl
start_munge in_box
start_munge w2
for b in ctl in_box w2; do
        # Slurm's daemons and slurmstepd are links through /etc/alternatives, which a box has not; the node
        # names resolve through /etc/hosts.
        # shellcheck disable=SC2016 # the box's sh expands $1
        $b sh -c 'mkdir -p /etc/alternatives && for d in slurmctld slurmd slurmstepd; do
                        ln -sf /usr/sbin/$d-wlm /etc/alternatives/$d; done
                grep -q " w2$" /etc/hosts 2>/dev/null || cat "$1" >> /etc/hosts' sh "$etc/hosts"
done
ctl sh -c 'mkdir -p /run/mysqld /var/lib/mysql /var/spool/slurmctld &&
        mariadb-install-db --user=root --datadir=/var/lib/mysql --skip-test-db >/dev/null 2>&1 &&
        systemd-run -q --unit=pond-slurm-db.service mariadbd --user=root --datadir=/var/lib/mysql \
                --socket=/run/mysqld/mysqld.sock --skip-networking'
for _ in $(seq 200); do ctl mariadb -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
t_ok "MariaDB answers on the controller" ctl mariadb -e 'select 1'
ctl systemd-run -q --unit=pond-slurm-dbd.service -E SLURM_CONF="$etc/slurm.conf" slurmdbd -D
for _ in $(seq 200); do ctl sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.1; done
t_ok "slurmdbd answers" ctl sacctmgr -n list cluster
ctl sacctmgr -i add cluster pond >/dev/null
ctl sacctmgr -i add account acme,beta >/dev/null
ctl sacctmgr -i add user root account=acme,beta defaultaccount=acme >/dev/null
ctl systemd-run -q --unit=pond-slurm-ctld.service slurmctld -D -f "$etc/slurm.conf"
for n in 1 2; do
        on "$n" mkdir -p /var/spool/slurmd
        on "$n" systemd-run -q --unit=pond-slurm-slurmd.service slurmd -D -N "w$n" -f "$etc/slurm.conf"
done
states=
for _ in $(seq 300); do
        states=$(ctl sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | tr '\n' ' ')
        [ "$states" = "w1 idle w2 idle " ] && break
        sleep 0.2
done
t_eq "both workers are idle nodes of the cluster" "w1 idle w2 idle " "$states" ||
        diag "$(tail -n 20 "$shared/log/slurmctld.log" 2>&1)"

# usage TENANT: the tenant's account's raw usage (CPU-seconds charged as its jobs end)
usage() { ctl sshare -n -P -A "$1" -o Account,RawUsage 2>/dev/null | awk -F'|' -v a="$1" '$1 ~ a { print $2; exit }'; }
t_eq "control: before any job, neither tenant has used anything" "0 0" "$(usage acme) $(usage beta)"

# --- figures (tools/bench-slurm): with POND_SLURM_BENCH=ROUNDS, before the scenarios
if [ -n "${POND_SLURM_BENCH:-}" ]; then
        bench=$POND_SRCDIR/tests/integration/slurm-bench.py
        brc=0 lrc=0
        ctl python3 "$bench" slurm "$shared" "$CTL_PONDCTL" "$WRAPPER" "$POND_SRCDIR/policy" "$POND_SLURM_BENCH" \
                >"$shared/log/bench" 2>&1 || brc=$?
        in_box python3 "$bench" local "$shared" "$PONDCTL" "$POND_SLURM_BENCH" >>"$shared/log/bench" 2>&1 || lrc=$?
        t_eq "bench: jobs through Slurm, every result verified" 0 "$brc"
        t_eq "bench: the same job with pondctl run on worker 1" 0 "$lrc"
        while read -r line; do diag "$line"; done <"$shared/log/bench"
fi

# spec ID TENANT COMMAND-JSON SANDBOX-JSON: a job spec file in the shared directory; prints its path
spec() {
        printf '{"job_id":"%s","tenant":"%s","command":%s,"limits":{"wall_clock_s":120},"sandbox":%s}\n' \
                "$1" "$2" "$3" "$4" >"$shared/specs/$1.json"
        echo "$shared/specs/$1.json"
}
# submit SPEC [SBATCH-OPTIONS...]: slurm-args against both workers' probes, then sbatch with the wrapper;
# prints the Slurm job id (empty if refused: the reason in $shared/log/refused)
submit() {
        local s=$1 args; shift
        args=$(ctl "$CTL_PONDCTL" slurm-args "$s" --policy "$POND_SRCDIR/policy" --worker "$shared/probes/w1.json" \
                --worker "$shared/probes/w2.json" 2>"$shared/log/refused") || return 0
        # shellcheck disable=SC2086 # one option per line, none with a space
        ctl sbatch --parsable -o "$shared/log/slurm-%j.out" $args "$@" "$WRAPPER" "$s" "$shared/results"
}
# field JOBID FIELD: sacct's FIELD of the job's latest run (a requeued job has one record per run: -D)
field() { ctl sacct -n -X -D -P -j "$1" -o "$2" 2>/dev/null | tail -n1; }
# wait_done JOBID: until Slurm has finished it (a run lost with its node is requeued: not finished);
# prints its final state
wait_done() {
        local st=
        for _ in $(seq 600); do
                st=$(field "$1" State)
                case $st in COMPLETED|FAILED|CANCELLED*|TIMEOUT|OUT_OF_ME*) break ;; esac
                sleep 0.2
        done
        echo "$st"
}
RCS='{"profile":"untrusted-code-read","backend":"runsc","overrides":{"cpus":1,"memory":"256M"}}'
RC='{"profile":"untrusted-code-read","overrides":{"cpus":1,"memory":"256M"}}'

# --- placement: runsc only on worker 1, the image only on worker 2; a kata job nowhere
t0=$(date +%s%N)
j1=$(submit "$(spec "sl-runsc-$$" acme '["true"]' "$RCS")")
j2=$(submit "$(spec "sl-image-$$" acme '["/bin/true"]' \
        '{"profile":"untrusted-code-read","overrides":{"cpus":1,"memory":"256M","image":"pond-slurm/tiny:1"}}')")
t_eq "the runsc job completes" COMPLETED "$(wait_done "$j1")"
t_eq "the image job completes" COMPLETED "$(wait_done "$j2")"
diag "two jobs through Slurm, sbatch to both COMPLETED: $((($(date +%s%N) - t0) / 1000000)) ms"
t_eq "sacct: the runsc job ran on worker 1" w1 "$(field "$j1" NodeList)"
t_eq "sacct: the image job ran on worker 2" w2 "$(field "$j2" NodeList)"
runsc_args=$(ctl "$CTL_PONDCTL" slurm-args "$shared/specs/sl-runsc-$$.json" --policy "$POND_SRCDIR/policy")
# shellcheck disable=SC2086 # one option per line, none with a space
t_ok "the runsc job's options fit worker 1 (sbatch --test-only -w w1)" ctl sbatch --test-only -w w1 $runsc_args "$WRAPPER"
# shellcheck disable=SC2086
t_fail "control: its constraint does not fit worker 2 (sbatch --test-only -w w2 refuses it)" \
        ctl sbatch --test-only -w w2 $runsc_args "$WRAPPER"
jk=$(submit "$(spec "sl-kata-$$" acme '["true"]' '{"profile":"untrusted-code-read","backend":"kata"}')")
t_eq "a kata job is refused before Slurm sees it" "" "$jk"
for n in 1 2; do
        reason=$("$CTL_PONDCTL" dispatch-check --policy "$POND_SRCDIR/policy" --worker "$shared/probes/w$n.json" \
                --worker-tags pool:trusted --tenant acme <<<'{"profile":"untrusted-code-read","backend":"kata"}' |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["worker"]["reason"])')
        t_like "the refusal gives dispatch-check's reason for worker $n" "w$n: ${reason//[()]/.}" \
                "$(cat "$shared/log/refused")"
done

# --- trust: each result verifies with its worker's key, not with the other's
for pair in "sl-runsc-$$ 1 2" "sl-image-$$ 2 1"; do
        read -r task own other <<<"$pair"
        t_ok "$task's result verifies with worker $own's key" \
                "$CTL_PONDCTL" verify --pubkey "$shared/keys/w$own.pub" --job-id "$task-a0" "$shared/results/$task-a0"
        t_fail "control: not with worker $other's" \
                "$CTL_PONDCTL" verify --pubkey "$shared/keys/w$other.pub" --job-id "$task-a0" "$shared/results/$task-a0"
done

# --- the worker still decides: a tier any job forced onto worker 1 (-w, without the constraint that keeps
# Slurm from placing it there) is refused by worker 1's pond, signed; the same job on worker 2 runs
ANY='{"profile":"untrusted-code-read","tier":"any","overrides":{"cpus":1,"memory":"256M"}}'
t_like "slurm-args asks for pool_any for a tier any job" "^--constraint=.*pool_any" \
        "$(ctl "$CTL_PONDCTL" slurm-args "$(spec "sl-any-w1-$$" acme '["true"]' "$ANY")" --policy "$POND_SRCDIR/policy" \
                --worker "$shared/probes/w1.json" --worker "$shared/probes/w2.json" | grep constraint)"
forced() { # forced TASK NODE: the job's sbatch options but its constraint, pinned to NODE
        local args
        args=$(ctl "$CTL_PONDCTL" slurm-args "$shared/specs/$1.json" --policy "$POND_SRCDIR/policy" | grep -v '^--constraint=')
        # shellcheck disable=SC2086 # one option per line, none with a space
        ctl sbatch --parsable -o "$shared/log/slurm-%j.out" -w "$2" $args "$WRAPPER" "$shared/specs/$1.json" "$shared/results"
}
ja=$(forced "sl-any-w1-$$" w1)
spec "sl-any-w2-$$" acme '["true"]' "$ANY" >/dev/null
jb=$(forced "sl-any-w2-$$" w2)
t_eq "a tier any job sent to worker 1 with -w: the wrapper fails" FAILED "$(wait_done "$ja")"
t_eq "sacct ExitCode 125 (the worker refused), not the requeue code" 125:0 "$(field "$ja" ExitCode)"
t_eq "not requeued: one run in sacct -D" 1 "$(ctl sacct -n -X -D -j "$ja" -o JobID 2>/dev/null | wc -l)"
t_eq "worker 1's pond signed it refused" refused "$(json "$shared/results/sl-any-w1-$$-a0/result.json" 'j["status"]')"
t_like "the reason names the tag worker 1 lacks" "does not carry 'pool:any'.*it carries pool:trusted" \
        "$(json "$shared/results/sl-any-w1-$$-a0/result.json" 'j["reason"]')"
t_ok "the refusal verifies with worker 1's key" \
        "$CTL_PONDCTL" verify --pubkey "$shared/keys/w1.pub" --job-id "sl-any-w1-$$-a0" "$shared/results/sl-any-w1-$$-a0"
t_eq "control: the same job sent to worker 2 completes" COMPLETED "$(wait_done "$jb")"
t_eq "control: signed completed by worker 2" completed \
        "$(json "$shared/results/sl-any-w2-$$-a0/result.json" 'j["status"]')"

# --- accounting: the payload's rc is the job's exit code, never requeued; the account is the tenant
j3=$(submit "$(spec "sl-exit3-$$" beta '["sh","-c","exit 3"]' "$RC")")
t_eq "a payload that exits 3: Slurm says FAILED" FAILED "$(wait_done "$j3")"
t_eq "sacct ExitCode 3:0" 3:0 "$(field "$j3" ExitCode)"
t_eq "not requeued: one run in sacct -D" 1 "$(ctl sacct -n -X -D -j "$j3" -o JobID 2>/dev/null | wc -l)"
t_eq "its account is its tenant" beta "$(field "$j3" Account)"
t_eq "control: the first jobs' account is theirs" acme "$(field "$j1" Account)"
t_eq "the signed result has rc 3" 3 \
        "$(json "$shared/results/sl-exit3-$$-a0/result.json" 'j["exit"]["rc"]')"

# --- queueing: four jobs on two one-job workers: some wait for Resources, none is refused, all complete
q=()
for i in 1 2 3 4; do
        q+=("$(submit "$(spec "sl-q$i-$$" acme '["sleep","2"]' "$RC")")")
done
pending=
for _ in $(seq 100); do
        pending=$(ctl squeue -h -t PD -o '%r' 2>/dev/null | sort -u | tr '\n' ' ')
        [[ $pending =~ Resources|Priority ]] && break
        sleep 0.1
done
t_like "more jobs than CPUs: some wait in the queue" "Resources|Priority" "$pending"
for i in 1 2 3 4; do
        t_eq "queued job $i completes" COMPLETED "$(wait_done "${q[$((i - 1))]}")"
        t_eq "its result is signed completed (not refused by the worker's ceiling)" completed \
                "$(json "$shared/results/sl-q$i-$$-a0/result.json" 'j["status"]')"
done

# --- cancel: scancel gives a signed "cancelled"; a wrapper killed with -9 leaves no pond job once the
# Epilog ran
j4=$(submit "$(spec "sl-cancel-$$" acme '["sleep","300"]' "$RC")")
for _ in $(seq 300); do [ "$(field "$j4" State)" = RUNNING ] && break; sleep 0.2; done
node=$(field "$j4" NodeList)
for _ in $(seq 300); do
        [ "$(on "${node#w}" "$PONDCTL" status --json "sl-cancel-$$-a0" 2>/dev/null | python3 -c \
                'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)" = running ] && break
        sleep 0.2
done
ctl scancel "$j4"
t_like "scancel: Slurm says CANCELLED" CANCELLED "$(wait_done "$j4")"
for _ in $(seq 100); do [ -e "$shared/results/sl-cancel-$$-a0" ] && break; sleep 0.2; done
t_eq "the pond job's signed result says cancelled" cancelled \
        "$(json "$shared/results/sl-cancel-$$-a0/result.json" 'j["status"]')"
t_ok "and it verifies with its worker's key" "$CTL_PONDCTL" verify --pubkey "$shared/keys/$node.pub" \
        --job-id "sl-cancel-$$-a0" "$shared/results/sl-cancel-$$-a0"

# pond_state NODE ID: the pond job's state on worker NODE (w1, w2)
pond_state() {
        on "${1#w}" "$PONDCTL" status --json "$2" 2>/dev/null |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null
}
# killed TASK: submits TASK (sleep 300) to worker 1, waits for its pond job to run, kills its batch script
# with -9, waits until Slurm has finished the job and worker 1 is idle again (its Epilog has run)
killed() {
        local j state='' node=''
        j=$(submit "$(spec "$1" acme '["sleep","300"]' "$RC")" -w w1)
        for _ in $(seq 600); do
                state=$(pond_state w1 "$1-a0")
                [ "$state" = running ] && break
                sleep 0.2
        done
        [ "$state" = running ] || diag "the pond job $1-a0 did not start: $state"
        in_box pkill -KILL -f "slurm_script $shared/specs/$1.json"
        wait_done "$j" >/dev/null
        for _ in $(seq 150); do
                node=$(ctl sinfo -h -n w1 -o %t 2>/dev/null)
                [ "$node" = idle ] && break
                sleep 0.2
        done
}
in_box touch /run/pond-test-no-epilog
killed "sl-noepi-$$"
t_eq "control: wrapper killed with -9 and no Epilog on the node: the pond job is left running" running \
        "$(pond_state w1 "sl-noepi-$$-a0")"
in_box rm -f /run/pond-test-no-epilog
in_box "$PONDCTL" cancel "sl-noepi-$$-a0" >/dev/null 2>&1
since=$(in_box date '+%Y-%m-%d %H:%M:%S')
killed "sl-kill-$$"
for _ in $(seq 100); do
        state=$(pond_state w1 "sl-kill-$$-a0")
        [ "$state" = cancelled ] && break
        sleep 0.2
done
t_eq "wrapper killed with -9: the Epilog cancelled its pond job (signed cancelled)" cancelled "$state"
t_like "worker 1's journal has the Epilog's record of it" "cancelled pond job sl-kill-$$-a0" \
        "$(in_box journalctl -q -t pond-slurm-epilog --since "$since" -o cat 2>&1)"

# --- features kept current without a restart: the image imported on worker 1 too, its node updated
t_eq "control: Slurm does not see the image on worker 1 yet" "" \
        "$(ctl scontrol show node w1 | grep -o "img_${digest:7:12}")"
in_box "$PONDCTL" image import "$shared/tiny.docker.tar" --name pond-slurm/tiny:1 >/dev/null 2>&1
# shellcheck disable=SC2046 # NodeName=... AvailableFeatures=... ActiveFeatures=..., none with a space
ctl scontrol update $(in_box "$PONDCTL" slurm-node --name w1 --update)
t_like "scontrol update from slurm-node --update: worker 1's node has the image's feature" \
        "ActiveFeatures=.*img_${digest:7:12}" "$(ctl scontrol show node w1)"

# --- worker loss: worker 2 powered off mid-job; Slurm requeues the job, worker 1 runs attempt 1, and only
# attempt 1's result exists
ctl scontrol update NodeName=w1 State=DRAIN Reason=test >/dev/null
j6=$(submit "$(spec "sl-loss-$$" acme '["sleep","8"]' "$RC")")
for _ in $(seq 300); do [ "$(field "$j6" State)" = RUNNING ] && break; sleep 0.2; done
t_eq "the long job runs on worker 2" w2 "$(field "$j6" NodeList)"
ctl scontrol update NodeName=w1 State=RESUME >/dev/null
for _ in $(seq 300); do
        [ "$(w2 "$PONDCTL" status --json "sl-loss-$$-a0" 2>/dev/null | python3 -c \
                'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)" = running ] && break
        sleep 0.2
done
t0=$(date +%s%N)
POND_BOX_QUIET=1 POND_BOX_STOP_TIMEOUT=0 "$POND_BOX_TOOL" stop "$W2" >/dev/null 2>&1
for _ in $(seq 600); do [ "$(pond_state w1 "sl-loss-$$-a1")" = running ] && break; sleep 0.1; done
diag "worker 2 powered off to attempt 1 running on worker 1: $((($(date +%s%N) - t0) / 1000000)) ms"
t_eq "after worker 2's loss the job completes" COMPLETED "$(wait_done "$j6")"
diag "worker 2 powered off to the requeued job's end on worker 1: $((($(date +%s%N) - t0) / 1000000)) ms"
t_eq "the requeued run was on worker 1" w1 "$(field "$j6" NodeList)"
t_like "sacct -D: the lost run, then the completed one" "NODE_FAIL.*COMPLETED" \
        "$(ctl sacct -n -X -D -P -j "$j6" -o State 2>/dev/null | tr '\n' ' ')"
t_ok "attempt 1's result verifies with worker 1's key" \
        "$CTL_PONDCTL" verify --pubkey "$shared/keys/w1.pub" --job-id "sl-loss-$$-a1" "$shared/results/sl-loss-$$-a1"
t_eq "exactly one result exists for the task, attempt 1's" "sl-loss-$$-a1" \
        "$(cd "$shared/results" && ls -d "sl-loss-$$"-a*)"

# --- fair share: acme ran many jobs, beta one short one: acme has used more and ranks behind
ua=$(usage acme) ub=$(usage beta)
t_ok "acme's usage ($ua) is charged above beta's ($ub)" test "${ua:-0}" -gt "${ub:-0}"
# fairshare TENANT: its account's FairShare factor (recomputed every PriorityCalcPeriod, one minute)
# (fair tree gives it on the account's user associations)
fairshare() {
        ctl sshare -a -n -P -A "$1" -o Account,FairShare 2>/dev/null | awk -F'|' -v a="$1" '$1 ~ a && $2 != "" { print $2; exit }'
}
fa='' fb=''
for _ in $(seq 140); do
        fa=$(fairshare acme) fb=$(fairshare beta)
        awk -v a="${fa:-0}" -v b="${fb:-0}" 'BEGIN { exit !(b > a) }' && break
        sleep 0.5
done
t_ok "sshare ranks beta (FairShare $fb) above acme ($fa)" awk -v a="${fa:-0}" -v b="${fb:-0}" 'BEGIN { exit !(b > a) }'
diag "sshare: $(ctl sshare -n -P -A acme,beta -o Account,RawUsage,FairShare 2>/dev/null | tr '\n' ' ')"
done_testing
