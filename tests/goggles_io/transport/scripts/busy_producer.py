"""200,000 ``logger.scalar`` calls into the 60 µs-per-event BusySink, then ``gg.finish()``
with default settings; prints the FinishReport and how long the loop and finish took, as JSON.

argv: path n
"""

from __future__ import annotations

import sys
import time

from busy_sink import BusySink
from report_line import print_report

import goggles_io as gg

path, n = sys.argv[1], int(sys.argv[2])
gg.attach(BusySink(path), scopes=["global"])
log = gg.get_logger("busy", with_metrics=True)
start = time.perf_counter()
for i in range(n):
    log.scalar("x", float(i), step=i)
loop_s = time.perf_counter() - start
report = gg.finish()
finish_s = time.perf_counter() - start - loop_s
print_report(report, "busy", loop_s=round(loop_s, 3), finish_s=round(finish_s, 3))
