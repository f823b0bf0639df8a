"""Log N scalar events (step 0..N-1) and finish; attaches nothing. argv: n."""

from __future__ import annotations

import sys

import goggles_io as gg

log = gg.get_logger("plain", with_metrics=True)
for i in range(int(sys.argv[1])):
    log.scalar("other", float(i), step=i)
report = gg.finish(timeout=60)
print("timed_out", report.timed_out, flush=True)
