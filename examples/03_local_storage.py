"""File-based logging as robo-goggles' example 03 does it: one run directory, every kind of data.

``LocalStorageHandler`` writes robo-goggles' layout (``log.jsonl`` plus ``images/``, ``videos/``,
``artifacts/``, ``histograms/``, ``vector_fields/``, ``trajectories/``); ``CsvHandler`` adds a
wide ``metrics.csv``. The example lists the files and reads ``log.jsonl`` back.

Usage: python examples/03_local_storage.py [RUN_DIR]   (default: a temporary directory that is
listed and then removed, so the example leaves nothing behind)
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

import goggles_io as gg
from goggles_io.handlers.storage import read_events

STORAGE_HANDLER_NAME = "examples.local_storage.files"
CSV_HANDLER_NAME = "examples.local_storage.csv"

if len(sys.argv) > 1:
    run_dir = Path(sys.argv[1])
else:
    run_dir = Path(tempfile.mkdtemp(prefix="goggles-"))
    atexit.register(shutil.rmtree, run_dir, ignore_errors=True)

gg.attach(gg.LocalStorageHandler(run_dir, name=STORAGE_HANDLER_NAME), scopes=["global"])
csv_handler = gg.CsvHandler(run_dir, name=CSV_HANDLER_NAME)
gg.attach(csv_handler, scopes=["global"])
csv_handler.record_config({"algorithm": "demo", "lr": 3e-4})  # settings are not metrics

logger = gg.get_logger("examples.local_storage", with_metrics=True)
logger.info("writing to %s", run_dir)
rng = np.random.default_rng(0)

# Scalars, and push: image-shaped values become images (a "/" in a name makes a sub-folder).
for step in range(3):
    logger.scalar("train/loss", float(np.exp(-step)), step=step)
logger.push(
    {"train/reward": float(rng.normal()), "eval/confusion": rng.random((32, 32, 3))}, step=2
)

# Images: the format picks the file format; an unnamed image is stored under "image".
logger.image(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8), format="png", step=3)
logger.image(rng.random((64, 64, 3)), name="custom_name", format="jpg", step=3)
logger.image(rng.random((64, 64, 4)), name="rgba", format="png", step=3)

# Videos: robo-goggles' defaults are a 30 fps GIF; mp4 needs imageio-ffmpeg ([media] extra).
logger.video(rng.random((10, 64, 64, 3)), name="gif_video", step=4)
logger.video(rng.random((10, 64, 64, 3)), name="mp4_video", format="mp4", fps=24, step=4)

# Artifacts: str content, a dict serialised by format, and a file to copy.
logger.artifact("line 1\nline 2\n", name="notes", format="txt", step=5)
logger.artifact({"lr": 3e-4, "layers": [64, 64]}, name="params", format="yaml", step=5)
logger.artifact("a,b\n1,2\n", name="table", format="csv", step=5)

# Vector fields (a rotating flow) and trajectories, each with its picture on request.
y, x = np.mgrid[-1:1:32j, -1:1:32j]
flow = np.stack([-y, x], axis=-1)
logger.vector_field(flow, name="flow", step=6, store_visualization=True, mode="magnitude")
logger.vector_field(flow, name="vorticity", step=6, store_visualization=True, mode="vorticity")
paths = np.cumsum(rng.normal(size=(6, 40, 2)), axis=1)
logger.trajectories(paths, name="particles", step=7, store_visualization=True)
logger.histogram(rng.normal(size=1000), name="sample_histogram", step=8)

# dictionary: numbers become metrics, 2-D arrays images, (H, W, 2) arrays vector fields.
logger.dictionary("state", {"energy": 1.5, "velocity": np.arange(3.0), "field": flow}, step=9)

gg.finish()  # flushes, fsyncs and closes both handlers

print(f"\nfiles in {run_dir}:")
for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
    print(f"  {path.relative_to(run_dir)}  ({path.stat().st_size} bytes)")
log = read_events(run_dir)
kinds = Counter(line["kind"] for line in log.events)
print(
    f"\nlog.jsonl: {len(log.events)} lines {dict(sorted(kinds.items()))}, {log.skipped} unreadable"
)
print("\nmetrics.csv:")
print((run_dir / "metrics.csv").read_text())
print("metrics.config.kv:")
print((run_dir / "metrics.config.kv").read_text())
