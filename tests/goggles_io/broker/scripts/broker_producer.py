"""One "machine": log N scalars (metric = tag, step 0..N-1) with GOGGLES_BROKER set; argv: tag n."""

from __future__ import annotations

import json
import sys

import goggles_io as gg

tag, n = sys.argv[1], int(sys.argv[2])
log = gg.get_logger(f"producer.{tag}", with_metrics=True)
for i in range(n):
    log.scalar(tag, float(i), step=i)
    if i == n // 2 and len(sys.argv) > 3:  # pause half-way until told to go on (restart tests)
        gg.flush(30)
        print("half", flush=True)
        sys.stdin.readline()
report = gg.finish(timeout=20)
print(json.dumps({"dropped": report.dropped, "lost": report.lost}), flush=True)
