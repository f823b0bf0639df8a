"""``TextLogger``: text logging with stdlib-style ``%``-args, routed by scope (``GogglesLogger`` adds data).

The hot path (a level check, building one row, one ``put_row``) allocates little and
validates only what it must: bad input raises here, at the call, while it can still be fixed.
Steps are tracked per ``(scope, metric name)``: each metric has its own counter, so ``eval/acc``
at step 50 after ``train/loss`` at step 100 is normal and kept.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping
from time import time as _now
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from goggles_io._api.state import STATE, get_settings, get_transport
from goggles_io._bus.transport import check_scope
from goggles_io._event import validate as v
from goggles_io._event.records import Kind
from goggles_io._event.rows import EVENT_OVERHEAD_BYTES

__all__ = ["TextLogger"]

_L = TypeVar("_L", bound="TextLogger")
_UNBOUND: Mapping[str, Any] = MappingProxyType({})

DEBUG, INFO, WARNING, ERROR, CRITICAL = 10, 20, 30, 40, 50
_LOG = Kind.LOG.value


def _caller(depth: int) -> tuple[str | None, int | None]:
    if not (STATE.settings or get_settings()).caller_info:
        return None, None
    frame = sys._getframe(depth + 1)
    return frame.f_code.co_filename, frame.f_lineno


class TextLogger:
    """Text logging with stdlib-style ``%``-args and ``exc_info``; routed by ``scope``."""

    __slots__ = ("_bound", "level", "name", "scope")

    def __init__(
        self, name: str, scope: str = "global", level: int = 0, bound: Mapping[str, Any] = _UNBOUND
    ) -> None:
        self.name = name
        self.scope = scope
        self.level = level
        self._bound = dict(bound)

    def bind(self: _L, *, scope: str | None = None, **fields: Any) -> _L:
        """Return a new logger with extra bound fields (and maybe another scope).

        The receiver is never changed; without ``scope`` the new logger keeps the current one.
        """
        new_scope = self.scope if scope is None else check_scope(scope)
        return type(self)(self.name, new_scope, self.level, {**self._bound, **fields})

    def get_bound(self) -> dict[str, Any]:
        """Return a copy of the bound fields."""
        return dict(self._bound)

    def set_level(self, level: int | str) -> None:
        """Change this logger's minimum level."""
        self.level = v.check_level(level)

    def is_enabled_for(self, level: int) -> bool:
        """Return whether a message at ``level`` would be emitted."""
        return level >= self.level

    def _log(
        self,
        level: int,
        msg: object,
        args: tuple[Any, ...],
        exc_info: Any,
        extra: Mapping[str, Any] | None,
        step: int | None = None,
        time: float | None = None,
        async_mode: bool | None = None,
        fields: Mapping[str, Any] | None = None,
        caller: tuple[str | None, int | None] | None = None,
    ) -> None:
        if args:
            try:
                if len(args) == 1 and isinstance(args[0], Mapping) and args[0]:
                    text = str(msg) % args[0]
                else:
                    text = str(msg) % args
            except (TypeError, ValueError, KeyError) as exc:
                text = f"{msg!r} % {args!r} (formatting failed: {exc})"
        else:
            text = msg if type(msg) is str else str(msg)
        ext: dict[str, Any] = {"bound": self._bound} if self._bound else {}
        if extra:
            ext.update(extra)
        if fields:
            ext.update(fields)
        if exc_info:
            ext["exc_text"] = _format_exc(exc_info)
        if step is not None and (type(step) is not int or step < 0):
            step = v.check_step(step)
        if caller is not None:
            filepath, lineno = caller
        elif (STATE.settings or get_settings()).caller_info:
            frame = sys._getframe(2)
            filepath, lineno = frame.f_code.co_filename, frame.f_lineno
        else:
            filepath = lineno = None
        transport = STATE.transport or get_transport()
        when = None if time is None else v.check_time(time)
        # A row in rows.py's slot order (no Event at the log call: ADR 0071).
        transport.put_row(
            (_LOG, self.scope, text, level, step, _now(), self.name, STATE.pid,
             filepath, lineno, ext or None, when, None, "", 0),
            EVENT_OVERHEAD_BYTES + len(text),
        )  # fmt: skip
        if async_mode is False:
            transport.flush(None)

    def log(
        self,
        level: int | str,
        msg: object,
        /,
        *args: Any,
        exc_info: Any = None,
        extra: Mapping[str, Any] | None = None,
        step: int | None = None,
        time: float | None = None,
        async_mode: bool | None = None,
        **fields: Any,
    ) -> None:
        """Log ``msg % args`` at ``level`` (an int or a level name).

        ``step``/``time`` tag the message (``time`` is robo-goggles' :attr:`Event.time`); ``async_mode=False`` waits until the handlers took it
        (robo-goggles' per-call switch); further keyword fields are merged into ``extra``.
        """
        level = v.check_level(level)
        if level >= self.level:
            self._log(level, msg, args, exc_info, extra, step, time, async_mode, fields)

    if TYPE_CHECKING:  # made from _LEVEL_METHODS below; declared here for type checkers
        debug: _LevelCall
        info: _LevelCall
        warning: _LevelCall
        error: _LevelCall
        critical: _LevelCall
        exception: _LevelCall

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, scope={self.scope!r})"


class _LevelCall(Protocol):
    """The signature of ``debug`` ... ``exception``: :meth:`TextLogger.log` without the level."""

    def __call__(
        self,
        msg: object,
        *args: Any,
        exc_info: Any = ...,
        extra: Mapping[str, Any] | None = None,
        step: int | None = None,
        time: float | None = None,
        async_mode: bool | None = None,
        **fields: Any,
    ) -> None: ...


# name, level, whether the current exception's traceback is attached by default, what it says.
_LEVEL_METHODS = (
    ("debug", DEBUG, None, "Log at DEBUG (keywords as in :meth:`log`)."),
    ("info", INFO, None, "Log at INFO (keywords as in :meth:`log`)."),
    ("warning", WARNING, None, "Log at WARNING (keywords as in :meth:`log`)."),
    ("error", ERROR, None, "Log at ERROR (keywords as in :meth:`log`)."),
    ("critical", CRITICAL, None, "Log at CRITICAL (keywords as in :meth:`log`)."),
    (
        "exception",
        ERROR,
        True,
        "Log at ERROR with the current exception's traceback (call from ``except``).",
    ),
)


def _level_method(name: str, level: int, exc_default: Any, doc: str) -> Any:
    """One level method: a level check, then :meth:`TextLogger._log` (one frame, as hand-written)."""

    def method(
        self: TextLogger,
        msg: object,
        *args: Any,
        exc_info: Any = exc_default,
        extra: Mapping[str, Any] | None = None,
        step: int | None = None,
        time: float | None = None,
        async_mode: bool | None = None,
        **fields: Any,
    ) -> None:
        if level >= self.level:
            self._log(level, msg, args, exc_info, extra, step, time, async_mode, fields)

    method.__name__ = name
    method.__qualname__ = f"TextLogger.{name}"
    method.__doc__ = doc
    return method


for _name, _level, _exc, _doc in _LEVEL_METHODS:
    setattr(TextLogger, _name, _level_method(_name, _level, _exc, _doc))


def _format_exc(exc_info: Any) -> str:
    if isinstance(exc_info, BaseException):
        exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
    elif not isinstance(exc_info, tuple):
        exc_info = sys.exc_info()
    if exc_info[0] is None:
        return ""
    return "".join(traceback.format_exception(*exc_info))
