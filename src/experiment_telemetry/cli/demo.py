"""``telemetry demo``: run the demo experiment and say where everything went."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

from experiment_telemetry.demo.scenarios import SCENARIOS

__all__ = ["add_parser", "run"]

# demo.scenarios imports nothing, so ``telemetry --help`` stays cheap.
_SCENARIOS = ("recognition", *SCENARIOS, "all")


def _run_scenarios(args: argparse.Namespace) -> list[Any]:
    from experiment_telemetry.demo.watch import run_watch_demo
    from experiment_telemetry.stats import MetricAlert

    wandb = not args.no_wandb and importlib.util.find_spec("wandb") is not None
    results = []
    for scenario in SCENARIOS if args.scenario == "all" else (args.scenario,):
        print(f"== scenario {scenario}: a simulated training loop, broken at episode 60")
        result = run_watch_demo(scenario, args.root, seed=args.seed, wandb=wandb, progress=False)
        alerts = [s for s in result.stats if isinstance(s, MetricAlert)]
        print(f"{len(alerts)} alert(s) in {result.run_dir / 'alerts.jsonl'}\n")
        results.append(result)
    return results


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit 130 on Ctrl-C (the run is kept, marked interrupted), 2 with one line
    for bad input (``--epochs`` below 1, a ``--root`` that cannot be written, a ``--broker``
    without the ``redis`` package or whose Redis does not answer)."""
    from pathlib import Path

    from experiment_telemetry.demo.experiment import run_demo
    from experiment_telemetry.exceptions import ExperimentTelemetryError
    from goggles_io.exceptions import GogglesIOError

    if args.epochs < 1:
        print(f"telemetry demo: --epochs must be >= 1 (got {args.epochs})", file=sys.stderr)
        return 2
    try:
        Path(args.root).mkdir(parents=True, exist_ok=True)
        probe = Path(args.root) / f".telemetry-write-check-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or exc
        print(f"telemetry demo: cannot write runs under {args.root!r}: {reason}", file=sys.stderr)
        return 2
    if args.workers and args.scenario != "recognition":
        print("telemetry demo: --workers applies to the recognition demo only", file=sys.stderr)
        return 2
    if args.broker is not None:
        if not args.workers:
            print("telemetry demo: --broker needs --workers N", file=sys.stderr)
            return 2
        if not args.broker.startswith(("redis://", "rediss://", "unix://")):
            print("telemetry demo: --broker must be a redis:// or rediss:// URL", file=sys.stderr)
            return 2
        import goggles_io

        # Nothing would reach this process, so nothing could be scored: stop before the run.
        try:
            problem = goggles_io.check_broker(args.broker)
        except GogglesIOError as exc:  # a URL redis-py cannot parse (a port out of range)
            problem = " ".join(str(exc).split()).rstrip(".")
        if problem is not None:
            print(f"telemetry demo: --broker: {problem}; the demo does not start", file=sys.stderr)
            return 2
        # The workers stand for other machines: they reach this process only through Redis.
        os.environ["GOGGLES_BROKER"] = args.broker
        # This process only reads the workers' stream: its own events stay here (ADR 0039).
        os.environ["GOGGLES_BROKER_FORWARD"] = "0"
    try:
        if args.scenario != "recognition":
            results = _run_scenarios(args)
        else:
            results = [
                run_demo(
                    args.root,
                    seed=args.seed,
                    num_epochs=args.epochs,
                    wandb=False if args.no_wandb else None,
                    workers=args.workers,
                )
            ]
    except KeyboardInterrupt:
        print("\ninterrupted: the run directory keeps everything emitted so far")
        return 130
    except (OSError, ExperimentTelemetryError, GogglesIOError) as exc:
        print(f"telemetry demo: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    for result in results[:-1]:
        print(f"run {result.status}: {result.run_dir}")
    result = results[-1]
    watched = args.scenario != "recognition"
    print(f"\nrun {result.status}: {result.run_dir}")
    if result.workers is not None:
        print(result.workers.summary())
    for name, path in sorted(result.files.items()):
        print(f"  {name:<15} {path}")
    wandb_dir = result.run_dir / "wandb"
    if wandb_dir.is_dir():
        print(f"  {'wandb':<15} {wandb_dir}  (upload: wandb sync {wandb_dir})")
    print(
        f"next: telemetry show {result.run_dir}"
        + ("   (config, metrics, alerts)" if watched else "")
    )
    print(f"      telemetry replay {result.run_dir}")
    if not watched:  # a watch scenario has no episode verdicts to plot: the UI shows its charts
        print(f"      telemetry plot {result.run_dir} -o demo.png")
    print(f"      telemetry ui {args.root}   (live dashboard: runs, charts, stats, media)")
    return 0


def _workers(text: str) -> int:
    value = int(text)
    if value < 0:
        msg = f"must be >= 0 (got {value})"
        raise argparse.ArgumentTypeError(msg)
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="run the simulated object-recognition experiment end to end"
    )
    parser.add_argument("--root", default="runs", help="directory holding runs (default: runs)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs to run (default: 3)")
    parser.add_argument(
        "--workers",
        type=_workers,
        default=0,
        help="run the simulated runtime in N worker processes (default: 0, in this process)",
    )
    parser.add_argument(
        "--broker",
        metavar="URL",
        help="with --workers: the workers run as other machines (their own goggles host) and "
        "reach this process only through this Redis (redis://host:port/db)",
    )
    parser.add_argument("--no-wandb", action="store_true", help="do not write a W&B offline run")
    parser.add_argument(
        "--scenario",
        choices=_SCENARIOS,
        default="recognition",
        help="recognition (default): the object-recognition experiment; any other: a simulated "
        "training loop driven into that failure, with the watchers' alerts; all: every failure",
    )
    parser.set_defaults(handler=run)
    return parser
