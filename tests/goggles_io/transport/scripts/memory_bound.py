"""Flood a slow in-process-hosted handler; print the RSS growth (MiB) and the tally as JSON.

argv: what (``text`` = 50,000 4 KB lines to a 0.2 ms handler; ``images`` = 1,500 1 MiB images
to a 2 ms handler): each flood is ~200 MB or 1.5 GB logged far faster than the handler takes it.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from _setup import use_socket
from jsonl_sink import JsonlSink

import goggles_io as gg


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):  # peak resident set: growth can't hide between samples
                return int(line.split()[1]) / 1024
    return 0.0


what = sys.argv[1]
use_socket()
out = os.path.join(os.path.dirname(os.environ["GOGGLES_SOCKET"]), "slow.jsonl")
delay = 0.0002 if what == "text" else 0.002
gg.attach(JsonlSink(out, name="slow", delay_s=delay), scopes=["global"])
log = gg.get_logger("flood", with_metrics=True)
line = "x" * 4096
image = np.random.default_rng(0).integers(0, 255, (1024, 1024), dtype=np.uint8)
log.info("warm-up")
gg.flush(30)
before = rss_mib()
if what == "text":
    for i in range(50_000):
        log.info(line, step=i)
else:
    for i in range(1_500):
        log.image(image, step=i, name="img")
after = rss_mib()
report = gg.finish()  # waits while the handler makes progress
taken = sum(1 for _ in open(out)) - 1  # the warm-up line
print(
    json.dumps({"grew_mib": after - before, "dropped": report.dropped, "taken": taken}), flush=True
)
