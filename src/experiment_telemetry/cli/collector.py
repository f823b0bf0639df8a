"""``telemetry collector``: serve the reference remote collector until Ctrl-C."""

from __future__ import annotations

import argparse
from typing import Any

from experiment_telemetry.cli.args import port
from experiment_telemetry.cli.serving import (
    ENV_COLLECTOR_API_KEY,
    api_key_from_env,
    serve_until_interrupted,
    start_collector,
)

__all__ = ["ENV_COLLECTOR_API_KEY", "add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Serve on ``args.host:args.port`` storing into ``args.db``; exit 2 when bound beyond
    loopback without ``TELEMETRY_COLLECTOR_API_KEY``."""
    api_key = api_key_from_env()
    collector = start_collector("telemetry collector", args.db, args.host, args.port, api_key)
    if collector is None:
        return 2
    auth = "on" if api_key else f"off (set {ENV_COLLECTOR_API_KEY} to require a key)"

    def announce() -> None:
        print(f"collector listening on {collector.url}, db {args.db}, auth {auth}", flush=True)
        print(f"dashboard: {collector.url}/", flush=True)

    return serve_until_interrupted(collector, announce)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``collector`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "collector",
        help="run the collector for RemoteHandler (serves the dashboard of its runs too)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind")
    parser.add_argument("--port", type=port, default=8765, help="port to bind (0: any free)")
    parser.add_argument("--db", default="runs.sqlite", help="SQLite file for runs and points")
    parser.set_defaults(handler=run)
    return parser
