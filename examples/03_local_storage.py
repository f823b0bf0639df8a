"""File-based logging (README "File-based logging"): JSON lines, a CSV table and media files.

Usage: python examples/03_local_storage.py [RUN_DIR]   (default: a temporary directory that is
listed and then removed, so the example leaves nothing behind)
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
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
for step in range(5):
    logger.scalar("train/loss", float(np.exp(-step)), step=step)
    logger.scalar("train/reward", float(rng.normal()), step=step)
logger.scalar("eval/success_rate", 0.8, step=4)

image = rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)
logger.image(image, name="sample_image", step=4)
video = rng.integers(0, 255, (8, 3, 32, 32), dtype=np.uint8)
logger.video(video, name="sample_video", fps=4, step=4)
logger.histogram(rng.normal(size=1000), name="weights", step=4)

gg.finish()  # flushes, fsyncs and closes both handlers

print(f"\nfiles in {run_dir}:")
for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
    print(f"  {path.relative_to(run_dir)}  ({path.stat().st_size} bytes)")
log = read_events(run_dir)
print(f"\nevents.jsonl: {len(log.events)} events, {log.skipped} unreadable lines")
print("\nmetrics.csv:")
print((run_dir / "metrics.csv").read_text())
print("metrics.config.kv:")
print((run_dir / "metrics.config.kv").read_text())
