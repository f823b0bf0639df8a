"""The producer of the host-killed-twice test, driven from stdin so the test can kill hosts
between and during its bursts.

argv: path scalars images. Attaches the RecordingSink (host-side) with default settings,
prints ``ready``; each ``log`` line logs the next half of ``scalars`` scalars (step = index)
with one of ``images`` 1 MiB images (step = image index) after every ``scalars // images``
scalars, then prints ``logged``; ``finish`` calls ``gg.finish()`` with its default timeout and
prints the FinishReport as JSON (the client's losses, the sink's delivered/dropped/errors/
losses, totals, ``timed_out``, ``finish_s``).
"""

from __future__ import annotations

import sys
import time

from recording_sink import RecordingSink, make_image
from report_line import print_report

import goggles_io as gg

path, scalars, images = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
every = scalars // images
gg.attach(RecordingSink(path), scopes=["global"])
log = gg.get_logger("acked", with_metrics=True)
gg.flush(60)  # the host runs and has the sink
print("ready", flush=True)
done = 0
for line in sys.stdin:
    if line.strip() == "log":
        half = scalars // 2 if done == 0 else scalars - done
        for i in range(done, done + half):
            log.scalar("x", float(i), step=i)
            if i % every == every - 1:
                log.image(make_image(i // every), name="img", step=i // every)
        done += half
        print("logged", flush=True)
    elif line.strip() == "finish":
        start = time.perf_counter()
        report = gg.finish()
        finish_s = time.perf_counter() - start
        print_report(report, "recording", finish_s=round(finish_s, 3))
        break
