"""Write a run directory with robo-goggles' own LocalStorageHandler: every media kind, 3 steps.

Usage: python robo_goggles_run.py OUT_DIR   (needs robo-goggles installed as ``goggles``; run
with a private TMPDIR: as root it chmods its temp dir). Prints ``ok`` when done.
"""

import sys
from pathlib import Path

import goggles as gg
import numpy as np

out = Path(sys.argv[1])
log = gg.get_logger("tests.ui.robo_goggles", with_metrics=True)
gg.attach(gg.LocalStorageHandler(path=out, name="tests.ui.storage"), scopes=["global"])
rng = np.random.default_rng(0)
for step in range(3):
    log.scalar("train/loss", 1.0 / (step + 1), step=step)
    log.image(rng.integers(0, 255, (24, 32, 3), dtype=np.uint8), step=step, name="camera")
    log.histogram(rng.standard_normal(300).astype(np.float32) + step, step=step, name="weights")
    log.trajectories(np.cumsum(rng.standard_normal((3, 40, 2)), axis=1), step=step, name="paths")
    log.vector_field(rng.standard_normal((10, 10, 2)).astype(np.float32), step=step, name="flow")
log.video(rng.integers(0, 255, (6, 16, 16, 3), dtype=np.uint8), step=2, name="rollout")
log.artifact("notes from the run", step=2, name="notes", format="txt")
gg.finish()
print("ok")
