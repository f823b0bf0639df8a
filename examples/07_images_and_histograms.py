"""Data logging: scalars, images, videos, histograms, vector fields and trajectories, read back.

The handlers run in the dedicated host process by default, so what was logged is read back
from where the host wrote it: a ``LocalStorageHandler`` run directory (a temporary one,
removed at exit), through :func:`~goggles_io.handlers.storage.read_events`.

Run: python examples/07_images_and_histograms.py
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np

import goggles_io as gg
from goggles_io.handlers.storage import read_events

run_dir = Path(tempfile.mkdtemp(prefix="goggles-media-"))
atexit.register(shutil.rmtree, run_dir, ignore_errors=True)
gg.attach(gg.LocalStorageHandler(run_dir, name="examples.media.storage"), scopes=["global"])

logger = gg.get_logger("examples.media", with_metrics=True)
rng = np.random.default_rng(0)

for step in range(10):
    logger.scalar("train/loss", float(rng.random()), step=step)
logger.scalar("eval/acc", 0.9, step=5)  # steps are per metric: a lower step is fine
logger.scalar("train/grad_norm", float("nan"))  # kept, and flagged as non-finite

image = rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)
logger.image(image, name="sample_image", step=10)
image[:] = 0  # the logged copy is unaffected

video = rng.integers(0, 255, (30, 3, 64, 64), dtype=np.uint8)
logger.video(video, name="sample_video", fps=10, step=10)
logger.histogram(rng.normal(size=1000), name="weights", step=10)
logger.vector_field(rng.normal(size=(16, 16, 2)), name="flow", step=10)
logger.trajectories(np.cumsum(rng.normal(size=(4, 20, 2)), axis=1), name="paths", step=10)

gg.finish()  # the host has written and closed everything when this returns

for line in read_events(run_dir).events:
    payload = line["payload"]
    if "shape" in line:  # a media file: its path, and the array it came from
        payload = f"{payload} shape={tuple(line['shape'])} dtype={line['dtype']}"
    extras = {k[6:]: v for k, v in line.items() if k.startswith("extra.")}
    print(f"{line['kind']:<13} step={line.get('step')!s:<3} {payload} {extras}")
