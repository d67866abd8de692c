// SPDX-License-Identifier: LGPL-2.1-or-later
// app.js MODE: uses the installed pond-wl-lib from worker threads ("workers") or child processes
// ("children"), checks their answers against the main thread's own, prints one line.
'use strict';
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const { execFile, spawnSync } = require('child_process');
const { sumSquares } = require('pond-wl-lib');

const N = 200000, PARTS = 4;
const ranges = [...Array(PARTS).keys()].map((i) => [i * N / PARTS, (i + 1) * N / PARTS]);
const total = (parts) => parts.reduce((a, b) => a + BigInt(b), 0n).toString();

if (!isMainThread) {
  parentPort.postMessage(sumSquares(...workerData));
} else if (process.argv[2] === 'workers') {
  Promise.all(ranges.map((r) => new Promise((resolve, reject) => {
    const w = new Worker(__filename, { workerData: r });
    w.once('message', resolve);
    w.once('error', reject);
  }))).then((parts) => {
    if (total(parts) !== sumSquares(0, N)) throw new Error('workers disagree');
    console.log(`workers: ${PARTS} worker threads agree: ${total(parts)}`);
  });
} else if (process.argv[2] === 'children') {
  const code = "console.log(require('pond-wl-lib').sumSquares(+process.argv[1], +process.argv[2]))";
  const sync = spawnSync(process.execPath, ['-e', code, '0', String(N)], { cwd: __dirname, encoding: 'utf8' });
  if (sync.status !== 0) throw new Error(`spawnSync: status ${sync.status} ${sync.error || sync.stderr}`);
  Promise.all(ranges.map((r) => new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', code, ...r.map(String)], { cwd: __dirname },
      (err, out) => (err ? reject(err) : resolve(out.trim())));
  }))).then((parts) => {
    if (total(parts) !== sync.stdout.trim()) throw new Error('children disagree');
    console.log(`children: ${PARTS} child processes and spawnSync agree: ${total(parts)}`);
  });
} else {
  throw new Error('usage: app.js workers|children');
}
