"""``telemetry replay RUN_DIR``: recompute the stats from the event log and compare."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Print the replayed totals; exit 1 when they differ from the live stats, 2 on bad input."""
    from experiment_telemetry.exceptions import ReplayError
    from experiment_telemetry.replay import read_stats, replay_run
    from experiment_telemetry.stats import OverallStats
    from experiment_telemetry.transforms.console import format_overall_table

    try:
        replayed = replay_run(args.run_dir)
        live = read_stats(args.run_dir)
    except ReplayError as exc:
        print(f"telemetry replay: {exc}", file=sys.stderr)
        return 2
    latest: dict[str, OverallStats] = {}
    for stat in replayed:
        if isinstance(stat, OverallStats):
            latest[stat.mode] = stat
    print(f"replayed {len(replayed)} stat events from {args.run_dir}")
    if latest:
        print(format_overall_table([latest[m] for m in sorted(latest)]))
    if replayed == live:
        print(f"identical to the {len(live)} stat events recorded live")
        return 0
    first = next(
        (i for i, (a, b) in enumerate(zip(replayed, live, strict=False)) if a != b),
        min(len(replayed), len(live)),
    )
    print(f"DIFFERENT from the live stats, first at index {first}", file=sys.stderr)
    return 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``replay`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "replay", help="recompute a run's stats from its recorded events and compare"
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by the harness")
    parser.set_defaults(handler=run)
    return parser
