"""Decorators: :func:`timeit` logs a call's duration, :func:`trace_on_error` its traceback.

Both record the decorated function's own file and line (not the wrapper's), so the handler
shows where the timed code lives.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from goggles_io._api.loggers import TextLogger
from goggles_io._event import validate as v

__all__ = ["timeit", "trace_on_error"]

F = TypeVar("F", bound=Callable[..., Any])
_MAX_ARG_REPR = 200


def _short(value: object) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<unrepresentable {type(value).__name__}: {exc!r}>"
    return text if len(text) <= _MAX_ARG_REPR else text[: _MAX_ARG_REPR - 3] + "..."


def _where(func: Callable[..., Any]) -> tuple[str | None, int | None]:
    code = getattr(inspect.unwrap(func), "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else (None, None)


def timeit(
    severity: int | str = logging.INFO,
    name: str | None = None,
    scope: str = "global",
) -> Callable[[F], F]:
    """Log ``"<name> took <ms> ms"`` at ``severity`` after each call of the decorated function.

    The measurement uses ``perf_counter``; the duration in seconds is also in
    ``extra["duration_s"]`` for handlers that want the number.
    """
    level = v.check_level(severity, "severity")

    def decorate(func: F) -> F:
        label = name or func.__qualname__
        logger = TextLogger(func.__module__, scope)
        where = _where(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                logger._log(
                    level,
                    "%s took %.3f ms",
                    (label, elapsed * 1e3),
                    None,
                    {"duration_s": elapsed, "function": label},
                    caller=where,
                )

        return wrapper  # type: ignore[return-value]

    return decorate


def trace_on_error(
    scope: str = "global", *, severity: int | str = logging.ERROR
) -> Callable[[F], F]:
    """On an exception, log the full traceback and the call's arguments, then re-raise.

    ``scope`` comes first, as in robo-goggles (``@trace_on_error("train")``).
    """
    level = v.check_level(severity, "severity")

    def decorate(func: F) -> F:
        logger = TextLogger(func.__module__, scope)
        where = _where(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                shown = [_short(a) for a in args] + [f"{k}={_short(x)}" for k, x in kwargs.items()]
                logger._log(
                    level,
                    "%s(%s) raised %s",
                    (func.__qualname__, ", ".join(shown), type(exc).__name__),
                    exc,
                    {
                        "args": [_short(a) for a in args],
                        "kwargs": {k: _short(x) for k, x in kwargs.items()},
                    },
                    caller=where,
                )
                raise

        return wrapper  # type: ignore[return-value]

    return decorate
