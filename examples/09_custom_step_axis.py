"""Plot a metric against physical time instead of the step index (W&B `define_metric`).

Run: python examples/09_custom_step_axis.py   (offline unless WANDB_MODE says otherwise)
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

import goggles_io as gg

out_dir = os.environ.get("WANDB_DIR", os.getcwd())  # runs go to <dir>/wandb/
os.makedirs(out_dir, exist_ok=True)

gg.attach(
    gg.WandBHandler(
        name="examples.wandb.axis", project="goggles_example", run_name="custom_axis", dir=out_dir
    )
)
logger = gg.get_logger("examples.axis", with_metrics=True)
# `joint_angle` is plotted against `sim_time_s`; `loss` keeps the default step axis.
logger.set_x_axis("joint_angle", "sim_time_s")

dt = 0.002  # the simulator runs at 500 Hz; we log every 25th physics step
for step in range(50):
    sim_time_s = step * 25 * dt
    logger.scalar("joint_angle", math.sin(2 * math.pi * sim_time_s), step=step, x=sim_time_s)
    logger.scalar("loss", 1.0 / (step + 1), step=step)

gg.finish()
print(f"W&B run 'custom_axis' written under {out_dir}/wandb: joint_angle vs sim_time_s")
print(f"upload it with: wandb sync {out_dir}/wandb")
