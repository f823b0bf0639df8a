"""``ConsoleHandler``: readable text lines on stdout/stderr, coloured when the stream is a tty.

The time shown is the event's emission time, not the time the worker thread got to it, so lines
from an async handler still tell when things happened.
"""

from __future__ import annotations

import logging
import os
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
_PATH_STYLES = ("relative", "absolute")


def _level_name(level: int | None) -> str:
    return logging.getLevelName(level) if level is not None else "-"


@register_handler
class ConsoleHandler(BaseHandler):
    """Print ``LOG`` and ``TEXT`` events as ``time LEVEL [scope] logger: message``.

    Args:
        name: bus-wide handler name (robo-goggles' default, ``"goggles.console"``).
        level: minimum level shown.
        path_style: how the caller's file is shown: ``"relative"`` to ``project_root`` (a file
            outside it stays absolute) or ``"absolute"``.
        project_root: the directory ``"relative"`` paths start from; default the current
            directory, resolved here at construction (the host may run elsewhere).
        stream: ``"stderr"`` (default, like stdlib logging) or ``"stdout"``.
        color: ``None`` colours only when the stream is a tty; ``True``/``False`` force it.
        show_caller: append ``(file:line)`` of the call that logged. ``None`` (default) shows
            it when ``path_style`` or ``project_root`` was passed, which is what asking for a
            path style means; robo-goggles prints the caller on every line.

    Raises:
        ConfigurationError: an unknown ``stream`` or ``path_style``, or a ``project_root`` that is
            not a path.
    """

    capabilities: ClassVar[frozenset[Kind]] = frozenset({Kind.LOG, Kind.TEXT})
    default_name: ClassVar[str] = "goggles.console"
    name = default_name

    def __init__(
        self,
        name: str = default_name,
        level: int = logging.NOTSET,
        *,
        path_style: str | None = None,
        project_root: str | os.PathLike[str] | None = None,
        stream: str = "stderr",
        color: bool | None = None,
        show_caller: bool | None = None,
    ) -> None:
        super().__init__(name=name, level=level)
        if stream not in _STREAMS:
            msg = f"stream must be one of {_STREAMS!r} (got {stream!r})."
            raise ConfigurationError(msg, key="stream", value=stream)
        if path_style is not None and path_style not in _PATH_STYLES:
            msg = f"path_style must be one of {_PATH_STYLES!r} (got {path_style!r})."
            raise ConfigurationError(msg, key="path_style", value=path_style)
        if project_root is not None and not isinstance(project_root, (str, os.PathLike)):
            msg = f"project_root must be a str or os.PathLike (got {project_root!r})."
            raise ConfigurationError(msg, key="project_root", value=project_root)
        if show_caller is None:
            show_caller = path_style is not None or project_root is not None
        self.stream = stream
        self.color = color
        self.show_caller = bool(show_caller)
        self.path_style = path_style or "relative"
        self.project_root = os.path.abspath(os.fspath(project_root or os.getcwd()))

    def config(self) -> dict[str, Any]:
        return {
            **super().config(),
            "path_style": self.path_style,
            "project_root": self.project_root,
            "stream": self.stream,
            "color": self.color,
            "show_caller": self.show_caller,
        }

    def caller_path(self, filepath: str) -> str:
        """``filepath`` as ``path_style`` shows it (relative to ``project_root`` when inside it)."""
        if self.path_style == "absolute" or not os.path.isabs(filepath):
            return filepath
        relative = os.path.relpath(filepath, self.project_root)
        return filepath if relative.startswith(os.pardir) else relative

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
            line += f" ({self.caller_path(event.filepath)}:{event.lineno})"
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
