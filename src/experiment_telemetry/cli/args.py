"""Argument types and the parser of the ``telemetry`` command: a bad value is one line, exit 2.

argparse prints its usage and then the error; a newcomer who typed ``--port 99999`` needs only
the error, so :class:`OneLineParser` prints ``telemetry <cmd>: error: <what>`` alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["OneLineParser", "non_negative", "port", "run_directory"]


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit 2), without the usage."""

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: message`` and exit 2 (``--help`` still shows the usage)."""
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def port(text: str) -> int:
    """A TCP port: 0 (any free one) to 65535."""
    return _whole_number(
        text,
        0,
        65535,
        "port must be a whole number from 0 to 65535",
        "port must be from 0 (any free port) to 65535",
    )


def non_negative(text: str) -> int:
    """A count: a whole number >= 0."""
    return _whole_number(text, 0, None, "must be a whole number >= 0", "must be >= 0")


def _whole_number(text: str, low: int, high: int | None, not_whole: str, outside: str) -> int:
    """``text`` as an int from ``low`` to ``high`` (``None``: no top); the messages say why not."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{not_whole} (got {text!r})") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{outside} (got {value})")
    return value


def run_directory(prog: str, path: str) -> str | None:
    """Why ``path`` cannot be a run directory (missing, or a file), or ``None`` when it is a folder."""
    target = Path(path)
    if not target.exists():
        return f"{prog}: {path!r} does not exist"
    if not target.is_dir():
        return f"{prog}: {path!r} is a file, not a run directory"
    return None
