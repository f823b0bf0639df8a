"""``telemetry replay RUN_DIR``: recompute the stats from the event log and compare."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["EXIT_DIFFERENT", "EXIT_UNREADABLE", "add_parser", "run"]

EXIT_DIFFERENT = 1
"""The replayed stats differ from the live ones."""
EXIT_UNREADABLE = 2
"""A file is missing, unreadable or damaged: nothing was compared."""


def run(args: argparse.Namespace) -> int:
    """Print the replayed totals; exit 1 when they differ from the live stats, 2 when a file is
    missing, unreadable or empty (one line naming the file and line, never a traceback)."""
    from pathlib import Path

    from experiment_telemetry.exceptions import ReplayError
    from experiment_telemetry.recorder import RUNTIME_EVENTS_FILE
    from experiment_telemetry.replay import read_stats, replay_run
    from experiment_telemetry.stats import OverallStats
    from experiment_telemetry.transforms.console import format_overall_table

    log = Path(args.run_dir) / RUNTIME_EVENTS_FILE
    if log.is_file() and not _has_events(log):
        print(f"telemetry replay: {str(log)!r} is empty: nothing to replay", file=sys.stderr)
        return EXIT_UNREADABLE
    skipped: list[int] = []
    try:
        replayed = replay_run(args.run_dir, tolerant=args.tolerant, skipped=skipped)
        live = read_stats(args.run_dir, tolerant=args.tolerant, skipped=skipped)
    except ReplayError as exc:
        print(f"telemetry replay: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    if skipped:
        print(f"skipped {len(skipped)} torn last line(s) (--tolerant)", file=sys.stderr)
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
    return EXIT_DIFFERENT


def _has_events(log: Any) -> bool:
    with open(log, "rb") as fh:
        return any(line.strip() for line in fh)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``replay`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "replay", help="recompute a run's stats from its recorded events and compare"
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by the harness")
    parser.add_argument(
        "--tolerant",
        action="store_true",
        help="skip a torn last line (a killed writer leaves one) instead of refusing the run",
    )
    parser.set_defaults(handler=run)
    return parser
