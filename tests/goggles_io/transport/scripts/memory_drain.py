"""Flood a slow handler run by an in-process host, through its slow drain; print peak RSS growth.

argv: n (lines of 4 KB), drained (how many the 5 ms/event handler takes before the gate opens).
The peak resident set (``VmHWM``) is read after the flood, after the slow drain (the spool read
back, the host's lane refilled: where memory used to grow) and after ``finish()``; growth is
against the peak before the flood. Prints JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time

from _setup import use_socket
from slow_until_sink import SlowUntilSink

import goggles_io as gg


def peak_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):  # peak resident set: growth can't hide between samples
                return int(line.split()[1]) / 1024
    return 0.0


n, drained = int(sys.argv[1]), int(sys.argv[2])
use_socket()
root = os.path.dirname(os.environ["GOGGLES_SOCKET"])
out, gate = os.path.join(root, "gated.jsonl"), os.path.join(root, "gated.go")
gg.attach(SlowUntilSink(out, gate, 0.005), scopes=["global"])
log = gg.get_logger("flood")
line = "x" * 4096
log.info("warm-up")
gg.flush(30)
before = peak_mib()
for i in range(n):
    log.info(line, step=i)
flood = peak_mib()
deadline = time.monotonic() + 300
while SlowUntilSink.handled < drained:
    if time.monotonic() > deadline:
        sys.exit(f"the handler took {SlowUntilSink.handled} of {drained} events in 300 s")
    time.sleep(0.05)  # a condition, polled: the slow handler took ``drained`` events
drain = peak_mib()
open(gate, "w").close()
report = gg.finish()  # waits while the handler makes progress
with open(out) as fh:
    taken = sum(1 for _ in fh) - 1  # the warm-up line
print(
    json.dumps(
        {
            "flood_mib": flood - before,
            "drain_mib": drain - before,
            "total_mib": peak_mib() - before,
            "slow_taken": SlowUntilSink.handled,
            "dropped": report.dropped,
            "taken": taken,
        }
    ),
    flush=True,
)
