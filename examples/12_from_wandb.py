"""A training script written for Weights & Biases, with one line changed: its import.

Everything below the import is what a W&B script does (``wandb.init(config=...)``,
``wandb.log({...}, step=...)``, ``wandb.config``, ``wandb.summary[...]``,
``wandb.define_metric``, ``wandb.finish()``); the run lands in ``runs/<run id>/`` as a
goggles_io run: ``telemetry ui`` charts it, ``telemetry diff`` compares two, ``open_run`` reads it.
numpy only (a made-up learning curve), so it runs anywhere in a second.

Run: python examples/12_from_wandb.py --seed 0 && python examples/12_from_wandb.py --seed 1 --lr 1e-3
then: telemetry ui   (or: telemetry runs; telemetry diff runs/<a> runs/<b>)
"""

from __future__ import annotations

import argparse

import numpy as np

import goggles_io.compat.wandb as wandb  # was: import wandb

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--lr", type=float, default=3e-4)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--total-steps", type=int, default=2000)
parser.add_argument("--eval-every", type=int, default=200)
parser.add_argument("--dir", default=None, help="runs folder (default: ./runs)")
args = parser.parse_args()

run = wandb.init(
    project="from-wandb",
    name=f"sgd-seed{args.seed}",
    config=vars(args),
    dir=args.dir,
    tags=["example", f"seed{args.seed}"],
    notes="a W&B script, one import changed",
)
wandb.config.update({"optimizer": {"name": "sgd", "momentum": 0.9}})
wandb.define_metric("eval/*", step_metric="epoch")  # eval curves against epochs, not steps

rng = np.random.default_rng(args.seed)
best = -np.inf
for step in range(args.total_steps):
    progress = step / args.total_steps
    loss = np.exp(-progress * args.lr * 1e4) + 0.05 * rng.random()
    wandb.log(
        {
            "train/loss": loss,
            "train/lr": args.lr * (1.0 - progress),
            "charts": {"episodic_return": 100 * (1 - loss) + rng.normal()},
        },
        step=step,
    )
    if (step + 1) % args.eval_every == 0:
        epoch = (step + 1) // args.eval_every
        eval_return = 100 * (1 - loss) + 5 * rng.normal()
        wandb.log({"eval/return": eval_return, "epoch": epoch}, step=step)
        best = max(best, eval_return)
        wandb.summary["best_eval_return"] = best

wandb.log({"weights": wandb.Histogram(rng.normal(size=1000))}, step=args.total_steps - 1)
print(f"config: lr={wandb.config.lr} optimizer={wandb.config['optimizer']['name']}")
print(f"summary: best_eval_return={wandb.summary['best_eval_return']:.2f}")
wandb.finish()
print(f"run written to {run.dir}")
