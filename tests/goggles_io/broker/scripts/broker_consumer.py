"""Read the run's stream with a from_broker handler; argv: out_path expected [block_at_step].

Each line: metric, step, producer pid, value, wall time handled.

The handler writes each batch with one write, after checking whether the batch holds the step
to block at (then it says "blocked" and hangs, so a test can SIGKILL it mid-batch).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import goggles_io as gg
from goggles_io._api.functions import broker_consumer

out, expected = sys.argv[1], int(sys.argv[2])
block_at = int(sys.argv[3]) if len(sys.argv) > 3 else -1


class LinesSink(gg.BaseHandler):
    """One line per event: metric name, step; a batch is written in one write (all or none)."""

    def __init__(self, name: str = "lines") -> None:
        super().__init__(name=name)
        self.count = 0

    def open(self) -> None:
        self.fh = open(out, "a", encoding="utf-8")

    def handle_batch(self, events: list[gg.Event]) -> None:
        if any(e.step == block_at for e in events):
            print("blocked", flush=True)
            time.sleep(3600)
        now = time.time()
        lines = [
            json.dumps([name, e.step, e.pid, value, now])
            for e in events
            for name, value in e.payload.items()
        ]
        self.fh.write("".join(line + "\n" for line in lines))
        self.fh.flush()
        self.count += len(events)

    def handle(self, event: gg.Event) -> None:
        self.handle_batch([event])

    def close(self) -> None:
        self.fh.close()


sink = LinesSink()
gg.attach(sink, scopes=["*"], from_broker=True)
print("ready", flush=True)
deadline = time.monotonic() + float(os.environ.get("CONSUMER_DEADLINE_S", "90"))
while sink.count < expected and time.monotonic() < deadline:
    time.sleep(0.01)
consumer: Any = broker_consumer()
stats = {k: getattr(consumer, k) for k in ("handled", "duplicates", "malformed", "reclaimed")}
gg.finish(timeout=30)
print(json.dumps({"count": sink.count, "pid": os.getpid(), **stats}), flush=True)
