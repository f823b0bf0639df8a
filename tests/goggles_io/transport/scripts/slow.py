"""Flood a slow sink with a small queue; print the producer's peak RSS growth; argv: path n [delay_s]."""

from __future__ import annotations

import resource
import sys

from _setup import attach_sink, use_socket

import goggles_io as gg

path, n = sys.argv[1], int(sys.argv[2])
delay_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.002
use_socket()
attach_sink(path, delay_s=delay_s)
log = gg.get_logger("slow", with_metrics=True)
log.scalar("warmup", 0.0, step=0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for i in range(n):
    log.scalar("x", float(i), step=i)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
gg.finish()  # waits while the slow sink makes progress
print("rss_growth_kib", after - before, flush=True)
