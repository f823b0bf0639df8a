"""A reader of the conservation test: a live subscription, or the broker's stream.

argv: ``subscribe`` or ``broker``. Prints ``ready``; counts the distinct (pid, step) of the
events it gets; on ``done`` from stdin it syncs (subscription) or waits until ``expected`` (the
next stdin line) events came or 60 s passed (broker), then prints JSON with what it counted.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import goggles_io as gg

mode = sys.argv[1]
seen: set[tuple[int, int | None]] = set()
total = 0


def take(events: list[gg.Event]) -> None:
    global total
    total += len(events)
    seen.update((e.pid, e.step) for e in events)


class Reader(gg.BaseHandler):
    """Counts what the broker brings."""

    def handle_batch(self, events: list[gg.Event]) -> None:
        take(events)

    def handle(self, event: gg.Event) -> None:
        take([event])


if mode == "subscribe":
    sub: Any = gg.subscribe(scopes=["global"], kinds=["metric"])

    def read() -> None:
        for event in sub:
            take([event])

    threading.Thread(target=read, daemon=True).start()
else:
    gg.attach(Reader(name="reader"), scopes=["*"], from_broker=True)
print("ready", flush=True)
sys.stdin.readline()
if mode == "subscribe":
    sub.sync(timeout=120)
    time.sleep(0.2)
    before = -1
    while before != total:  # the buffer drained into the reader thread
        before = total
        time.sleep(0.2)
    result = {"distinct": len(seen), "total": total, "dropped": sub.dropped}
else:
    expected = int(sys.stdin.readline())
    deadline = time.monotonic() + 60
    while len(seen) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    gg.finish(timeout=30)
    result = {"distinct": len(seen), "total": total, "dropped": 0}
print(json.dumps(result), flush=True)
