"""A handler class defined in ``__main__`` under the default dedicated host; argv: out n_others.

Logs 5 own events, prints ``ready``, waits until its handler saw the 5 own plus ``n_others``
events from other processes, then finishes and prints what it saw as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from typing import ClassVar

import goggles_io as gg


class CountingHandler(gg.BaseHandler):
    """Defined in the script: the dedicated host cannot import it."""

    capabilities: ClassVar[frozenset[gg.Kind]] = frozenset({gg.Kind.METRIC})
    seen: ClassVar[list[tuple[int, int]]] = []
    closed: ClassVar[list[bool]] = []

    def handle(self, event: gg.Event) -> None:
        self.seen.append((event.pid, event.step))

    def close(self) -> None:
        self.closed.append(True)


gg.register_handler(CountingHandler)
expected_others = int(sys.argv[2])
gg.attach(CountingHandler(name="main.counting"), scopes=["global"])
log = gg.get_logger("main", with_metrics=True)
for i in range(5):
    log.scalar("own", float(i), step=i)
print("ready", flush=True)
deadline = time.monotonic() + 60
while len(CountingHandler.seen) < 5 + expected_others and time.monotonic() < deadline:
    time.sleep(0.01)
gg.finish(timeout=30)
print(json.dumps({"seen": CountingHandler.seen, "closed": CountingHandler.closed}), flush=True)
