"""Log big arrays (through shared memory); argv: path n [crash]. ``crash`` SIGKILLs itself mid-run."""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
from _setup import attach_sink, use_socket

import goggles_io as gg

path, n = sys.argv[1], int(sys.argv[2])
crash = len(sys.argv) > 3 and sys.argv[3] == "crash"
use_socket()
attach_sink(path)
log = gg.get_logger("arrays", with_metrics=True)
image = np.zeros((512, 512, 4), dtype=np.uint8)  # 1 MiB
for i in range(n):
    image[0, 0, 0] = i % 256
    log.image(image, name="img", step=i)
if crash:
    gg.flush(timeout_s=30)
    print("flushed", flush=True)
    log.image(image, name="img", step=n)  # one more segment use, then die without cleanup
    os.kill(os.getpid(), signal.SIGKILL)
report = gg.finish(timeout=60)
print("timed_out", report.timed_out, flush=True)
