"""Scalars from several threads with other rows and operations between them (ADR 0088's front).

argv: jsonl threads n seed. Attaches the host's ``JsonlSink`` on ``global``; each thread logs
``n`` scalars named ``t<k>`` (step = its index); between them, at seeded moments, a text line
(``t<k> m<i>``: another kind of row, which seals the front), a ``push`` of a 1-D array (scalars
that do not go through the front) and, from thread 0, a ``flush()``. Prints the finish report's
transport tally as JSON.
"""

from __future__ import annotations

import json
import random
import sys
import threading

import numpy as np
from jsonl_sink import JsonlSink

import goggles_io as gg

path, threads, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
gg.attach(JsonlSink(path), scopes=["global"])
log = gg.get_logger("front", with_metrics=True)


def produce(k: int) -> None:
    rng = random.Random(seed * 100 + k)
    for i in range(n):
        log.scalar(f"t{k}", float(i), step=i)
        roll = rng.random()
        if roll < 0.01:
            log.info(f"t{k} m{i}")
        elif roll < 0.015:
            log.push({f"p{k}": np.array([float(i), float(i)])}, step=i)
        elif roll < 0.017 and k == 0:
            gg.flush()


workers = [threading.Thread(target=produce, args=(k,)) for k in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
report = gg.finish(timeout=120)
print(
    json.dumps({"losses": dict(report.transport.losses), "delivered": report.transport.delivered})
)
