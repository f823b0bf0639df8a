"""The telemetry command line: each subcommand parses, calls the library, and prints."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from experiment_telemetry import __version__
from experiment_telemetry.cli import broker, collector, demo, diff, plot, replay, runs, show, ui
from experiment_telemetry.cli.args import OneLineParser as _OneLineParser

__all__ = ["main", "make_parser"]

_SUBCOMMANDS = (demo, runs, show, diff, replay, plot, ui, collector, broker)


def make_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every subcommand module's subparser."""
    parser = _OneLineParser(prog="telemetry", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_OneLineParser
    )
    for module in _SUBCOMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``telemetry`` command and return its exit status."""
    parser = make_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        status = int(handler(args) or 0)
        sys.stdout.flush()  # surface a closed pipe here, not in interpreter shutdown
        return status
    except BrokenPipeError:
        # ``telemetry show RUN | head``: the reader left; exit quietly like other Unix tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
