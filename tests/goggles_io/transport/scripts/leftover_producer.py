"""Log into a GatedSink, then finish; argv: path gate scalars images first_step.

Logs ``scalars`` scalars (step = first_step + index) with one 1 MiB image (step = image index)
after every ``scalars // images`` of them (``images`` may be 0), then ``gg.finish()``, and
prints the FinishReport as JSON: the client's tally by reason, ``timed_out``, ``dropped``.
"""

from __future__ import annotations

import json
import sys

from gated_sink import GatedSink
from recording_sink import make_image

import goggles_io as gg

path, gate = sys.argv[1], sys.argv[2]
scalars, images, first = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
every = scalars // images if images else 0
gg.attach(GatedSink(path, gate), scopes=["global"])
log = gg.get_logger("leftover", with_metrics=True)
for i in range(scalars):
    log.scalar("x", float(first + i), step=first + i)
    if every and i % every == every - 1:
        log.image(make_image(i // every), name="img", step=i // every)
report = gg.finish()
print(
    json.dumps(
        {
            "transport": dict(report.transport.losses),
            "timed_out": report.timed_out,
            "dropped": report.dropped,
        }
    ),
    flush=True,
)
