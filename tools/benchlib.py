# SPDX-License-Identifier: LGPL-2.1-or-later
"""tools/benchlib.py: what the benchmarks under tools/ share: the bare-runtime bundle that is their baseline,
percentiles, and an inventory of the worker's job state (to show a run left nothing behind)."""
import json
import os
import subprocess


def build_bundle(top, runc="runc"):
    """An OCI bundle in TOP with the layout of pond's embedded "host" image: an empty rootfs with mount points
    usr etc proc dev sys tmp workspace and the usr-merge links, /usr bound read-only, a small generated /etc
    bound read-only, root read-only, user 1000:1000, cwd /, args ["true"]. Returns the bundle's path."""
    bundle = os.path.join(top, "bundle")
    rootfs = os.path.join(bundle, "rootfs")
    etc = os.path.join(top, "etc")
    os.makedirs(rootfs)
    for d in ("usr", "etc", "proc", "dev", "sys", "tmp", "workspace"):
        os.mkdir(os.path.join(rootfs, d))
    for link in ("bin", "sbin", "lib", "lib64"):
        if os.path.isdir("/usr/" + link):
            os.symlink("usr/" + link, os.path.join(rootfs, link))
    os.mkdir(etc)
    files = {
        "passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\nuser:x:1000:1000:user:/workspace:/bin/sh\n",
        "group": "root:x:0:\nuser:x:1000:\n",
        "hosts": "127.0.0.1\tlocalhost\n",
        "hostname": "sandbox\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
        "resolv.conf": "",
    }
    for name, text in files.items():
        with open(os.path.join(etc, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(etc, name), 0o644)
    os.chmod(etc, 0o755)
    os.chmod(top, 0o755)
    subprocess.run([runc, "spec", "--bundle", bundle], check=True)
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["process"]["args"] = ["true"]
    cfg["process"]["terminal"] = False
    cfg["process"]["user"] = {"uid": 1000, "gid": 1000}
    cfg["process"]["cwd"] = "/"
    cfg["root"] = {"path": "rootfs", "readonly": True}
    cfg["mounts"] += [
        {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro", "nosuid", "nodev"]},
        {"destination": "/etc", "type": "bind", "source": etc, "options": ["rbind", "ro", "nosuid", "nodev"]},
    ]
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
    return bundle


def pct(xs, q):
    """The nearest-rank q-th percentile of xs."""
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(-(-q * len(xs) // 100)) - 1))
    return xs[k]


def cpu_seconds():
    """CPU time used so far by everything in this cgroup namespace's root: the whole machine on a host, the
    box in a box (so other work on the machine does not count). None where neither file is readable."""
    try:
        with open("/sys/fs/cgroup/cpuacct/cpuacct.usage") as f:
            return int(f.read()) / 1e9
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/cpu.stat") as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    except OSError:
        pass
    return None


def _lines(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return p.stdout.decode(errors="replace").splitlines()


def _tree(top, depth):
    out = set()
    if not os.path.isdir(top):
        return out
    for d, dirs, names in os.walk(top):
        rel = os.path.relpath(d, top)
        level = 0 if rel == "." else rel.count("/") + 1
        for n in dirs + names:
            out.add(os.path.join(d, n))
        if level + 1 >= depth:
            dirs[:] = []
    return out


def _fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _pids(comm):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() == comm:
                        out.append(d)
            except OSError:
                pass
    return out


def inventory():
    """What a job may leave behind on this worker, as {kind: set of names}: mount points, netns, network
    links, nft tables, cgroups and units of pond, the run directories' entries (staging, leases, runtime
    state) and the open fds of the long-lived processes jobs talk to (PID 1, journald, the D-Bus daemon)."""
    inv = {}
    with open("/proc/self/mountinfo") as f:
        inv["mounts"] = {line.split()[4] for line in f}
    inv["netns"] = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    inv["links"] = {line.split(":")[1].strip().split("@")[0] for line in _lines(["ip", "-o", "link", "show"])
                    if line.count(":") >= 2}
    inv["nft tables"] = {line for line in _lines(["nft", "list", "tables"]) if line.strip()}
    inv["cgroups"] = set()
    for hierarchy in os.listdir("/sys/fs/cgroup"):
        for top in (os.path.join("/sys/fs/cgroup", hierarchy, "pond.slice"),
                    os.path.join("/sys/fs/cgroup", hierarchy, "system.slice")):
            inv["cgroups"] |= {c for c in _tree(top, 2) if os.path.basename(c).startswith("pond-") and
                               os.path.isdir(c)}
    inv["units"] = {line.split()[0] for line in _lines(["systemctl", "list-units", "--all", "--plain",
                                                        "--no-legend", "pond-*"]) if line.strip()}
    inv["run state"] = set()
    for top in ("/run/pond", "/run/pond-egress", "/run/pond-broker"):
        inv["run state"] |= _tree(top, 2)
    inv["fds"] = {}
    for comm in ("systemd", "systemd-journal", "dbus-daemon"):
        for pid in _pids(comm):
            if comm != "systemd" or pid == "1":
                inv["fds"][f"{comm}[{pid}]"] = _fds(pid)
    return inv


def inventory_diff(before, after, fd_slack=16):
    """Lines naming what AFTER has that BEFORE had not (left behind), per kind. The long-lived processes'
    fds come and go with their own work (journal streams, D-Bus connections): more than FD_SLACK new
    ones count as left behind (a leak of one a job shows as one per job)."""
    out = []
    for kind in before:
        if kind == "fds":
            grown = [f"{p}: {before[kind][p]} -> {n}" for p, n in after[kind].items()
                     if n - before[kind].get(p, n) > fd_slack]
            if grown:
                out.append("fds: " + ", ".join(grown))
            continue
        extra = sorted(after[kind] - before[kind])
        if extra:
            out.append(f"{kind}: {len(extra)} left: " + ", ".join(extra[:8]) + (" ..." if len(extra) > 8 else ""))
    return out


def fd_counts(inv):
    """The long-lived processes' fd counts, for a report."""
    return ", ".join(f"{p} {n}" for p, n in sorted(inv["fds"].items()))
