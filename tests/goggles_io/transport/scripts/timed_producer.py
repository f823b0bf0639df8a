"""Log N scalars and print the per-call latency p50/p99 in microseconds as JSON. argv: n."""

from __future__ import annotations

import json
import sys
import time

from _setup import attach_sink, use_socket

import goggles_io as gg

n = int(sys.argv[1])
use_socket()
attach_sink(sys.argv[2])
log = gg.get_logger("timed", with_metrics=True)
for i in range(2000):  # warm-up: host up, caches hot
    log.scalar("warm", 0.0, step=i)
gg.flush(30)
costs = []
clock = time.perf_counter_ns
for i in range(n):
    t0 = clock()
    log.scalar("x", float(i), step=i)
    costs.append(clock() - t0)
report = gg.finish(timeout=60)
costs.sort()
print(
    json.dumps({"p50_us": costs[n // 2] / 1e3, "p99_us": costs[int(n * 0.99)] / 1e3}),
    flush=True,
)
