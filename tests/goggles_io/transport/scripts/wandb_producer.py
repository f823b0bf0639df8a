"""Log into a host-side ``WandBHandler`` (offline) whose host the test kills; argv: dir events.

Prints the handler's ``resume_id`` and ``ready``, waits for ``go`` on stdin, logs ``events``
scalars ``x`` (step = value = index), calls ``gg.finish()`` and prints the FinishReport as JSON:
the W&B handler's ``[delivered, dropped, errors, logged, losses]``, the transport's losses,
``timed_out``.
"""

from __future__ import annotations

import json
import sys

import goggles_io as gg
from goggles_io.handlers.wandb import WandBHandler

folder, events = sys.argv[1], int(sys.argv[2])
handler = WandBHandler(project="chaos", run_name="chaos", mode="offline", dir=folder)
gg.attach(handler, scopes=["global"])
log = gg.get_logger("wandb-chaos", with_metrics=True)
gg.flush(120)  # the host runs and has the handler
print(
    json.dumps({"resume_id": getattr(handler, "resume_id", "")}), flush=True
)  # "": before ADR 0070
print("ready", flush=True)
sys.stdin.readline()
for i in range(events):
    log.scalar("x", float(i), step=i)
report = gg.finish()
stats = report.handlers["wandb"]
line = {
    "wandb": [stats.delivered, stats.dropped, stats.errors, stats.logged, dict(stats.losses)],
    "transport": dict(report.transport.losses),
    "timed_out": report.timed_out,
}
print(json.dumps(line), flush=True)
