"""Log scalars, an image and a video to Weights & Biases (offline unless WANDB_MODE says otherwise).

Run: python examples/04_wandb.py   -- then `wandb sync <printed dir>` to upload it later.
"""

from __future__ import annotations

import os

os.environ.setdefault("WANDB_MODE", "offline")  # no account or network needed
os.environ.setdefault("WANDB_SILENT", "true")

import numpy as np

import goggles_io as gg

WANDB_HANDLER_NAME = "examples.wandb"
out_dir = os.environ.get("WANDB_DIR", os.getcwd())  # runs go to <dir>/wandb/
os.makedirs(out_dir, exist_ok=True)

logger = gg.get_logger("experiment", with_metrics=True)
# `group` and `tags` go straight to wandb.init; tags must be a list (a bare string is rejected).
gg.attach(
    gg.WandBHandler(
        name=WANDB_HANDLER_NAME,
        project="my_project",
        run_name="run_1",
        group="experiment_v2",
        tags=["baseline", "smoke-test"],
        config={"optimizer": "adam"},
        dir=out_dir,
    ),
)
# Settings recorded after attach go to the instance the bus runs (in the dedicated host by
# default), in order with the events; RunContext.set_config does this for you.
gg.call_handler(WANDB_HANDLER_NAME, "record_config", {"lr": 3e-4, "batch_size": 64})

rng = np.random.default_rng(0)
for step in range(100):
    logger.scalar("loss", float(rng.random()), step=step)
    logger.scalar("accuracy", 0.8 + 0.2 * float(rng.random()), step=step)

image = rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)
logger.image(image, name="sample_image", step=100)
video = rng.integers(0, 255, (30, 3, 64, 64), dtype=np.uint8)
logger.video(video, name="sample_video", fps=10, step=100)

gg.finish()
print(f"W&B run written under {out_dir}/wandb (mode {os.environ['WANDB_MODE']});")
print(f"upload it with: wandb sync {out_dir}/wandb")
