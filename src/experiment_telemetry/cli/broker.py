"""``telemetry broker list|prune --url URL``: what the broker left in a Redis (ADR 0039)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from experiment_telemetry.cli.args import non_negative

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """List the runs with keys in Redis, or prune the idle ones; exit 2 with one line when
    Redis cannot be used (no ``redis`` package, unreachable, not a Redis URL)."""
    from goggles_io.broker import broker_runs, prune_broker
    from goggles_io.exceptions import ConfigurationError

    try:
        if args.action == "list":
            found = broker_runs(args.url, idle_s=args.idle)
        else:
            found = prune_broker(args.url, args.run or None, args.dry_run, idle_s=args.idle)
    except ConfigurationError as exc:
        print(f"telemetry broker: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if args.action == "list":
        if not found:
            print("no broker runs in this Redis")
        for item in found:
            state = "idle" if item.idle else "in use"
            print(
                f"{item.run}: {item.entries} entries ({item.unhandled} unhandled), "
                f"{item.groups} groups, {item.consumers_reading} consumers reading, "
                f"{item.live_producers} live producers, {len(item.keys)} keys, {state}"
            )
        return 0
    verb = "would remove" if args.dry_run else "removed"
    for item in found:
        print(f"{verb} {item.run}: {len(item.keys)} keys, {item.unhandled} unhandled entries")
    print(f"{verb} {len(found)} runs")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``broker`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "broker", help="list or prune what broker runs left in a Redis"
    )
    parser.add_argument("action", choices=["list", "prune"], help="list runs, or prune idle ones")
    parser.add_argument(
        "--url", required=True, help="the Redis, as in GOGGLES_BROKER (redis://host:port/db)"
    )
    parser.add_argument(
        "--run", action="append", help="prune only this run (repeatable); default: every idle one"
    )
    parser.add_argument("--dry-run", action="store_true", help="say what prune would remove")
    parser.add_argument(
        "--idle",
        type=non_negative,
        default=600,
        help="seconds without a producer's send or a consumer's read after which a run is "
        "idle (default 600)",
    )
    parser.set_defaults(handler=run)
    return parser
