"""Log into a host-side ``RemoteHandler`` whose host the test kills; argv: url run_id events metrics.

Prints ``ready`` and waits for ``go`` on stdin; then logs ``events`` events, each one
``push``-ed with ``metrics`` metrics ``m0 .. m<metrics-1>`` at step ``i`` (value ``i + k/10``),
so one event's metrics share its sequence and differ by their part; calls ``gg.finish()`` and
prints the FinishReport as JSON: the remote handler's ``[delivered, dropped, errors, logged,
losses]``, the transport's losses, ``timed_out``.
"""

from __future__ import annotations

import json
import sys

import goggles_io as gg
from goggles_io.handlers.remote import RemoteHandler

url, run_id, events, metrics = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
gg.attach(RemoteHandler(url, run_id=run_id, name="remote", buffer_size=100), scopes=["global"])
log = gg.get_logger("remote-chaos", with_metrics=True)
gg.flush(120)  # the host runs and has the handler
print("ready", flush=True)
sys.stdin.readline()
for i in range(events):
    log.push({f"m{k}": i + k / 10 for k in range(metrics)}, step=i)
report = gg.finish()
stats = report.handlers["remote"]
line = {
    "remote": [stats.delivered, stats.dropped, stats.errors, stats.logged, dict(stats.losses)],
    "transport": dict(report.transport.losses),
    "timed_out": report.timed_out,
}
print(json.dumps(line), flush=True)
