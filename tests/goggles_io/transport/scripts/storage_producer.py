"""Attach a LocalStorageHandler on ``global``, log N scalars and finish. argv: run_dir n."""

from __future__ import annotations

import sys

import goggles_io as gg

gg.attach(gg.LocalStorageHandler(sys.argv[1], name="storage"), scopes=["global"])
log = gg.get_logger("producer", with_metrics=True)
for i in range(int(sys.argv[2])):
    log.scalar("x", float(i), step=i)
report = gg.finish(timeout=60)
print("timed_out", report.timed_out, flush=True)
