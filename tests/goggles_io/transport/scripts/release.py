"""Attach a slow sink, log N scalars, finish(wait_for_host=False); print what was written then.

argv: n, delay_s. Prints ``returned <seconds> written <lines>`` once finish() returned.
"""

from __future__ import annotations

import sys
import time

from _setup import attach_sink, use_socket

import goggles_io as gg

n, delay_s = int(sys.argv[1]), float(sys.argv[2])
use_socket()
attach_sink(sys.argv[3], delay_s=delay_s)
log = gg.get_logger("release", with_metrics=True)
for i in range(n):
    log.scalar("x", float(i), step=i)
start = time.monotonic()
report = gg.finish(timeout=60, wait_for_host=False)
elapsed = time.monotonic() - start
with open(sys.argv[3], encoding="utf-8") as fh:
    written = sum(1 for line in fh if line.strip())
print(f"returned {elapsed:.3f} written {written} timed_out {report.timed_out}", flush=True)
