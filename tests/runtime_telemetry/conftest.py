"""Isolation for runtime_telemetry tests: each test leaves stdlib logging as it found it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from runtime_telemetry import Subscriber

_ROOTS = ("telemetry", "snapshots")


def _telemetry_loggers() -> dict[str, logging.Logger]:
    names = [
        name
        for name in logging.root.manager.loggerDict
        if name in _ROOTS or name.startswith(("telemetry.", "snapshots."))
    ]
    return {name: logging.getLogger(name) for name in names}


@pytest.fixture(autouse=True)
def _restore_logging_state() -> Iterator[None]:
    """Restore levels, handlers, propagation and disabled flags of telemetry.* and snapshots.*."""
    saved = {
        name: (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for name, logger in _telemetry_loggers().items()
    }
    yield
    for name, logger in _telemetry_loggers().items():
        level, handlers, propagate, disabled = saved.get(name, (logging.NOTSET, [], True, False))
        for handler in logger.handlers:
            if handler not in handlers and isinstance(handler, Subscriber):
                handler.close()  # also stops a ThreadedSubscriber's worker
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
        logger.disabled = disabled
