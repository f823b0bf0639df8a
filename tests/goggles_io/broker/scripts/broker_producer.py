"""One "machine": log N scalars (metric = tag, step 0..N-1) with GOGGLES_BROKER set.

argv: tag n [pause | events per second]. ``pause`` stops half-way until stdin says go (restart
tests); a rate paces the calls and logs each call's wall time as the value, so a consumer can
tell when what was logged before a moment arrived; it first logs one ``warm`` scalar and
flushes it, so the paced run starts with the host up and Redis reached.
"""

from __future__ import annotations

import json
import sys
import time

import goggles_io as gg

tag, n = sys.argv[1], int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else ""
rate = float(mode) if mode and mode != "pause" else 0.0
log = gg.get_logger(f"producer.{tag}", with_metrics=True)
if rate:  # the host is up and the broker reached before the paced run starts
    log.scalar("warm", 0.0, step=0)
    gg.flush(60)
print("ready", flush=True)
start = time.monotonic()
for i in range(n):
    if rate:
        ahead = start + i / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)  # pacing, as a training loop logs
        log.scalar(tag, time.time(), step=i)
    else:
        log.scalar(tag, float(i), step=i)
    if i == n // 2 and mode == "pause":
        gg.flush(30)
        print("half", flush=True)
        sys.stdin.readline()
report = gg.finish(timeout=60)
print(json.dumps({"dropped": report.dropped, "lost": report.lost}), flush=True)
