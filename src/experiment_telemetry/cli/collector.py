"""``telemetry collector``: serve the reference remote collector until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from typing import Any

from goggles_io.collector import Collector
from goggles_io.exceptions import ConfigurationError

__all__ = ["ENV_COLLECTOR_API_KEY", "add_parser", "run"]

# The key is read from the environment, never from argv (argv is visible to every user in ps).
ENV_COLLECTOR_API_KEY = "TELEMETRY_COLLECTOR_API_KEY"


def run(args: argparse.Namespace) -> int:
    """Serve on ``args.host:args.port`` storing into ``args.db``; exit 2 when bound beyond
    loopback without ``TELEMETRY_COLLECTOR_API_KEY``."""
    api_key = os.environ.get(ENV_COLLECTOR_API_KEY) or None
    try:
        collector = Collector(db_path=args.db, host=args.host, port=args.port, api_key=api_key)
    except ConfigurationError as exc:
        print(f"telemetry collector: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:
        print(f"telemetry collector: cannot open {args.db!r}: {exc}", file=sys.stderr)
        return 2
    try:
        collector.start()
    except (OSError, ImportError) as exc:
        collector.close()
        print(
            f"telemetry collector: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr
        )
        return 2
    auth = "on" if api_key else f"off (set {ENV_COLLECTOR_API_KEY} to require a key)"
    print(f"collector listening on {collector.url}, db {args.db}, auth {auth}", flush=True)
    print(f"dashboard: {collector.url}/", flush=True)
    if collector.exposed:
        print(
            f"warning: {args.host} is reachable from other machines; traffic is plain HTTP",
            file=sys.stderr,
            flush=True,
        )
    try:
        collector.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        collector.close()
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``collector`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "collector",
        help="run the collector for RemoteHandler (serves the dashboard of its runs too)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind")
    parser.add_argument("--port", type=int, default=8765, help="port to bind (0: any free)")
    parser.add_argument("--db", default="runs.sqlite", help="SQLite file for runs and points")
    parser.set_defaults(handler=run)
    return parser
