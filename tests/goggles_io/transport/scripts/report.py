"""Log N scalars into the lossy sink, finish(timeout), print the FinishReport as JSON.

argv: n delay_s timeout_s
"""

from __future__ import annotations

import json
import sys

from _setup import use_socket
from lossy_sink import LossySink

import goggles_io as gg

n, delay, timeout = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
use_socket()
gg.attach(LossySink(delay_s=delay), scopes=["global"])
log = gg.get_logger("report", with_metrics=True)
for i in range(n):
    log.scalar("x", float(i), step=i)
report = gg.finish(timeout=timeout)
stats = report.handlers.get("lossy")
print(
    json.dumps(
        {
            "timed_out": report.timed_out,
            "dropped": report.dropped,
            "lost": report.lost,
            "handler": None
            if stats is None
            else [stats.delivered, stats.dropped, dict(stats.losses), stats.kept],
            "transport": [report.transport.dropped, dict(report.transport.losses)],
        }
    ),
    flush=True,
)
