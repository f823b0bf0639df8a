"""``telemetry diff RUN RUN...``: what differed in the recorded config of two or more runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import nonfinite_json
from goggles_io.runs import describe_run, diff_configs, format_diff, is_run_dir, read_config

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Print the keys whose values differ (all keys with ``--all``; JSON with ``--json``);
    exit 0 once compared (as ``git diff``), 2 with one line when a path is not a run directory;
    with ``--exit-code``, 1 when some value differs (for scripts)."""
    configs: dict[str, dict[str, Any]] = {}
    for text in args.run_dirs:
        path = Path(text)
        if not path.is_dir() or not is_run_dir(path):
            print(f"telemetry diff: {text!r} is not a run directory", file=sys.stderr)
            return 2
        label = str(describe_run(path).get("run_id") or path.name)
        while label in configs:  # two folders of the same name under different roots
            label += "'"
        configs[label] = read_config(path)
    diff = diff_configs(configs)
    if args.json:
        print(nonfinite_json.dumps(diff.to_dict(), default=str))
    else:
        print(format_diff(diff, all_keys=args.all))
    return 1 if args.exit_code and diff.differing else 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``diff`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "diff", help="show which config values differ between runs"
    )
    parser.add_argument(
        "run_dirs", nargs="+", metavar="RUN_DIR", help="two or more run directories"
    )
    parser.add_argument(
        "--all", action="store_true", help="show every key, differing ones marked *"
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument(
        "--exit-code", action="store_true", help="exit 1 when some value differs, 0 when none does"
    )
    parser.set_defaults(handler=run)
    return parser
