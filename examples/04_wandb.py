"""Log to Weights & Biases as robo-goggles' example 04 does: scalars, an image, a video, vector
fields (as pictures), trajectories (interactive plotly figures), histograms (a series and a
static chart) and artifacts (a file and a checkpoint directory with aliases). Offline unless
WANDB_MODE says otherwise.

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

# A vortex pair as a vector field: W&B gets its picture (speed, or curl with a colour bar).
y, x = np.mgrid[-1:1:64j, -1:1:64j]
flow = np.stack([-(y - 0.3), x], axis=-1) - np.stack([-(y + 0.3), x], axis=-1) * 0.5
logger.vector_field(flow, name="flow_magnitude", step=101, mode="magnitude")
logger.vector_field(flow, name="flow_vorticity", step=101, mode="vorticity", add_colorbar=True)

# Trajectories: (N, L, 2) and (N, L, 3) paths become plotly figures you can turn and zoom.
logger.trajectories(np.cumsum(rng.normal(size=(64, 121, 2)), axis=1), name="paths_2d", step=102)
logger.trajectories(np.cumsum(rng.normal(size=(48, 201, 3)), axis=1), name="paths_3d", step=103)

# Histograms: a series over steps, and one static custom chart.
for step in range(150, 154):
    logger.histogram(rng.normal(loc=step / 100, size=1000), name="weights", step=step)
logger.histogram(rng.normal(size=1000), name="final_weights", static=True, step=154)

# Artifacts: robo-goggles' {"path": ...} references, uploaded with their name, type, aliases.
files = os.path.join(out_dir, "example_artifacts")
os.makedirs(os.path.join(files, "checkpoint"), exist_ok=True)
with open(os.path.join(files, "notes.txt"), "w", encoding="utf-8") as fh:
    fh.write("a file uploaded as a W&B artifact\n")
np.save(os.path.join(files, "checkpoint", "params.npy"), rng.normal(size=8))
logger.artifact({"path": os.path.join(files, "notes.txt"), "name": "random_artifact"}, step=155)
logger.artifact(
    {"path": os.path.join(files, "checkpoint"), "name": "model_checkpoint",
     "type": "checkpoint", "aliases": ["best", "step-100"]},
    step=155,
)  # fmt: skip

gg.finish()
print(f"W&B run written under {out_dir}/wandb (mode {os.environ['WANDB_MODE']});")
print(f"upload it with: wandb sync {out_dir}/wandb")
