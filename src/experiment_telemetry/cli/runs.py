"""``telemetry runs [ROOT]``: list runs with status, age and last step.

Every run directory the dashboard lists is listed: ``RunContext`` runs (``run.kv``), and folders
without one (robo-goggles' layout, a TensorBoard log directory), the latter with status
``unknown``. The last step is the largest one logged, wherever it came in the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from goggles_io.runs import describe_run, find_runs, shown_status
from goggles_io.runs.lines import json_objects

__all__ = ["add_parser", "run"]


def _age(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def _alerts(info: dict[str, Any]) -> str:
    """Alerts in the run's ``alerts.jsonl`` (and its unreadable lines); '-' without watchers."""
    file = Path(str(info.get("run_dir", ""))) / "alerts.jsonl"
    if not file.is_file():
        return "-"
    try:
        found = json_objects(file.read_bytes())
    except OSError:
        return "?"
    count = len(found.items)
    return f"{count} ({found.unreadable} unreadable)" if found.unreadable else str(count)


def _layout(info: dict[str, Any]) -> str:
    """What a folder without ``run.kv`` is, where a run's project would be: ``(tensorboard)``."""
    layout = info.get("layout")
    return f"({layout})" if layout and layout != "run.kv" else ""


def run(args: argparse.Namespace) -> int:
    """Print one line per run under ``args.root``; exit 0 even when there are none, 2 when
    ``args.root`` is not a directory.

    A damaged run is listed as ``unreadable`` and its reason printed on stderr (one line,
    naming the file and line); the other runs are listed as usual.
    """
    if not Path(args.root).is_dir():
        print(f"telemetry runs: {args.root!r} is not a directory", file=sys.stderr)
        return 2
    root = Path(args.root)
    runs = sorted(
        (describe_run(path) for path in find_runs(root)),
        key=lambda info: str(info.get("started", "")),
    )  # oldest first; a damaged run is listed, unreadable, with its reason
    for info in runs:
        if info.get("error"):
            print(f"telemetry runs: {info['error']}", file=sys.stderr)
    if not runs:
        print(f"no runs under {args.root}")
        return 0
    rows = [("RUN", "STATUS", "AGE", "LAST STEP", "ALERTS", "PROJECT")]
    for info in runs:
        step = info.get("last_step")
        rows.append(
            (
                str(info.get("run_id", "?")),
                shown_status(info),
                _age(info.get("age_s")),
                "-" if step is None else str(step),
                _alerts(info),
                str(info.get("project") or _layout(info)),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``runs`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "runs",
        help="list runs: status (running/done/failed/interrupted/crashed; '(lost N)' when events "
        "were not delivered), age, last step, alerts",
    )
    parser.add_argument("root", nargs="?", default="runs", help="directory holding runs")
    parser.set_defaults(handler=run)
    return parser
