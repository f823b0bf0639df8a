"""``n`` ``logger.scalar`` calls into a host-side BusySink at ``per_event_s`` per event, then
``gg.finish()`` (the test sets ``GOGGLES_FINISH_STALL``); prints, as JSON, the sink's
``[delivered, dropped, errors, logged, not_in_time]``, the transport's losses, ``missing``,
``timed_out`` and the end-of-run line's words on stderr are the test's to read.

argv: path n per_event_s [hang_after]: with ``hang_after``, the sink is a HangingSink that
stops taking events after that many.
"""

from __future__ import annotations

import json
import sys
import time

from busy_sink import BusySink

import goggles_io as gg

path, n, per_event_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if len(sys.argv) > 4:
    from hanging_sink import HangingSink

    gg.attach(HangingSink(path, int(sys.argv[4]), per_event_s=per_event_s), scopes=["global"])
else:
    gg.attach(BusySink(path, per_event_s=per_event_s), scopes=["global"])
log = gg.get_logger("busy", with_metrics=True)
start = time.perf_counter()
for i in range(n):
    log.scalar("x", float(i), step=i)
report = gg.finish()
stats = report.handlers.get("busy")
line = {
    "busy": None
    if stats is None
    else [
        stats.delivered,
        stats.dropped,
        stats.errors,
        stats.logged,
        stats.not_in_time,
        stats.kept,
    ],
    "transport": dict(report.transport.losses),
    "missing": report.missing,
    "timed_out": report.timed_out,
    "summary": report.summary(),
    "s": round(time.perf_counter() - start, 3),
}
print(json.dumps(line), flush=True)
