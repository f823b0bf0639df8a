"""The one way goggles_io tells the user something went wrong: a line on stderr, each kind once.

Straight to stderr, not through a logger: diagnostics from a logging library must be seen even
when nobody configured stdlib ``logging``, and must never loop back into a handler. The
host signs its lines ``goggles_io host[<pid>]`` so they can be told from a client's in a
shared terminal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

__all__ = ["ReportOnce", "host_name", "report"]


def host_name() -> str:
    """How the host signs its lines: ``goggles_io host[<pid>]`` (also when it runs in-process)."""
    return f"goggles_io host[{os.getpid()}]"


def report(message: str, who: str = "goggles_io") -> None:
    """Write ``<who>: message`` to stderr; a closed or broken stderr is ignored."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"{who}: {message}\n")
        sys.stderr.flush()


class ReportOnce:
    """Report each ``key`` once (then only count): the first of many equal failures is shown.

    Args:
        logger: send the line to this stdlib logger instead of stderr, for sinks whose
            diagnostics users already filter with ``logging`` (W&B, the remote sender).
        level: the logger level of a line (with ``logger``) unless a call names its own.
    """

    __slots__ = ("_level", "_logger", "_seen", "who")

    def __init__(
        self,
        logger: logging.Logger | None = None,
        level: int = logging.WARNING,
        who: str = "goggles_io",
    ) -> None:
        self._seen: set[str] = set()
        self._logger = logger
        self._level = level
        self.who = who

    def __call__(self, key: str, message: str, *args: object, level: int | None = None) -> bool:
        """Report ``message % args`` unless ``key`` was reported before; ``True`` if written."""
        if key in self._seen:
            return False
        self._seen.add(key)
        text = message % args if args else message
        if self._logger is None:
            report(text, self.who)
        else:
            self._logger.log(self._level if level is None else level, "%s", text)
        return True

    def seen(self, key: str) -> bool:
        """Whether ``key`` was reported already."""
        return key in self._seen
