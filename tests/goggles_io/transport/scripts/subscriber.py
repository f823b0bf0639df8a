"""Subscribe to metrics, print ``ready``; then either read or stall. argv: mode total.

mode ``read``: read until ``total`` events arrived (or 60 s), print JSON counts.
mode ``stall``: do not read until a line arrives on stdin, then sync and print counts.
mode ``hold``: never read; wait to be killed.
"""

from __future__ import annotations

import json
import os
import sys
import time

import goggles_io as gg

mode, total = sys.argv[1], int(sys.argv[2])
host_queue = int(os.environ.get("SUBSCRIBER_HOST_QUEUE", "0")) or None
sub = gg.subscribe(
    scopes=["global"], kinds=["metric"], max_events=1_000_000, host_max_events=host_queue
)
print("ready", flush=True)
if mode == "hold":
    time.sleep(3600)
if mode == "stall":
    sys.stdin.readline()
received = 0
steps: list[int] = []
deadline = time.monotonic() + 60
while received + sub.dropped < total and time.monotonic() < deadline:
    event = sub.get(timeout=0.5)
    if event is None:
        sub.sync(10)
        continue
    received += 1
    steps.append(event.step)
sub.sync(10)
in_order = steps == sorted(steps)
print(json.dumps({"received": received, "dropped": sub.dropped, "in_order": in_order}), flush=True)
sub.close()
