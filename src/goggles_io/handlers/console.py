"""``ConsoleHandler``: readable text lines on stdout/stderr, coloured when the stream is a tty.

The time shown is the event's emission time, not the time the worker thread got to it, so lines
from an async handler still tell when things happened.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, ClassVar, TextIO

from goggles_io._event.records import Event, Kind
from goggles_io.exceptions import ConfigurationError
from goggles_io.handlers.base import BaseHandler, register_handler

__all__ = ["ConsoleHandler"]

_COLOURS = {
    logging.DEBUG: "\x1b[2m",
    logging.INFO: "\x1b[32m",
    logging.WARNING: "\x1b[33m",
    logging.ERROR: "\x1b[31m",
    logging.CRITICAL: "\x1b[1;31m",
}
_RESET = "\x1b[0m"
_STREAMS = ("stderr", "stdout")


def _level_name(level: int | None) -> str:
    return logging.getLevelName(level) if level is not None else "-"


@register_handler
class ConsoleHandler(BaseHandler):
    """Print ``LOG`` and ``TEXT`` events as ``time LEVEL [scope] logger: message``.

    Args:
        name: bus-wide handler name.
        level: minimum level shown.
        stream: ``"stderr"`` (default, like stdlib logging) or ``"stdout"``.
        color: ``None`` colours only when the stream is a tty; ``True``/``False`` force it.
        show_caller: append ``(file:line)`` of the call that logged.
    """

    capabilities: ClassVar[frozenset[Kind]] = frozenset({Kind.LOG, Kind.TEXT})
    default_name: ClassVar[str] = "console"

    def __init__(
        self,
        name: str | None = None,
        level: int = logging.NOTSET,
        *,
        stream: str = "stderr",
        color: bool | None = None,
        show_caller: bool = False,
    ) -> None:
        super().__init__(name=name, level=level)
        if stream not in _STREAMS:
            msg = f"stream must be one of {_STREAMS!r} (got {stream!r})."
            raise ConfigurationError(msg, key="stream", value=stream)
        self.stream = stream
        self.color = color
        self.show_caller = show_caller

    def config(self) -> dict[str, Any]:
        return {
            **super().config(),
            "stream": self.stream,
            "color": self.color,
            "show_caller": self.show_caller,
        }

    def _out(self) -> TextIO:
        # Looked up per write so pytest's capture and redirect_stdout are honoured.
        return sys.stderr if self.stream == "stderr" else sys.stdout

    def format(self, event: Event, *, colour: bool = False) -> str:
        """Return the text line(s) for ``event``."""
        ts = event.timestamp
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
        level = _level_name(event.level)
        if colour and event.level is not None:
            level = f"{_COLOURS.get(event.level, '')}{level:<8}{_RESET}"
        else:
            level = f"{level:<8}"
        extra = event.extra
        text = str(event.payload)
        if event.kind is Kind.TEXT and "name" in extra:
            text = f"{extra['name']}: {text}"
        line = f"{stamp}.{int(ts * 1000) % 1000:03d} {level} [{event.scope}] {event.logger}: {text}"
        bound = extra.get("bound")
        if bound:
            line += " " + " ".join(f"{k}={v!r}" for k, v in bound.items())
        if self.show_caller and event.filepath:
            line += f" ({event.filepath}:{event.lineno})"
        exc_text = extra.get("exc_text")
        if exc_text:
            line += "\n" + str(exc_text).rstrip("\n")
        return line

    def handle(self, event: Event) -> None:
        out = self._out()
        colour = self.color
        if colour is None:
            isatty = getattr(out, "isatty", None)
            colour = bool(isatty and isatty())
        out.write(self.format(event, colour=colour) + "\n")

    def flush(self) -> None:
        self._out().flush()
