"""One W&B run per scope: an RL loop with one run per episode plus a global run, all grouped.

Run: python examples/05_wandb_multiple_runs.py   (offline unless WANDB_MODE says otherwise)
"""

from __future__ import annotations

import os

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

import goggles_io as gg
from goggles_io import WandBHandler

out_dir = os.environ.get("WANDB_DIR", os.getcwd())  # runs go to <dir>/wandb/
os.makedirs(out_dir, exist_ok=True)

logger = gg.get_logger("examples.basic", with_metrics=True)
handler = WandBHandler(
    name="examples.wandb.multi",
    project="goggles_example",
    reinit="create_new",
    group="multiple_runs",
    dir=out_dir,
)

num_episodes = 3
episode_length = 10
scopes = [f"episode_{episode}" for episode in range(num_episodes)]
scopes.append("global")
gg.attach(handler, scopes=scopes)


def my_episode(index: int) -> None:
    episode_logger = gg.get_logger(scope=f"episode_{index}", with_metrics=True)
    for step in range(episode_length):
        # each scope has its own run and its own step counter
        episode_logger.scalar("env/reward", index * episode_length + step, step=step)


for i in range(num_episodes):
    my_episode(i)
    logger.scalar("total_reward", i, step=i)

gg.finish()
print(f"{num_episodes + 1} W&B runs in group 'multiple_runs' under {out_dir}/wandb")
print(f"upload them with: wandb sync {out_dir}/wandb")
