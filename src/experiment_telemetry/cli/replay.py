"""``telemetry replay RUN_DIR``: recompute the stats from the event log and compare."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from experiment_telemetry.cli.args import run_directory

__all__ = ["EXIT_DIFFERENT", "EXIT_UNREADABLE", "add_parser", "import_events", "run"]

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

    problem = run_directory("telemetry replay", args.run_dir)
    if problem:
        print(problem, file=sys.stderr)
        return EXIT_UNREADABLE
    for name in args.imports:
        try:
            import_events(name)
        except (ImportError, OSError, SyntaxError) as exc:
            print(f"telemetry replay: --import {name}: {exc}", file=sys.stderr)
            return EXIT_UNREADABLE
    log = Path(args.run_dir) / RUNTIME_EVENTS_FILE
    if log.is_file() and not _has_events(log):
        print(f"telemetry replay: {str(log)!r} is empty: nothing to replay", file=sys.stderr)
        return EXIT_UNREADABLE
    skipped: list[int] = []
    try:
        replayed = replay_run(args.run_dir, tolerant=args.tolerant, skipped=skipped)
        live = read_stats(args.run_dir, tolerant=args.tolerant, skipped=skipped)
    except ReplayError as exc:
        hint = ""
        if "unknown kind" in str(exc) and not args.imports:
            hint = " (pass --import MODULE or --import path/to/file.py: where the event is defined)"
        print(f"telemetry replay: {exc}{hint}", file=sys.stderr)
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


def import_events(name: str) -> None:
    """Import ``name``, a module path or a ``.py`` file, so its event classes register their kinds.

    A file is imported under its own name (``__name__`` is not ``"__main__"``), so a script that
    defines events and runs an experiment under a main guard registers the events only.
    """
    import importlib
    import importlib.util
    from pathlib import Path

    path = Path(name)
    if name.endswith(".py"):
        if not path.is_file():
            msg = f"no such file {name!r}"
            raise ImportError(msg)
        module_name = f"telemetry_replay_import_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            msg = f"cannot import {name!r} as a module"
            raise ImportError(msg)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return
    importlib.import_module(name)


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
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="import a module (my_robot.events) or a .py file that defines the run's own event "
        "classes before decoding (repeatable); a file's `if __name__ == '__main__':` part is not run",
    )
    parser.set_defaults(handler=run)
    return parser
