"""Restore the ``telemetry.*`` / ``snapshots.*`` loggers after a test: shared by the conftests."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from runtime_telemetry import Subscriber

__all__ = ["restored_telemetry_loggers"]

_ROOTS = ("telemetry", "snapshots")


def _telemetry_loggers() -> dict[str, logging.Logger]:
    names = [
        name
        for name in logging.root.manager.loggerDict
        if name in _ROOTS or name.startswith(("telemetry.", "snapshots."))
    ]
    return {name: logging.getLogger(name) for name in names}


@contextlib.contextmanager
def restored_telemetry_loggers() -> Iterator[None]:
    """Put back levels, handlers, propagation and disabled flags; close subscribers left attached."""
    saved = {
        name: (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for name, logger in _telemetry_loggers().items()
    }
    try:
        yield
    finally:
        for name, logger in _telemetry_loggers().items():
            level, handlers, propagate, disabled = saved.get(
                name, (logging.NOTSET, [], True, False)
            )
            for handler in logger.handlers:
                if handler not in handlers and isinstance(handler, Subscriber):
                    handler.close()  # also stops a ThreadedSubscriber's worker
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate = propagate
            logger.disabled = disabled
