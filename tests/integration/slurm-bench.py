#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# slurm-bench.py: the measurements test-slurm.sh makes when POND_SLURM_BENCH=N (tools/bench-slurm,
# docs/benchmarks.md "Slurm"), run inside the boxes of its cluster.
#   slurm-bench.py slurm SHARED PONDCTL WRAPPER POLICY ROUNDS   (on the controller)
#       ROUNDS jobs one at a time: sbatch to the payload's start (its own clock, printed) and to the
#       verified result in RESULTS; then 100 `true` jobs at once: wall time, jobs/s, every result verified
#       with the key of the worker sacct names.
#   slurm-bench.py local SHARED PONDCTL ROUNDS                  (on a worker)
#       the same job with `pondctl run` on the worker: to the payload's start and to its end.
import json, os, statistics, subprocess, sys, time

SPEC = {"tenant": "acme", "command": ["sh", "-c", "date +%s%N"], "limits": {"wall_clock_s": 60},
        "sandbox": {"profile": "untrusted-code-read", "overrides": {"cpus": 1, "memory": "256M"}}}


def spec(shared, task, command=None):
    path = os.path.join(shared, "specs", task + ".json")
    with open(path, "w") as f:
        json.dump(dict(SPEC, job_id=task, command=command or SPEC["command"]), f)
    return path


def wait_for(path, timeout=300):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit(f"no {path} after {timeout} s")
        time.sleep(0.005)
    return time.time_ns()


def ms(ns):
    return ns / 1e6


def report(name, values):
    print(f"{name}: median {statistics.median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f},"
          f" n={len(values)})", flush=True)


def slurm(shared, pondctl, wrapper, policy, rounds):
    results = os.path.join(shared, "results")
    probes = [a for n in (1, 2) for a in ("--worker", os.path.join(shared, "probes", f"w{n}.json"))]
    args = subprocess.run([pondctl, "slurm-args", spec(shared, "sl-b-args"), "--policy", policy] + probes,
                          check=True, stdout=subprocess.PIPE, text=True).stdout.split()

    def sbatch(task, out):
        subprocess.run(["sbatch", "--parsable", "-o", out] + args + [f"--job-name={task}", wrapper,
                       spec(shared, task), results], check=True, stdout=subprocess.DEVNULL)

    start, whole = [], []
    for i in range(rounds):
        task = f"sl-b{i}"
        out = os.path.join(shared, "log", task + ".out")
        t0 = time.time_ns()
        sbatch(task, out)
        t1 = wait_for(os.path.join(results, task + "-a0"))
        payload = int(open(out).read().split()[0])
        start.append(ms(payload - t0))
        whole.append(ms(t1 - t0))
    report("slurm: sbatch to payload start", start)
    report("slurm: sbatch to verified result (a whole job)", whole)

    n = 100
    t0 = time.time_ns()
    ids = []
    for i in range(n):
        task = f"sl-c{i}"
        r = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null"] + args +
                           [f"--job-name={task}", wrapper, spec(shared, task, ["true"]), results],
                           check=True, stdout=subprocess.PIPE, text=True)
        ids.append(r.stdout.strip().split(";")[0])
    t1 = max(wait_for(os.path.join(results, f"sl-c{i}-a0")) for i in range(n))
    wall = (t1 - t0) / 1e9
    nodes = {}
    sacct = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID,NodeList", "-j", ",".join(ids)],
                           check=True, stdout=subprocess.PIPE, text=True).stdout
    for line in sacct.split():
        jid, node = line.split("|")
        nodes[jid] = node
    verified, per = 0, {}
    for i, jid in enumerate(ids):
        node = nodes.get(jid, "?")
        per[node] = per.get(node, 0) + 1
        r = subprocess.run([pondctl, "verify", "--pubkey", os.path.join(shared, "keys", node + ".pub"),
                            "--job-id", f"sl-c{i}-a0", os.path.join(results, f"sl-c{i}-a0")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        verified += r.returncode == 0
    print(f"slurm: {n} true jobs: wall {wall:.1f} s, {n / wall:.2f} jobs/s, {verified}/{n} verified "
          f"with their worker's key, per node {per}", flush=True)
    return 0 if verified == n else 1


def local(shared, pondctl, rounds):
    start, whole = [], []
    for i in range(rounds):
        task = f"sl-l{i}"
        t0 = time.time_ns()
        r = subprocess.run([pondctl, "run", "-q", "--spec", spec(shared, task), "--job-id", task],
                           check=True, stdout=subprocess.PIPE, text=True)
        t1 = time.time_ns()
        start.append(ms(int(r.stdout.split()[0]) - t0))
        whole.append(ms(t1 - t0))
    report("pondctl run on the worker: to payload start", start)
    report("pondctl run on the worker: a whole job", whole)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "slurm":
        sys.exit(slurm(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])))
    sys.exit(local(sys.argv[2], sys.argv[3], int(sys.argv[4])))
