// SPDX-License-Identifier: LGPL-2.1-or-later
// pond-wl-lib: the sum of squares below n, the work handed to worker threads and child processes.
'use strict';
exports.sumSquares = (from, to) => {
  let s = 0n;
  for (let i = BigInt(from); i < BigInt(to); i++) s += i * i;
  return s.toString();
};
