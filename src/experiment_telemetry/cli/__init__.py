"""The telemetry command line: each subcommand parses, calls the library, and prints."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from experiment_telemetry.cli import broker, collector, demo, diff, plot, replay, runs, show, ui
from experiment_telemetry.cli.args import OneLineParser as _OneLineParser

__all__ = ["main", "make_parser"]

_SUBCOMMANDS = (demo, runs, show, diff, replay, plot, ui, collector, broker)


class _Version(argparse.Action):
    """``--version``: the package metadata is read only when asked (``importlib.metadata``
    costs ~10 ms of every command's start, ``telemetry ui``'s included; ADR 0082)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        import experiment_telemetry

        print(f"{parser.prog} {experiment_telemetry.__version__}")
        parser.exit()


def make_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every subcommand module's subparser."""
    parser = _OneLineParser(prog="telemetry", description=__doc__)
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
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
