"""``telemetry ui [RUN_DIR_OR_ROOT ...]``: the web dashboard, which is also a collector."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from experiment_telemetry.cli.collector import ENV_COLLECTOR_API_KEY
from goggles_io.exceptions import ConfigurationError

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Serve the dashboard until Ctrl-C; exit 2 with one line for a path that is not there, a
    database that cannot be opened, a port in use, or a public host without a key."""
    from goggles_io.collector import Collector

    paths = args.paths or ["runs"]
    missing = [p for p in paths if not Path(p).is_dir()]
    if missing:
        print(f"telemetry ui: {missing[0]!r} is not a directory", file=sys.stderr)
        return 2
    api_key = os.environ.get(ENV_COLLECTOR_API_KEY) or None
    db = args.collector_db or ":memory:"
    try:
        collector = Collector(
            db_path=db, host=args.host, port=args.port, api_key=api_key, run_dirs=paths
        )
    except ConfigurationError as exc:
        print(f"telemetry ui: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:
        print(f"telemetry ui: cannot open the collector database {db!r}: {exc}", file=sys.stderr)
        return 2
    try:
        collector.start()
    except (OSError, ImportError) as exc:
        collector.close()
        print(f"telemetry ui: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    where = ", ".join(paths) + (f" + collector db {db}" if args.collector_db else "")
    login = "?key=<your key>" if api_key else ""
    print(f"telemetry ui on {collector.url}/{login} showing {where}", flush=True)
    print(f"RemoteHandler(server_url={collector.url!r}) logs into it too; Ctrl-C stops", flush=True)
    try:
        collector.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        collector.close()
    return 0


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
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    parser.set_defaults(handler=run)
    return parser
