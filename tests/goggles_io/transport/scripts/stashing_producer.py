"""The producer of the lent-arrays tests, driven from stdin so the test can kill the host.

argv: path images keep [pause_s]. Attaches the StashingSink (host-side, keeping the last ``keep``
payloads), prints ``ready``; each ``log`` line logs the next half of ``images`` 1 MiB images
(step = index) from ONE buffer the producer refills for every call (as a camera loop would),
pausing ``pause_s`` after each (so the host handles, acknowledges and frees slots in between and
the next images reuse them), then prints ``logged``; ``finish`` calls ``gg.finish()`` and
prints the FinishReport as JSON.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from recording_sink import make_image
from report_line import print_report
from stashing_sink import StashingSink

import goggles_io as gg

path, images, keep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pause_s = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
gg.attach(StashingSink(path, keep=keep), scopes=["global"])
log = gg.get_logger("lent", with_metrics=True)
gg.flush(60)  # the host runs and has the sink
print("ready", flush=True)
frames = [make_image(i) for i in range(images)]
buffer = np.empty_like(frames[0])
done = 0
for line in sys.stdin:
    if line.strip() == "log":
        half = images // 2 if done == 0 else images - done
        for i in range(done, done + half):
            np.copyto(buffer, frames[i])
            log.image(buffer, name="img", step=i)
            if pause_s:
                time.sleep(pause_s)
        done += half
        print("logged", flush=True)
    elif line.strip() == "finish":
        print_report(gg.finish(), "stashing")
        break
