"""Log into a GatedSequencedSink, then finish; argv: path gate scalars per_event_s.

Logs ``scalars`` scalars (step = index), then ``gg.finish()``, and prints the FinishReport as
JSON: the client's tally by reason, ``timed_out``.
"""

from __future__ import annotations

import json
import sys

from gated_sequenced_sink import GatedSequencedSink

import goggles_io as gg

path, gate, scalars, per_event_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
gg.attach(GatedSequencedSink(path, gate, per_event_s=per_event_s), scopes=["global"])
log = gg.get_logger("leftover", with_metrics=True)
for i in range(scalars):
    log.scalar("x", float(i), step=i)
report = gg.finish()
line = {"transport": dict(report.transport.losses), "timed_out": report.timed_out}
print(json.dumps(line), flush=True)
