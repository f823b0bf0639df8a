"""Helper program for test_sink_columns: a LocalStorageHandler writing until killed (SIGKILL).

Usage: column_writer.py DIR SEED PRODUCER. Events are numbered (seq 1, 2, ...) and drawn
from ``random.Random(seq)``: every life of the program sends the same stream from seq 1, as a
host that redelivers after a death would, so the sink skips what it holds (ADR 0057) and writes
the rest. Plain metric lines (one or several metrics), log lines and lines the columns do not
take (a custom x, a caller-given time, a string value) are mixed; flushes come at random.
Prints "started" once the sink is open; ends after 100,000 events (not reached in the test).
"""

from __future__ import annotations

import random
import sys

import goggles_io as gg


def event(seq: int, producer: str) -> gg.Event:
    """The event numbered ``seq`` (the same in every life)."""
    rng = random.Random(seq)
    shape = rng.random()
    step = seq // 3
    kind, extra, when = gg.Kind.METRIC, {}, None
    if shape < 0.55:
        payload: object = {f"m{seq % 7}": rng.uniform(-1, 1)}
    elif shape < 0.8:
        payload = {f"k{i}": rng.choice([rng.random(), rng.randint(-5, 5), float("nan")])
                   for i in range(rng.randint(1, 4))}  # fmt: skip
    elif shape < 0.87:
        kind, payload = gg.Kind.LOG, f"line {seq}"
    elif shape < 0.92:
        payload, extra = {"m1": rng.random(), "x": 2.0}, {"x_axis": "x", "x": seq * 0.5}
    elif shape < 0.96:
        payload, when = {"m2": rng.random()}, 1000.0 + seq
    else:
        payload = {"m3": "text", "m0": rng.random()}
    return gg.Event(kind=kind, scope="global", payload=payload, step=step, timestamp=1e9 + seq,
                    extra=extra, time=when, producer=producer, seq=seq, logger="w", pid=1)  # fmt: skip


def main() -> None:
    handler = gg.LocalStorageHandler(sys.argv[1])
    handler.open()
    print("started", flush=True)
    rng = random.Random(int(sys.argv[2]))
    for seq in range(1, 100_001):
        handler.handle(event(seq, sys.argv[3]))
        if rng.random() < 0.02:
            handler.flush()
    handler.close()


if __name__ == "__main__":
    main()
