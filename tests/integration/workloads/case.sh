#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# case.sh NAME: one case of pond's workload suite (tests/integration/test-workloads.sh), run from the root of
# the checkout this directory becomes: in a pond job (cwd /workspace) and in its oracle outside pond (cwd a
# copy of the same tree), as uid 1000 with HOME and TMPDIR a private empty directory. What is big or many
# files (venvs, caches, clones, node_modules) goes under TMPDIR so that the job's change set stays small.
# Exit status 0 and a last line "case NAME ok" when the case passed.
set -euo pipefail
name=${1:?usage: case.sh NAME}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/case-$name.XXXXXX")
# No network anywhere: every tool is told so, so that none waits on a proxy or a resolver.
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
export npm_config_offline=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
export npm_config_cache=$tmp/npm-cache
export GOPROXY=off GOFLAGS=-mod=mod GOCACHE=$tmp/go-cache GOPATH=$tmp/go GOTELEMETRY=off CGO_ENABLED=0
export GIT_AUTHOR_NAME=pond GIT_AUTHOR_EMAIL=pond@example.org
export GIT_COMMITTER_NAME=pond GIT_COMMITTER_EMAIL=pond@example.org
export GIT_CONFIG_NOSYSTEM=1

# py: the Python program on stdin, run from a file (multiprocessing's spawn re-imports the main module by path)
py() {
        cat >"$tmp/$name.py"
        python3 "$tmp/$name.py"
}

case $name in
pytest)
        # pyflakes's own test suite (Debian's python3-pyflakes ships it), copied into the checkout, under pytest
        python3 -m pytest -q -p no:cacheprovider pyflakes/test
        ;;
pytest-xdist)
        # the same suite spread over 2 worker processes by pytest-xdist (execnet: subprocesses and threads)
        python3 -m pytest -q -p no:cacheprovider -n 2 pyflakes/test
        ;;
python-threading)
        py <<'PY'
import concurrent.futures, hashlib, threading
def work(i):
    return hashlib.sha256(str(i).encode() * 10000).hexdigest()
with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
    got = list(ex.map(work, range(64)))
assert got == [work(i) for i in range(64)]
ev, seen = threading.Event(), []
t = threading.Thread(target=lambda: (ev.wait(5), seen.append(threading.get_ident())))
t.start(); ev.set(); t.join()
assert seen and seen[0] != threading.get_ident()
print("threads: 8-thread pool and an event handshake agree")
PY
        ;;
python-multiprocessing)
        py <<'PY'
import multiprocessing as mp
def square(x):
    return x * x
if __name__ == "__main__":
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(4) as pool:
            assert pool.map(square, range(1000)) == [x * x for x in range(1000)], method
    q = mp.Queue()
    p = mp.Process(target=q.put, args=("from the child",))
    p.start(); msg = q.get(timeout=30); p.join()
    assert msg == "from the child" and p.exitcode == 0
    print("multiprocessing: pools by fork, spawn and forkserver, a queue")
PY
        ;;
python-sqlite3)
        # in the checkout: a WAL database (its -shm file is mmapped), two connections, a transaction
        py <<'PY'
import os, sqlite3
path = "wl.db"
for f in (path, path + "-wal", path + "-shm"):
    if os.path.exists(f): os.unlink(f)
a = sqlite3.connect(path)
assert a.execute("pragma journal_mode=wal").fetchone()[0] == "wal"
a.execute("create table t (k integer primary key, v text)")
with a:
    a.executemany("insert into t (v) values (?)", ((str(i) * 10,) for i in range(20000)))
b = sqlite3.connect(path)
assert b.execute("select count(*), sum(length(v)) from t").fetchone()[0] == 20000
a.execute("create index tv on t (v)"); a.commit()
assert b.execute("select k from t where v = ?", ("1234" * 10,)).fetchone() == (1235,)
b.close(); a.execute("pragma wal_checkpoint(truncate)"); a.close()
print("sqlite3: 20000 rows through WAL, seen by a second connection")
PY
        rm -f wl.db wl.db-wal wl.db-shm
        ;;
