#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""broker-e2e-client.py: the job's side of test-broker-e2e: one request through the broker with
urllib, the way an SDK makes it. Prints JSON: status, response headers, body, and for event streams the
arrival time of each data line.
Usage: broker-e2e-client.py METHOD URL HEADER VALUE BODY"""
import json
import sys
import time
import urllib.error
import urllib.request

method, url, header, value, body = sys.argv[1:6]
req = urllib.request.Request(url, method=method, data=body.encode() if body else None)
if header:
    req.add_header(header, value)
if body:
    req.add_header("Content-Type", "application/json")
out = {"status": 0, "times": [], "body": "", "headers": {}}
try:
    resp = urllib.request.urlopen(req, timeout=30)
except urllib.error.HTTPError as e:
    resp = e
out["status"] = resp.status if hasattr(resp, "status") else resp.code
out["headers"] = {k.lower(): v for k, v in resp.headers.items()}
t0 = time.monotonic()
lines = []
while True:
    line = resp.readline()
    if not line:
        break
    if line.startswith(b"data:"):
        out["times"].append(time.monotonic() - t0)
    lines.append(line.decode(errors="replace"))
out["body"] = "".join(lines)
print(json.dumps(out))
