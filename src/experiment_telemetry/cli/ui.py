"""``telemetry ui [RUN_DIR_OR_ROOT ...]``: the web dashboard, which is also a collector."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from experiment_telemetry.cli.args import port
from experiment_telemetry.cli.serving import (
    api_key_from_env,
    serve_until_interrupted,
    start_collector,
)

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Serve the dashboard until Ctrl-C; exit 2 with one line for a path that is not there, a
    database that cannot be opened, a port in use, or a public host without a key."""
    # Without paths: the runs folder, unless a collector database is all that is asked for.
    paths = args.paths or ([] if args.collector_db and not Path("runs").is_dir() else ["runs"])
    missing = [p for p in paths if not Path(p).is_dir()]
    if missing:
        print(f"telemetry ui: {missing[0]!r} is not a directory", file=sys.stderr)
        return 2
    api_key = api_key_from_env()
    db = args.collector_db or ":memory:"
    collector = start_collector(
        "telemetry ui", db, args.host, args.port, api_key, run_dirs=paths, index_dir=args.index_dir
    )
    if collector is None:
        return 2
    shown = [*paths, *([f"collector db {db}"] if args.collector_db else [])]
    where = " + ".join(shown) or "the runs logged to it"
    login = "?key=<your key>" if api_key else ""

    def announce() -> None:
        print(f"telemetry ui on {collector.url}/{login} showing {where}", flush=True)
        print(
            f"RemoteHandler(server_url={collector.url!r}) logs into it too; Ctrl-C stops",
            flush=True,
        )

    return serve_until_interrupted(collector, announce)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``ui`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ui", help="serve a live web dashboard of runs (and collect RemoteHandler runs)"
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="RUN_DIR_OR_ROOT",
        help="run directories or roots (default: runs)",
    )
    parser.add_argument("--collector-db", metavar="FILE", help="SQLite database of a collector")
    parser.add_argument(
        "--index-dir",
        metavar="DIR",
        help="where the metric index is kept (default $XDG_CACHE_HOME/split-telemetry/ui-index)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=port, default=8765, help="port (default 8765; 0: any free)")
    parser.set_defaults(handler=run)
    return parser
