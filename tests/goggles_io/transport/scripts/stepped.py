"""A producer driven from stdin, so a test can stop or kill the host between the phases.

argv: path n kind (``scalars`` or ``images``). Prints ``ready`` once the host took the sink,
then on each stdin line: ``log`` logs n events (steps continue), ``finish`` finishes and prints
the report as JSON (``delivered``, transport ``losses``, per-handler ``handler``).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from _setup import attach_sink, use_socket

import goggles_io as gg

path, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
use_socket()
attach_sink(path)
log = gg.get_logger("stepped", with_metrics=True)
log.scalar("warm", 0.0, step=0)
gg.flush(60)
print("ready", flush=True)
image = np.zeros((512, 512, 4), dtype=np.uint8)  # 1 MiB
step = 1
for line in sys.stdin:
    if line.strip() == "log":
        for _ in range(n):
            if kind == "images":
                image[0, 0, 0] = step % 256
                log.image(image, name="img", step=step)
            else:
                log.scalar("x", float(step), step=step)
            step += 1
        print("logged", flush=True)
    elif line.strip() == "finish":
        report = gg.finish(timeout=120)
        stats = report.handlers.get("test.jsonl")
        print(
            json.dumps(
                {
                    "transport": dict(report.transport.losses),
                    "handler": None if stats is None else [stats.delivered, stats.dropped],
                    "timed_out": report.timed_out,
                }
            ),
            flush=True,
        )
        break
