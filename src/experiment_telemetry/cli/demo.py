"""``telemetry demo``: run the demo experiment and say where everything went."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit 130 on Ctrl-C (the run is kept, marked interrupted)."""
    from experiment_telemetry.demo.experiment import run_demo

    try:
        result = run_demo(
            args.root,
            seed=args.seed,
            num_epochs=args.epochs,
            wandb=False if args.no_wandb else None,
        )
    except KeyboardInterrupt:
        print("\ninterrupted: the run directory keeps everything emitted so far")
        return 130
    print(f"\nrun {result.status}: {result.run_dir}")
    for name, path in sorted(result.files.items()):
        print(f"  {name:<15} {path}")
    wandb_dir = result.run_dir / "wandb"
    if wandb_dir.is_dir():
        print(f"  {'wandb':<15} {wandb_dir}  (upload: wandb sync {wandb_dir})")
    print(f"next: telemetry show {result.run_dir}")
    print(f"      telemetry replay {result.run_dir}")
    print(f"      telemetry plot {result.run_dir} -o demo.png")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="run the simulated object-recognition experiment end to end"
    )
    parser.add_argument("--root", default="runs", help="directory holding runs (default: runs)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs to run (default: 3)")
    parser.add_argument("--no-wandb", action="store_true", help="do not write a W&B offline run")
    parser.set_defaults(handler=run)
    return parser
