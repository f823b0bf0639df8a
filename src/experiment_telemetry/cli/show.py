"""``telemetry show RUN_DIR``: a run's identity, config, the last value of each metric, alerts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from experiment_telemetry.cli.args import non_negative, run_directory
from goggles_io.runs import (
    RunFileError,
    describe_run,
    is_run_dir,
    last_metrics,
    open_run,
    read_config,
    read_kv,
    read_run,
    shown_status,
)
from goggles_io.runs.lines import Objects, json_objects

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Print the run; exit 2 when ``RUN_DIR`` is no run directory (no ``run.kv``, event log,
    ``metrics.csv`` or TensorBoard event files), a run file is unreadable, or ``run.kv`` lacks
    the run id or status (not a run file, or overwritten).

    A folder without ``run.kv`` (robo-goggles' layout, a TensorBoard log directory) is shown
    by its folder name with status ``unknown``; a TensorBoard run's config is its
    hyperparameters and its metrics are read from its event files."""
    run_dir = Path(args.run_dir)
    problem = run_directory("telemetry show", args.run_dir)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if not is_run_dir(run_dir):
        print(
            f"telemetry show: {str(run_dir)!r} is not a run directory (no run.kv, event log, "
            "metrics.csv or TensorBoard event files)",
            file=sys.stderr,
        )
        return 2
    has_kv = (run_dir / "run.kv").is_file()
    try:
        info = read_run(run_dir) if has_kv else describe_run(run_dir)
        if (run_dir / "config.kv").is_file():  # a damaged one is an error, never skipped
            config = {**read_kv(run_dir / "config.kv")}
        else:
            config = read_config(run_dir)  # TensorBoard's hyperparameters
    except (RunFileError, OSError) as exc:
        print(f"telemetry show: {exc}", file=sys.stderr)
        return 2
    missing = [key for key in ("run_id", "status") if not info.get(key)]
    if missing:
        msg = f"{str(run_dir / 'run.kv')!r} is damaged: no {' or '.join(missing)} in it"
        print(f"telemetry show: {msg}", file=sys.stderr)
        return 2
    print(
        f"run {info.get('run_id')}  status={shown_status(info)}  last_step={info.get('last_step')}"
    )
    for key in ("project", "driver", "slug", "seed", "git_commit", "started", "finished", "lost",
                "layout", "note"):  # fmt: skip
        if key in info and (has_kv or key not in ("started",)):
            print(f"  {key}: {info[key]}")
    if info.get("reason"):
        print(f"  reason: {info['reason']}")
    print("config:" if config else "config: (none recorded)")
    for key, value in sorted(config.items()):
        print(f"  {key} = {value}")
    metrics = last_metrics(run_dir)
    if info.get("layout") == "tensorboard":
        metrics = {**open_run(run_dir).summary, **metrics}
    print("metrics (last value):" if metrics else "metrics: (none found)")
    for name, number in sorted(metrics.items()):
        print(f"  {name} = {number:.6g}")
    _print_alerts(run_dir, args.alerts)
    return 0


def _objects(file: Path) -> Objects:
    try:
        return json_objects(file.read_bytes()) if file.is_file() else Objects([])
    except OSError as exc:
        print(f"{file.name}: cannot be read ({exc.strerror or exc})")
        return Objects([])


def _print_alerts(run_dir: Path, limit: int) -> None:
    """The run's alerts (``alerts.jsonl``), the latest ``limit`` of them, and how many lines of
    ``alerts.jsonl`` and ``stats.jsonl`` could not be read (counted, never hidden)."""
    file = run_dir / "alerts.jsonl"
    found = _objects(file)
    if not file.is_file():
        print("alerts: (not watched)")
    else:
        alerts = found.items
        print(f"alerts: {len(alerts)}" if alerts else "alerts: none")
        for alert in alerts[-limit:] if limit else []:
            print(f"  [{alert.get('severity', '?')}] {alert.get('message', alert)}")
    for name, count in (("alerts.jsonl", found.unreadable),
                        ("stats.jsonl", _objects(run_dir / "stats.jsonl").unreadable)):  # fmt: skip
        if count:
            print(f"unreadable: {count} line{'s' if count != 1 else ''} of {name}")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``show`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "show", help="print a run's config, the last value of each metric and its alerts"
    )
    parser.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="a run directory (run.kv, an event log, metrics.csv or TensorBoard event files)",
    )
    parser.add_argument(
        "--alerts",
        type=non_negative,
        default=20,
        metavar="N",
        help="show the latest N alerts (default 20; 0: only their count)",
    )
    parser.set_defaults(handler=run)
    return parser
