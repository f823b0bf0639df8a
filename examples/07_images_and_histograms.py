"""Data logging: scalars, images, videos, histograms, vector fields into a MemoryHandler."""

from __future__ import annotations

import numpy as np

import goggles_io as gg
from goggles_io.testing import MemoryHandler

memory = MemoryHandler(name="examples.media.memory")
gg.attach(memory, scopes=["global"])
gg.attach(gg.ConsoleHandler(name="examples.media.console", level=gg.INFO))

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

gg.flush()
for event in memory.events:
    payload = event.payload
    shown = f"shape={payload.shape}" if hasattr(payload, "shape") else repr(payload)
    logger.info("%-12s step=%-3s %s %s", event.kind.value, event.step, shown, dict(event.extra))

gg.finish()