python-venv-pip)
        # a wheel and an sdist of the checkout's own package, built with the system's setuptools, each
        # installed into a fresh venv without an index
        cp -r pyproj "$tmp/src"
        (cd "$tmp/src" && python3 -m pip wheel --no-deps --no-build-isolation -q -w "$tmp/dist" . &&
                python3 -c 'import setuptools.build_meta as b, sys; print(b.build_sdist(sys.argv[1]))' "$tmp/dist")
        python3 -m venv "$tmp/venv-wheel"
        "$tmp/venv-wheel/bin/pip" install -q "$tmp"/dist/pondwl-1.0-py3-none-any.whl
        # the sdist is built at install time, without an index: with the system's setuptools and wheel
        python3 -m venv --system-site-packages "$tmp/venv-sdist"
        "$tmp/venv-sdist/bin/pip" install -q --no-build-isolation "$tmp"/dist/pondwl-1.0.tar.gz
        for v in wheel sdist; do
                out=$(echo "b a b c b a" | "$tmp/venv-$v/bin/pondwl" 2)
                [ "$out" = "$(printf '3 b\n2 a')" ] || { echo "venv-$v: pondwl printed '$out'"; exit 1; }
                "$tmp/venv-$v/bin/python" -c 'import pondwl, sys; assert sys.prefix != sys.base_prefix, sys.prefix'
        done
        echo "venv: pondwl installed from its wheel and its sdist, its script runs in each"
        ;;
python-spawn)
        # the ways Python starts a program other than subprocess's fork/exec: posix_spawn, system(), popen()
        py <<'PY'
import os, subprocess
pid = os.posix_spawn("/bin/true", ["true"], os.environ)
assert os.waitpid(pid, 0)[1] == 0, "posix_spawn"
assert os.system("exit 3") >> 8 == 3, "os.system"
assert os.popen("echo popen").read() == "popen\n", "os.popen"
assert subprocess.run(["true"], close_fds=False).returncode == 0, "subprocess (posix_spawn path)"
print("spawn: posix_spawn, system, popen")
PY
        ;;
coreutils-stat)
        # what every shell session does: ls -l, stat, find -printf, du (statx and friends)
        ls -l cproj >/dev/null
        ls -la --time-style=full-iso . >/dev/null
        stat -c '%n %s %U' cproj/Makefile
        find cproj -type f -printf '%p %s\n' | sort | head -3
        du -s cproj >/dev/null
        ;;
npm-install)
        # npm pack of a local package, npm install of the tarball into another (no registry), then the
        # installed module used by both
        mkdir "$tmp/pack"
        (cd nodeproj/lib && npm pack --silent --pack-destination "$tmp/pack" >/dev/null)
        cp -r nodeproj/app "$tmp/app"
        (cd "$tmp/app" && npm install --silent --no-save "$tmp/pack/pond-wl-lib-1.0.0.tgz")
        (cd "$tmp/app" && npm ls pond-wl-lib && node -e 'console.log(require("pond-wl-lib").sumSquares(0, 10))') |
                tee "$tmp/out"
        grep -qx 285 "$tmp/out"
        ;;
node-workers | node-children)
        mkdir "$tmp/app" && cp nodeproj/app/* "$tmp/app/"
        mkdir -p "$tmp/app/node_modules" && cp -r nodeproj/lib "$tmp/app/node_modules/pond-wl-lib"
        node "$tmp/app/app.js" "${name#node-}"
        ;;
make)
        # the C project built in place in parallel, then its own checks
        make -C cproj -j4
        make -C cproj check
        make -C cproj -s clean
        ;;
git)
        # a clone over git's own transport (upload-pack), a commit, a diff against the origin, gc, fsck
        git clone -q "file://$PWD/repo" "$tmp/clone"
        cd "$tmp/clone"
        sed -i 's/best/finest/' tests/input.txt
        echo "int unused;" > src/extra.c
        git add -A && git commit -q -m "a change"
        git diff --stat origin/HEAD HEAD
        git diff origin/HEAD HEAD | grep -q '^+It was the finest of times'
        git log --oneline | wc -l
        git gc -q --aggressive
        git fsck --strict --no-progress
        git count-objects -v | grep -q '^packs: 1$'
        ;;
go)
        # a module with a package and its tests: go vet, go test (parallel subtests), go build, the binary run
        cp -r goproj "$tmp/src"
        cd "$tmp/src"
        go vet ./...
        go test -count=1 ./...
        go build -o "$tmp/pondwl" .
        "$tmp/pondwl"
        ;;
sysprobe)
        # compiled here with the toolchain of /usr, then run: one line per facility
        gcc -O2 -Wall -Werror -o "$tmp/sysprobe" sysprobe.c -lpthread
        (cd "$tmp" && ./sysprobe)
        ;;
*)
        echo "case.sh: unknown case $name" >&2
        exit 2
        ;;
esac
echo "case $name ok"
