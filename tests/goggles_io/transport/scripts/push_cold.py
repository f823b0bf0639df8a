"""A fresh script that never imports numpy itself: attach, then push plain floats in a loop.

argv: run_dir steps. Prints ``numpy before: False`` (nothing imported it yet) and ``ok``.
"""

from __future__ import annotations

import sys

import goggles_io as gg

print("numpy before:", "numpy" in sys.modules, flush=True)
gg.attach(gg.LocalStorageHandler(sys.argv[1]), scopes=["global"])
log = gg.get_logger("cold", with_metrics=True)
for s in range(int(sys.argv[2])):
    log.push({"a": 0.5, "b": 1.0}, step=s)
report = gg.finish(timeout=60)
print("ok", report.timed_out, flush=True)
